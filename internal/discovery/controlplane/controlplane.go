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

// Package controlplane wires discovery into `serve controller`: the CA
// Secret source, the bootstrap server (every replica), the snapshot stream
// server (every replica; only the leader serves) and the leader pod label.
package controlplane

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/discovery/bootstrap"
	"github.com/coxswain-go/coxswain/internal/discovery/leaderlabel"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
)

// Flags are the discovery flags of `serve controller`.
type Flags struct {
	StreamAddr                string
	BootstrapAddr             string
	TrustDomain               string
	CAMode                    string
	CAReloadInterval          time.Duration
	SVIDTTL                   time.Duration
	SharedProxyServiceAccount string
	ControllerServiceAccount  string
}

// AddFlags registers the flags with their defaults.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.StreamAddr, "discovery-bind-address", names.BindAddress(names.DiscoveryStreamPort),
		"Address of the discovery stream (mTLS; only the leader serves).")
	fs.StringVar(&f.BootstrapAddr, "discovery-bootstrap-bind-address", names.BindAddress(names.DiscoveryBootstrapPort),
		"Address of SVID bootstrap (server-auth TLS; every replica).")
	fs.StringVar(&f.TrustDomain, "discovery-trust-domain", discovery.DefaultTrustDomain, "SPIFFE trust domain of issued SVIDs.")
	fs.StringVar(&f.CAMode, "discovery-ca-mode", string(identity.ModeAuto),
		"auto: create the CA Secret "+names.CASecretName+" if absent (first replica wins); external: load it, hot-reloaded, and serve nothing while it is absent.")
	fs.DurationVar(&f.CAReloadInterval, "discovery-ca-reload-interval", 10*time.Second, "How often the CA Secret is re-read.")
	fs.DurationVar(&f.SVIDTTL, "discovery-svid-ttl", identity.DefaultSVIDTTL, "Lifetime of issued SVIDs; proxies renew at half of it.")
	fs.StringVar(&f.SharedProxyServiceAccount, "discovery-shared-proxy-service-account", names.SharedProxyServiceAccount,
		"ServiceAccount (in the controller's namespace) of the shared proxies.")
	fs.StringVar(&f.ControllerServiceAccount, "discovery-controller-service-account", names.ControllerServiceAccount,
		"ServiceAccount of the controller, named in its own SVID.")
}

// Options are what the controller supplies besides the flags.
type Options struct {
	// Namespace is the install namespace (CA Secret, trust ConfigMap,
	// shared proxy ServiceAccount, controller identity).
	Namespace string
	// GatewayServiceAccount returns the ServiceAccount a dedicated
	// Gateway's proxies must present ({gateway}-{gatewayclass}), ok=false
	// when the Gateway is not dedicated.
	GatewayServiceAccount func(namespace, name string) (serviceAccount string, ok bool)
}

// AddToManager adds the discovery runnables to mgr and returns the stream
// server, whose Publish the rebuild loop calls and whose GatewayDataPlane
// and DataPlaneChanges the status writer reads. The leader label is managed
// when POD_NAME and POD_NAMESPACE are set.
func AddToManager(mgr manager.Manager, f Flags, o Options) (*discovery.Server, *identity.CA, error) {
	if o.Namespace == "" {
		return nil, nil, errors.New("discovery needs the install namespace")
	}
	mode, td, err := f.parse()
	if err != nil {
		return nil, nil, err
	}
	log := ctrl.Log.WithName("discovery")
	ca := identity.NewCA(td)
	src := &identity.SecretSource{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Namespace: o.Namespace, Name: names.CASecretName, Mode: mode, CA: ca,
		TrustConfigMap: names.TrustBundleConfigMapName, Interval: f.CAReloadInterval, Log: log.WithName("ca"),
	}
	serverID, err := discovery.ServiceAccountID(td, o.Namespace, f.ControllerServiceAccount)
	if err != nil {
		return nil, nil, err
	}
	serving, err := identity.NewServingSVID(ca, serverID, f.SVIDTTL)
	if err != nil {
		return nil, nil, err
	}
	authz := &discovery.Authorizer{
		SharedPool:            discovery.ServiceAccounts(o.Namespace + "/" + f.SharedProxyServiceAccount),
		GatewayServiceAccount: o.GatewayServiceAccount,
	}
	boot, err := newBootstrapServer(mgr, f, o.Namespace, ca, serving, authz, log.WithName("bootstrap"))
	if err != nil {
		return nil, nil, err
	}
	srv, err := newStreamServer(mgr, f, td, ca, serving, authz, log.WithName("stream"))
	if err != nil {
		return nil, nil, err
	}
	for _, r := range []manager.Runnable{src, boot, srv} {
		if err := mgr.Add(r); err != nil {
			return nil, nil, err
		}
	}
	if err := addLeaderLabel(mgr, log.WithName("leader-label")); err != nil {
		return nil, nil, err
	}
	return srv, ca, nil
}

// parse checks the CA mode and the trust domain.
func (f Flags) parse() (identity.Mode, spiffeid.TrustDomain, error) {
	mode := identity.Mode(f.CAMode)
	if mode != identity.ModeAuto && mode != identity.ModeExternal {
		return "", spiffeid.TrustDomain{}, fmt.Errorf("--discovery-ca-mode must be auto or external, not %q", f.CAMode)
	}
	td, err := spiffeid.TrustDomainFromString(f.TrustDomain)
	if err != nil {
		return "", spiffeid.TrustDomain{}, fmt.Errorf("--discovery-trust-domain: %w", err)
	}
	return mode, td, nil
}

// newBootstrapServer is the every-replica SVID bootstrap. Its refusals are
// recorded as Events about this pod when POD_NAME and POD_NAMESPACE are
// set, else about the CA Secret (or about the ServiceAccount a token named).
func newBootstrapServer(mgr manager.Manager, f Flags, namespace string, ca *identity.CA, serving *identity.ServingSVID,
	authz *discovery.Authorizer, log logr.Logger) (*bootstrap.Server, error) {
	regarding := &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: names.CASecretName}
	if pod, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"); pod != "" && ns != "" {
		regarding = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: pod}
	}
	return bootstrap.NewServer(bootstrap.Options{
		Addr:                 f.BootstrapAddr,
		CA:                   ca,
		SVID:                 serving,
		Reviewer:             &identity.TokenReviewer{Client: mgr.GetClient(), Audience: names.TokenAudience},
		Authorizer:           authz,
		TTL:                  f.SVIDTTL,
		UpstreamEndpoint:     names.DiscoveryEndpoint(namespace),
		ServerServiceAccount: f.ControllerServiceAccount,
		Recorder:             mgr.GetEventRecorder(names.EventSource),
		Regarding:            regarding,
		Registerer:           ctrlmetrics.Registry,
		Log:                  log,
	})
}

// newStreamServer is the snapshot stream; every replica runs it and only
// the elected leader serves streams.
func newStreamServer(mgr manager.Manager, f Flags, td spiffeid.TrustDomain, ca *identity.CA, serving *identity.ServingSVID,
	authz *discovery.Authorizer, log logr.Logger) (*discovery.Server, error) {
	elected := mgr.Elected()
	return discovery.NewServer(discovery.ServerOptions{
		Addr:        f.StreamAddr,
		TrustDomain: td,
		SVID:        serving,
		Bundle:      ca,
		IsLeader: func() bool {
			select {
			case <-elected:
				return true
			default:
				return false
			}
		},
		Authorizer: authz,
		Registerer: ctrlmetrics.Registry,
		Log:        log,
	})
}

// addLeaderLabel manages the leader pod label when POD_NAME is set.
func addLeaderLabel(mgr manager.Manager, log logr.Logger) error {
	if os.Getenv("POD_NAME") == "" {
		return nil
	}
	l, err := leaderlabel.FromEnv(mgr.GetClient(), log)
	if err != nil {
		return err
	}
	return mgr.Add(l)
}
