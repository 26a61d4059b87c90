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

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

// The local-cluster end-to-end tests: Coxswain installed from
// config/default into the container-free local cluster (docs/localcluster.md),
// the controller and every proxy running as pods, traffic sent from the test
// process to the addresses Coxswain publishes. One cluster serves every
// subtest; see docs/e2e.md.

const (
	e2eNS        = "e2e"
	installNS    = "coxswain-system"
	echoImage    = "registry.k8s.io/gateway-api/echo-basic:v1.5.1"
	sharedClass  = "coxswain"
	controllerLb = "app.kubernetes.io/component=controller"
)

// lcEnv is the installed cluster every subtest uses.
type lcEnv struct {
	c      *localcluster.Cluster
	cl     client.Client
	ctx    context.Context
	caPool *x509.CertPool // signs the TLS Secrets cert-a and cert-b
	// coxswain is the binary the cluster runs (for CLI checks).
	coxswain string
}

// echoBackend renders an echo-basic Deployment and Service in e2e (port
// 80 -> 3000); echo-basic answers with its pod name.
func echoBackend(name string, replicas int) string {
	return echoBackendIn(e2eNS, name, 80, replicas)
}

// echoBackendIn is echoBackend in namespace ns, its Service on port.
func echoBackendIn(ns, name string, port, replicas int) string {
	return strings.NewReplacer("{{NAME}}", name, "{{NS}}", ns, "{{IMAGE}}", echoImage, "{{REPLICAS}}", fmt.Sprint(replicas), "{{PORT}}", fmt.Sprint(port)).Replace(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{NAME}}, namespace: {{NS}}, labels: {app: {{NAME}}}}
spec:
  replicas: {{REPLICAS}}
  selector: {matchLabels: {app: {{NAME}}}}
  template:
    metadata: {labels: {app: {{NAME}}}}
    spec:
      containers:
      - name: echo
        image: {{IMAGE}}
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: SERVICE_NAME, value: {{NAME}}}
---
apiVersion: v1
kind: Service
metadata: {name: {{NAME}}, namespace: {{NS}}}
spec:
  selector: {app: {{NAME}}}
  ports: [{name: http, port: {{PORT}}, targetPort: 3000}]
---
`)
}

// lcBinaries returns the echo-basic and coxswain binaries: from
// $LOCALCLUSTER_ECHO_BASIC / $LOCALCLUSTER_COXSWAIN, else built here.
func lcBinaries(t *testing.T) (echo, coxswain string) {
	t.Helper()
	echo, coxswain = os.Getenv("LOCALCLUSTER_ECHO_BASIC"), os.Getenv("LOCALCLUSTER_COXSWAIN")
	dir := t.TempDir()
	if echo == "" {
		echo = filepath.Join(dir, "echo-basic")
		cmd := exec.Command("go", "build", "-o", echo, "sigs.k8s.io/gateway-api/conformance/echo-basic")
		cmd.Dir = filepath.Join(testkit.RepoRoot(), "test", "localcluster", "echobasic")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building echo-basic: %v\n%s", err, out)
		}
	}
	if coxswain == "" {
		coxswain = buildBinary(t)
	}
	return echo, coxswain
}

// gatewayAPICRDs is the standard-channel CRD directory of the gateway-api
// module (or $GATEWAY_API_CRDS).
func gatewayAPICRDs(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("GATEWAY_API_CRDS"); d != "" {
		return d
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = testkit.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list sigs.k8s.io/gateway-api: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
}

func TestLocalCluster(t *testing.T) {
	needsLocalCluster(t)
	began := time.Now()
	echo, coxswain := lcBinaries(t)
	crds := gatewayAPICRDs(t)
	t.Logf("binaries built in %s", time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	e := startLocalCluster(ctx, t, localcluster.Binaries{EchoBasic: echo, Coxswain: coxswain})
	e.coxswain = coxswain
	c := e.c
	started := time.Now()
	// Installed as `make deploy IMG=installedImage` would: the proxies
	// must follow (ProxyImageIsTheInstalledImage).
	if err := c.InstallBaseWithImage(ctx, crds, testkit.RepoRoot(), installedImage); err != nil {
		t.Fatal(err)
	}
	e.enableAdmin(t)
	e.apply(t, `
apiVersion: v1
kind: Namespace
metadata: {name: e2e}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: coxswain}
spec: {controllerName: coxswain-labs.dev/gateway-controller}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: coxswain}
spec: {controller: coxswain-labs.dev/gateway-controller}
---
`+echoBackend("blue", 1)+echoBackend("green", 1))
	e.tlsSecrets(t)
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: e2e}
spec:
  gatewayClassName: coxswain
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - name: https
    protocol: HTTPS
    port: 443
    tls:
      mode: Terminate
      certificateRefs:
      - {kind: Secret, name: cert-a}
      - {kind: Secret, name: cert-b}
`)
	if _, err := c.WaitForPodsReady(ctx, installNS, controllerLb, 1, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"blue", "green"} {
		if _, err := c.WaitForPodsReady(ctx, e2eNS, "app="+app, 1, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	e.waitProgrammed(t, e2eNS, "web", 3*time.Minute)
	t.Logf("cluster up and Coxswain installed in %s", time.Since(started).Round(time.Millisecond))

	// The controller failover runs last: it disturbs the control plane.
	for _, st := range []struct {
		name string
		run  func(*testing.T, *lcEnv)
	}{
		{"WeightedBackends", testWeightedBackends},
		{"Ingress", testIngress},
		{"TLSSNI", testTLSSNI},
		{"L4Routes", testL4Routes},
		{"ProxyImageIsTheInstalledImage", testProxyImageIsTheInstalledImage},
		{"DedicatedProgrammedAfterBindAndAck", testDedicatedProgrammed},
		{"SharedProgrammedAfterBindAndAck", testSharedProgrammedAfterBindAndAck},
		{"HitlessSharedRollout", testHitlessSharedRollout},
		{"HitlessDedicatedRollout", testHitlessDedicatedRollout},
		{"HitlessSharedScaleDown", testHitlessSharedScaleDown},
		{"PolicyJWT", testPolicyJWT},
		{"PolicyExtAuth", testPolicyExtAuth},
		{"PolicyGlobalRateLimit", testPolicyGlobalRateLimit},
		{"PolicyOutlierDetection", testPolicyOutlierDetection},
		{"PolicyRetryRollout", testPolicyRetryRollout},
		{"PolicyProxyProtocol", testPolicyProxyProtocol},
		{"Dashboard", testDashboard},
		{"Monitoring", testMonitoring},
		{"ControllerKilled", testControllerKilled},
	} {
		t0 := time.Now()
		t.Run(st.name, func(t *testing.T) { st.run(t, e) })
		t.Logf("%s took %s", st.name, time.Since(t0).Round(time.Millisecond))
	}
	t.Logf("whole run %s (from cluster start %s)", time.Since(began).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
}

// needsLocalCluster skips the test unless this machine can run the local
// cluster.
func needsLocalCluster(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the local-cluster e2e tests need root (network namespaces, a bridge, bind mounts); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: iproute2's `ip` is missing (apt-get install -y iproute2, or `make localcluster-deps`)")
	}
}

// startLocalCluster starts a local cluster that runs bins and stops it
// when the test ends; its work directory (pod files and every log) is kept
// when the test failed. It waits up to $LOCALCLUSTER_LOCK_WAIT (10m) for
// another cluster on this machine to finish.
func startLocalCluster(ctx context.Context, t *testing.T, bins localcluster.Binaries, addToScheme ...func(*runtime.Scheme) error) *lcEnv {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "coxswain-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	lockWait := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("LOCALCLUSTER_LOCK_WAIT")); err == nil {
		lockWait = d
	}
	t0 := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{Dir: dir, Binaries: bins, LockWait: lockWait, Logf: t.Logf})
	if err != nil {
		t.Fatalf("starting the local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("logs kept in %s", c.LogDir())
		} else {
			_ = os.RemoveAll(dir)
		}
	})
	t.Logf("local cluster started in %s (including any wait for another cluster's lock)", time.Since(t0).Round(time.Millisecond))
	scheme := controller.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.New(c.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &lcEnv{c: c, cl: cl, ctx: ctx}
}

// apply server-side applies a YAML stream.
func (e *lcEnv) apply(t testing.TB, yaml string) {
	t.Helper()
	if out, err := e.c.Kubectl(e.ctx, []byte(yaml), "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

func (e *lcEnv) gateway(ns, name string) (*gwv1.Gateway, error) {
	gw := &gwv1.Gateway{}
	return gw, e.cl.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, gw)
}

// waitProgrammed waits for the Gateway to be Programmed with an address and
// returns it.
func (e *lcEnv) waitProgrammed(t testing.TB, ns, name string, timeout time.Duration) *gwv1.Gateway {
	t.Helper()
	var gw *gwv1.Gateway
	testkit.EventuallyExplained(t, timeout, func() string {
		g, err := e.gateway(ns, name)
		if err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(g.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != g.Generation {
			return fmt.Sprintf("Gateway %s/%s not Programmed: %+v", ns, name, c)
		}
		if len(g.Status.Addresses) == 0 {
			return fmt.Sprintf("Gateway %s/%s has no address", ns, name)
		}
		gw = g
		return ""
	})
	return gw
}

// waitRouteAccepted waits until every parent of the HTTPRoute reports
// Accepted=True for its current generation.
func (e *lcEnv) waitRouteAccepted(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		r := &gwv1.HTTPRoute{}
		if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, r); err != nil {
			return err.Error()
		}
		if len(r.Status.Parents) == 0 {
			return fmt.Sprintf("HTTPRoute %s/%s has no parent status", ns, name)
		}
		for _, p := range r.Status.Parents {
			c := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted))
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != r.Generation {
				return fmt.Sprintf("HTTPRoute %s/%s parent %s not Accepted: %+v", ns, name, p.ParentRef.Name, c)
			}
		}
		return ""
	})
}

// gatewayURL is http(s)://<status.addresses[0]>:<port>.
func gatewayURL(gw *gwv1.Gateway, scheme string, port int) string {
	return fmt.Sprintf("%s://%s", scheme, net.JoinHostPort(gw.Status.Addresses[0].Value, fmt.Sprint(port)))
}

// echoReply is what echo-basic answers.
type echoReply struct {
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	Host      string `json:"host"`
}

// lcGet sends one request with the given Host and decodes echo-basic's
// answer; a non-200 status is an error.
func lcGet(hc *http.Client, url, host string) (echoReply, error) {
	var r echoReply
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return r, err
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return r, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET %s (Host %s): status %d", url, host, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("GET %s (Host %s): decoding echo reply: %w", url, host, err)
	}
	return r, nil
}

// podNames lists the names of the pods with label app=<app> in e2e.
func (e *lcEnv) podNames(t testing.TB, app string) map[string]bool {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(e2eNS), client.MatchingLabels{"app": app}); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Name] = true
	}
	return out
}

// waitServes sends requests (bounded) until one answers 200 from service.
func waitServes(t testing.TB, hc *http.Client, url, host, service string, timeout time.Duration) echoReply {
	t.Helper()
	var got echoReply
	testkit.EventuallyExplained(t, timeout, func() string {
		r, err := lcGet(hc, url, host)
		if err != nil {
			return err.Error()
		}
		if r.Service != service {
			return fmt.Sprintf("GET %s (Host %s) reached service %q, want %q", url, host, r.Service, service)
		}
		got = r
		return ""
	})
	return got
}

// deploymentReady reports whether the Deployment has want ready replicas.
func (e *lcEnv) deploymentReady(ns, name string, want int32) string {
	d := &appsv1.Deployment{}
	if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return err.Error()
	}
	if d.Status.ReadyReplicas < want {
		return fmt.Sprintf("Deployment %s/%s: %d/%d ready", ns, name, d.Status.ReadyReplicas, want)
	}
	return ""
}
