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
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// pipeline is the controller binary and a shared proxy binary running
// against envtest, connected only through real discovery.
type pipeline struct {
	c   client.Client
	ctx context.Context
	// addr is the proxy's listener for the Gateway default/web (its
	// internal port on 127.0.0.1).
	addr string
	hc   *http.Client
	// controller and proxy are the two processes; controllerPprof is the
	// controller's --pprof-bind-address.
	controller, proxy *process
	controllerPprof   string
	// controllerMetrics and proxyMetrics are the two processes'
	// --metrics-bind-address.
	controllerMetrics, proxyMetrics string
	// proxyHealth serves the proxy's health endpoints and /debug/pprof/.
	proxyHealth string
	// bin, controllerEnv and controllerArgs start the controller again
	// (restartController).
	bin                           string
	controllerEnv, controllerArgs []string
}

// restartController stops the controller (SIGTERM, clean exit: it
// releases the leader Lease) and returns a func that starts a new one with
// the same flags and ports and returns when it was started.
func (p *pipeline) restartController(t testing.TB) (startAgain func() *process) {
	t.Helper()
	p.controller.stop(t)
	return func() *process {
		t.Helper()
		p.controller = start(t, p.bin, p.controllerEnv, p.controllerArgs...)
		return p.controller
	}
}

// controllerRSS is the resident memory of the controller and the proxy
// processes, from /proc: VmRSS, then how much of it is anonymous (the
// heap, stacks) and mapped from files (the binary), and the peak.
func (p *pipeline) controllerRSS() string {
	return fmt.Sprintf("%s (proxy %s)", rssDetail(p.controller), rssDetail(p.proxy))
}

func rssDetail(pr *process) string {
	return fmt.Sprintf("%s [anon %s, file %s, peak %s]", procStatus(pr, "VmRSS"),
		procStatus(pr, "RssAnon"), procStatus(pr, "RssFile"), procStatus(pr, "VmHWM"))
}

// procStatus is a field of a process's /proc status ("?" when unknown).
func procStatus(pr *process, field string) string {
	if pr == nil || pr.cmd.Process == nil {
		return "?"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pr.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// gatewayProgrammed is the Programmed condition of default/web.
func (p *pipeline) gatewayProgrammed() *metav1.Condition {
	gw := &gwv1.Gateway{}
	if err := p.c.Get(p.ctx, client.ObjectKey{Namespace: "default", Name: "web"}, gw); err != nil {
		return nil
	}
	return meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
}

// redirectRoute is an HTTPRoute on default/web for host that redirects to
// "moved-"+host: it answers without a backend, because EndpointSlices
// cannot point at loopback.
func redirectRoute(name, host string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules: []gwv1.HTTPRouteRule{{Filters: []gwv1.HTTPRouteFilter{{
				Type: gwv1.HTTPRouteFilterRequestRedirect,
				RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
					Hostname: ptr.To(gwv1.PreciseHostname("moved-" + host)), StatusCode: ptr.To(301)},
			}}}},
		}}
}

// get sends GET http://host/path to the proxy and returns the status and
// Location.
func (p *pipeline) get(host, path string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+path, nil)
	req.Host = host
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), nil
}

// startPipeline starts envtest, the controller, a GatewayClass and the
// Gateway default/web, runs beforeProxy, then starts a proxy that holds only
// a token, the trust bundle and the endpoints, and waits until it is ready.
func startPipeline(t testing.TB, beforeProxy func(*pipeline)) *pipeline {
	bin := buildBinary(t)
	cfg, kubeconfigPath := startEnvtest(t)
	dir := t.TempDir()
	c, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{bin: bin, c: c, ctx: context.Background(), hc: &http.Client{Timeout: 2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	ctx := p.ctx
	const ns = "coxswain-system"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SharedPoolName}}))

	streamAddr, bootAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	p.controllerPprof, p.controllerMetrics = testkit.FreeAddr(t), testkit.FreeAddr(t)
	p.controllerEnv = []string{"POD_NAMESPACE=" + ns, "KUBECONFIG="}
	// COXSWAIN_E2E_CONTROLLER_ENV adds variables (space-separated
	// KEY=VALUE) to the controller's environment alone, e.g. GOGC=200 to
	// try a setting of its runtime without changing the apiserver's.
	p.controllerEnv = append(p.controllerEnv, strings.Fields(os.Getenv("COXSWAIN_E2E_CONTROLLER_ENV"))...)
	p.controllerArgs = []string{"serve", "controller", "--kubeconfig", kubeconfigPath}
	p.controllerArgs = append(p.controllerArgs, "--pprof-bind-address", p.controllerPprof,
		"--health-probe-bind-address", testkit.FreeAddr(t), "--metrics-bind-address", p.controllerMetrics,
		"--discovery-bind-address", streamAddr, "--discovery-bootstrap-bind-address", bootAddr,
		"--manage-shared-pool=false")
	p.controller = start(t, bin, p.controllerEnv, p.controllerArgs...)

	must(c.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "coxswain"},
		Spec: gwv1.GatewayClassSpec{ControllerName: "coxswain-labs.dev/gateway-controller"}}))
	must(c.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
			Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}}}))
	if beforeProxy != nil {
		beforeProxy(p)
	}

	// What a proxy pod gets: a projected token and the public bundle.
	cs, err := kubernetes.NewForConfig(cfg)
	must(err)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, names.SharedPoolName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{names.TokenAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	must(err)
	tokenPath := filepath.Join(dir, "token")
	must(os.WriteFile(tokenPath, []byte(tok.Status.Token), 0o600))
	bundlePath := filepath.Join(dir, "ca.crt")
	testkit.EventuallyExplained(t, 60*time.Second, func() string {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.TrustBundleConfigMapName}, cm); err != nil {
			return "trust ConfigMap: " + err.Error()
		}
		if cm.Data["ca.crt"] == "" {
			return "trust ConfigMap has no ca.crt"
		}
		must(os.WriteFile(bundlePath, []byte(cm.Data["ca.crt"]), 0o600))
		return ""
	})
	if beforeProxy != nil {
		if pc := p.gatewayProgrammed(); pc == nil || pc.Status != metav1.ConditionFalse {
			t.Fatalf("Programmed before any proxy bound and acked: %+v", pc)
		}
	}

	proxyHealth := testkit.FreeAddr(t)
	p.proxyHealth, p.proxyMetrics = proxyHealth, testkit.FreeAddr(t)
	p.proxy = start(t, bin, []string{"POD_NAME=shared-proxy-0"},
		"serve", "proxy", "--shared", "--bind-host", "127.0.0.1", "--access-log=false", "--enable-pprof",
		"--health-probe-bind-address", proxyHealth, "--metrics-bind-address", p.proxyMetrics,
		"--discovery-endpoint", "https://"+streamAddr, "--discovery-bootstrap-endpoint", "https://"+bootAddr,
		"--discovery-token-path", tokenPath, "--discovery-trust-bundle", bundlePath,
		"--discovery-controller-namespace", ns)
	testkit.EventuallyExplained(t, 60*time.Second, func() string {
		if code, body, err := httpGet("http://" + proxyHealth + "/readyz"); err != nil || code != http.StatusOK {
			return "proxy not ready: " + body
		}
		return ""
	})
	// The shared pool serves the Gateway on its internal port, read back
	// from the Gateway's VIP Service.
	testkit.EventuallyExplained(t, 30*time.Second, func() string {
		list := &corev1.ServiceList{}
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{names.LabelComponent: names.ComponentSharedVIP}); err != nil {
			return err.Error()
		}
		if len(list.Items) != 1 || len(list.Items[0].Spec.Ports) != 1 {
			return "no VIP Service yet"
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(list.Items[0].Spec.Ports[0].TargetPort.IntVal)))
		return ""
	})
	return p
}

// TestPipeline runs the real controller binary against envtest and a real
// proxy binary that holds only a ServiceAccount token, the public trust
// bundle and the endpoints: an HTTPRoute created in the apiserver must end
// up answering on the proxy, and the Gateway may only turn Programmed after
// the proxy has bound its port and acked.
func TestPipeline(t *testing.T) {
	p := startPipeline(t, func(p *pipeline) {
		if err := p.c.Create(p.ctx, redirectRoute("moved", "www.example.com")); err != nil {
			t.Fatal(err)
		}
		// Before any proxy connects the Gateway is accepted but Pending.
		testkit.EventuallyExplained(t, 60*time.Second, func() string {
			pc := p.gatewayProgrammed()
			if pc == nil || pc.Status != metav1.ConditionFalse || pc.Reason != string(gwv1.GatewayReasonPending) {
				return "Programmed is not False/Pending yet"
			}
			return ""
		})
	})
	testkit.EventuallyExplained(t, 60*time.Second, func() string {
		if pc := p.gatewayProgrammed(); pc == nil || pc.Status != metav1.ConditionTrue {
			return "Gateway not Programmed after the proxy bound and acked"
		}
		return ""
	})
	testkit.EventuallyExplained(t, 30*time.Second, func() string {
		code, loc, err := p.get("www.example.com", "/path")
		if err != nil {
			return err.Error()
		}
		// Port 80 is the scheme's well-known port, so it is omitted.
		if code != http.StatusMovedPermanently || loc != "http://moved-www.example.com/path" {
			return "got " + strconv.Itoa(code) + " Location " + loc
		}
		return ""
	})
	// A host no route claims gets 404.
	if code, _, err := p.get("other.example.com", "/"); err != nil || code != http.StatusNotFound {
		t.Errorf("unrouted host: %d %v, want 404", code, err)
	}
}
