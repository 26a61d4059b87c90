/*
Copyright 2026 The Coxswain Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package cmd

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/coxswain-go/coxswain/internal/admin"
	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/discovery/controlplane"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/pipeline"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/tracing"
)

type controllerOptions struct {
	kubeconfig              string
	healthProbeBindAddress  string
	metricsBindAddress      string
	adminBindAddress        string
	sharedProxyTracing      tracing.Options
	adminCertDir            string
	pprofBindAddress        string
	leaderElect             bool
	leaderElectionNamespace string
	proxyImage              string
	manageSharedPool        bool
	sharedProxyReplicas     int32
	// ingressProxyProtocol and ingressTrustedSources: the Ingress
	// listeners take PROXY protocol headers from these sources only.
	sharedProxyRedis      string
	ingressProxyProtocol  bool
	ingressTrustedSources []string
	discovery             controlplane.Flags
	tracing               tracing.Options
}

func newControllerCommand() *cobra.Command {
	o := controllerOptions{}
	c := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller: the only Kubernetes reader and writer",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(cmd, o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	f.StringVar(&o.healthProbeBindAddress, "health-probe-bind-address", names.BindAddress(names.HealthPort), "Address of the /healthz and /readyz endpoints.")
	f.StringVar(&o.metricsBindAddress, "metrics-bind-address", names.BindAddress(names.MetricsPort), "Address of the /metrics endpoint; 0 disables it.")
	f.StringVar(&o.adminBindAddress, "admin-bind-address", os.Getenv("COXSWAIN_ADMIN_BIND_ADDRESS"),
		"Address of the read-only admin API and dashboard (HTTPS; every request needs a bearer token of a user who may get Gateways), e.g. "+
			names.BindAddress(names.AdminPort)+". Default: $COXSWAIN_ADMIN_BIND_ADDRESS; empty or 0: off.")
	f.StringVar(&o.pprofBindAddress, "pprof-bind-address", "",
		"Address to serve Go's profiles on under /debug/pprof/ (plain HTTP, no authentication: bind it to localhost and use kubectl port-forward), e.g. 127.0.0.1:8082; empty: off.")
	f.StringVar(&o.adminCertDir, "admin-cert-dir", "", "Directory with tls.crt and tls.key for the admin port; empty: a self-signed certificate made at start.")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "Elect one active replica with the Lease "+names.LeaseName+".")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "Namespace of the leader Lease. Default: $POD_NAMESPACE, else "+names.DefaultInstallNamespace+".")
	f.StringVar(&o.proxyImage, "proxy-image", os.Getenv(names.ProxyImageEnv),
		"Image of the proxies the controller provisions (shared pool and dedicated Gateways), unless CoxswainGatewayParameters set one. "+
			"Default: $"+names.ProxyImageEnv+", else the image of the controller's own container (read from its Pod), else "+builtinProxyImage+".")
	f.BoolVar(&o.manageSharedPool, "manage-shared-pool", true, "Apply the shared proxy Deployment, ServiceAccount and Services in the install namespace.")
	f.Int32Var(&o.sharedProxyReplicas, "shared-proxy-replicas", envInt32("COXSWAIN_SHARED_PROXY_REPLICAS", 2),
		"Replicas of the shared proxy Deployment (default from $COXSWAIN_SHARED_PROXY_REPLICAS, else 2).")
	f.StringVar(&o.sharedProxyRedis, "shared-proxy-rate-limit-redis", os.Getenv("COXSWAIN_SHARED_PROXY_RATE_LIMIT_REDIS"),
		"host:port of the Redis the shared proxies count Global RateLimits in (default $COXSWAIN_SHARED_PROXY_RATE_LIMIT_REDIS; empty: none).")
	f.StringVar(&o.sharedProxyTracing.Endpoint, "shared-proxy-tracing-otlp-endpoint", os.Getenv("COXSWAIN_SHARED_PROXY_TRACING_OTLP_ENDPOINT"),
		"host:port of the OTLP/gRPC trace receiver the shared proxies export spans to (default $COXSWAIN_SHARED_PROXY_TRACING_OTLP_ENDPOINT; empty: no tracing). Dedicated proxies take CoxswainGatewayParameters spec.tracing.")
	f.BoolVar(&o.sharedProxyTracing.Insecure, "shared-proxy-tracing-otlp-insecure", os.Getenv("COXSWAIN_SHARED_PROXY_TRACING_OTLP_INSECURE") == "true",
		"Export the shared proxies' spans in plaintext (default $COXSWAIN_SHARED_PROXY_TRACING_OTLP_INSECURE=true).")
	f.Float64Var(&o.sharedProxyTracing.SamplingRatio, "shared-proxy-tracing-sampling-ratio", 1,
		"Share of requests without a sampled parent the shared proxies trace, 0 to 1.")
	f.BoolVar(&o.ingressProxyProtocol, "ingress-accept-proxy-protocol", false,
		"Make the Ingress listeners require a PROXY protocol (v1/v2) header from --ingress-proxy-trusted-sources and refuse other connections.")
	f.StringSliceVar(&o.ingressTrustedSources, "ingress-proxy-trusted-sources", nil,
		"CIDRs (or addresses) of the load balancers that send PROXY protocol headers to the Ingress listeners.")
	o.discovery.AddFlags(f)
	o.tracing.AddFlags(f)
	// The Helm chart sets these through the environment.
	if v := os.Getenv("COXSWAIN_DISCOVERY_CA_MODE"); v != "" {
		_ = f.Set("discovery-ca-mode", v)
		f.Lookup("discovery-ca-mode").DefValue = v
	}
	return c
}

func runController(cmd *cobra.Command, o controllerOptions) error {
	log := ctrl.Log.WithName("controller")
	if r := o.sharedProxyTracing.SamplingRatio; r < 0 || r > 1 {
		return fmt.Errorf("--shared-proxy-tracing-sampling-ratio %v: want a number from 0 to 1", r)
	}
	ingressPP, err := ingressProxyProtocol(o)
	if err != nil {
		return err
	}
	// The rebuild's spans (internal/provider: rebuild, translate;
	// internal/pipeline: publish) go through the global provider.
	tp, stopTracing, err := tracing.New(cmd.Context(), o.tracing, tracing.ServiceController)
	if err != nil {
		return err
	}
	defer tracing.Flush(stopTracing, log)
	tracing.Install(tp, log.WithName("tracing"))
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns := o.leaderElectionNamespace
	if ns == "" {
		ns = os.Getenv("POD_NAMESPACE")
	}
	if ns == "" {
		ns = names.DefaultInstallNamespace
	}

	// Build the Lease lock ourselves, so the status writer knows our
	// identity and can re-check the Lease before every patch.
	lock, err := newLeaseLock(cfg, ns)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                              controller.NewScheme(),
		Cache:                               controller.CacheOptions(ns),
		HealthProbeBindAddress:              o.healthProbeBindAddress,
		Metrics:                             metricsserver.Options{BindAddress: o.metricsBindAddress},
		PprofBindAddress:                    o.pprofBindAddress,
		LeaderElection:                      o.leaderElect,
		LeaderElectionID:                    names.LeaseName,
		LeaderElectionNamespace:             ns,
		LeaderElectionResourceLockInterface: lock,
		// Release the Lease on a clean shutdown, so a standby takes over at
		// once instead of waiting out the Lease TTL.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	proxyImage, err := controllerProxyImage(cmd.Context(), o.proxyImage, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	// Discovery: the CA, the bootstrap server (every replica) and the
	// leader-only snapshot stream.
	disc, _, err := controlplane.AddToManager(mgr, o.discovery, controlplane.Options{
		Namespace:             ns,
		GatewayServiceAccount: controller.DedicatedServiceAccountLookup(mgr.GetClient()),
	})
	if err != nil {
		return fmt.Errorf("setting up discovery: %w", err)
	}
	routing := pipeline.Options{
		InstallNamespace:          ns,
		ManageSharedPool:          o.manageSharedPool,
		ProxyImage:                proxyImage,
		SharedProxyReplicas:       o.sharedProxyReplicas,
		Discovery:                 disc,
		IngressProxyProtocol:      ingressPP,
		SharedProxyRateLimitRedis: o.sharedProxyRedis,
		SharedProxyTracing: provision.SharedPoolOptions{
			TracingEndpoint: o.sharedProxyTracing.Endpoint, TracingInsecure: o.sharedProxyTracing.Insecure,
			TracingSamplingRatio: strconv.FormatFloat(o.sharedProxyTracing.SamplingRatio, 'g', -1, 64),
		},
	}
	if o.leaderElect {
		leader := writer.NewLeaseWatch(lock, nil)
		if err := mgr.Add(leader); err != nil {
			return fmt.Errorf("adding the Lease watch: %w", err)
		}
		routing.Leader = leader.Check
	}
	if err := addAdmin(mgr, cfg, o, disc, &routing); err != nil {
		return err
	}
	if _, _, err := pipeline.AddToManager(mgr, routing); err != nil {
		return err
	}
	dedicated := &controller.DedicatedReconciler{
		Client:           mgr.GetClient(),
		Recorder:         mgr.GetEventRecorder(names.EventSource),
		InstallNamespace: ns,
		DefaultImage:     proxyImage,
	}
	if err := dedicated.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the dedicated proxy reconciler: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	log.Info("starting controller", "leaderElection", o.leaderElect, "leaseNamespace", ns, "lease", names.LeaseName)
	return mgr.Start(cmd.Context())
}

// envInt32 reads a flag default from the environment; unset or invalid
// values give def.
func envInt32(name string, def int32) int32 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 32); err == nil {
		return int32(v)
	}
	return def
}

// newLeaseLock returns the Lease lock with a unique identity
// (hostname_uuid), as controller-runtime would build it.
func newLeaseLock(cfg *rest.Config, ns string) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("hostname: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, names.LeaseName,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: host + "_" + uuid.NewString()})
}

// ingressProxyProtocol validates --ingress-accept-proxy-protocol and
// --ingress-proxy-trusted-sources: the trusted sources when PROXY protocol
// is on, nil when it is off.
func ingressProxyProtocol(o controllerOptions) ([]string, error) {
	if !o.ingressProxyProtocol {
		if len(o.ingressTrustedSources) > 0 {
			return nil, errors.New("--ingress-proxy-trusted-sources needs --ingress-accept-proxy-protocol")
		}
		return nil, nil
	}
	if len(o.ingressTrustedSources) == 0 {
		return nil, errors.New("--ingress-accept-proxy-protocol needs --ingress-proxy-trusted-sources")
	}
	for _, s := range o.ingressTrustedSources {
		if _, err := netip.ParsePrefix(s); err == nil {
			continue
		}
		if _, err := netip.ParseAddr(s); err != nil {
			return nil, fmt.Errorf("--ingress-proxy-trusted-sources: %q is not a CIDR or an IP address", s)
		}
	}
	return o.ingressTrustedSources, nil
}

// addAdmin adds the admin API and dashboard when --admin-bind-address
// asks for them: a Model fed by the pipeline, read with TokenReview and
// SubjectAccessReview.
func addAdmin(mgr ctrl.Manager, cfg *rest.Config, o controllerOptions, disc *discovery.Server, routing *pipeline.Options) error {
	if o.adminBindAddress == "" || o.adminBindAddress == "0" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("admin API client: %w", err)
	}
	elected := mgr.Elected()
	model := &admin.Model{Discovery: disc, IsLeader: func() bool {
		select {
		case <-elected:
			return true
		default:
			return false
		}
	}}
	routing.Sinks = append(routing.Sinks, model)
	srv, err := admin.NewServer(admin.Options{
		Addr: o.adminBindAddress, CertDir: o.adminCertDir, Model: model,
		Auth: &admin.ReviewAuthorizer{Client: cs}, Log: ctrl.Log.WithName("admin"),
	})
	if err != nil {
		return err
	}
	return mgr.Add(srv)
}
