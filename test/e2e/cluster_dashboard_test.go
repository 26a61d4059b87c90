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
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

// The controller's dashboard in a real headless Chromium (Debian's
// chromium, driven with chromedp): every page loads without a console
// error, the topology draws config/samples, a broken route shows on the
// problems page within seconds, and a route change redraws the topology
// without a reload. Screenshots go to $COXSWAIN_E2E_ARTIFACTS (default
// bin/e2e-artifacts).

// adminEnv is the environment variable TestLocalCluster sets on the
// controller to open its admin port.
const adminEnv = "COXSWAIN_ADMIN_BIND_ADDRESS"

// dashboardReaderYAML is the reader the dashboard signs in with, and a
// ServiceAccount without any right.
const dashboardReaderYAML = localcluster.DashboardReaderYAML + `
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: dashboard-nobody, namespace: coxswain-system}
`

// enableAdmin opens the controller's admin port (off by default), as an
// operator would: `kubectl set env`.
func (e *lcEnv) enableAdmin(t *testing.T) {
	t.Helper()
	e.kubectl(t, "set", "env", "-n", installNS, "deployment/"+names.ControllerDeploymentName, fmt.Sprintf("%s=:%d", adminEnv, names.AdminPort))
}

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium: apt-get install -y chromium (.ci/run and `make localcluster-deps` install it)")
	return ""
}

func testDashboard(t *testing.T, e *lcEnv) {
	browser := chromiumPath(t)
	repo := testkit.RepoRoot()
	e.apply(t, dashboardReaderYAML)
	token := e.serviceAccountToken(t, installNS, "dashboard-reader")
	nobody := e.serviceAccountToken(t, installNS, "dashboard-nobody")
	base := e.adminURL(t, token)
	hc := insecureClient()
	if code := adminGet(t, hc, base+"/api/v1/fleet", nobody, nil); code != http.StatusForbidden {
		t.Errorf("a token that may not get Gateways: %d, want 403", code)
	}
	if code := adminGet(t, hc, base+"/api/v1/fleet", "", nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}

	// config/samples' GatewayClass and IngressClass "coxswain" are the
	// ones every other subtest uses: the cleanup keeps them.
	e.installSamples(t, repo)
	t.Cleanup(func() { e.removeSamplesKeepingClasses(t, repo) })

	ctx, cancel := chromedp.NewExecAllocator(e.ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 1000))...)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium (%s): %v", browser, err)
	}
	// Every console error, uncaught exception and browser log error of
	// the tab, read in order while the test drives it.
	var mu sync.Mutex
	var consoleErrors []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The local cluster adds a veth for every new pod; Chromium
			// then aborts loads in flight with ERR_NETWORK_CHANGED, an
			// event of this host, not an error of the page (the page
			// polls again, and sign-in below retries).
			if strings.Contains(m.Text, "net::ERR_NETWORK_CHANGED") {
				continue
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				consoleErrors = append(consoleErrors, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.Text))
				mu.Unlock()
			}
		}
	}()
	errorsSoFar := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(consoleErrors, "\n")
	}
	do := func(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		c, done := context.WithTimeout(ctx, timeout)
		defer done()
		if err := chromedp.Do(c, steps...); err != nil {
			t.Fatalf("%s: %v (console errors: %s)", what, err, errorsSoFar())
		}
	}
	eval := func(what, js string) []byte {
		t.Helper()
		c, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		out, err := chromedp.Run(c, chromedp.Evaluate[[]byte](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return out
	}
	artifacts := os.Getenv("COXSWAIN_E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(repo, "bin", "e2e-artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	screenshot := func(name string) {
		t.Helper()
		c, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(artifacts, "dashboard-"+name+".png")
		if err := os.WriteFile(p, png, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	page := func(name string, shows chromedp.CSS) {
		t.Helper()
		do("page "+name, 30*time.Second,
			chromedp.Click(chromedp.CSS(`nav a[data-page="`+name+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#view[data-page="`+name+`"]`)),
			chromedp.WaitReady(shows))
	}

	// Sign in on the topology page and wait for config/samples' objects.
	signedIn := false
	for attempt := 1; attempt <= 5 && !signedIn; attempt++ {
		c, done := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Do(c,
			chromedp.Navigate(fmt.Sprintf("%s/?attempt=%d#topology", base, attempt)), // a fresh load each time
			chromedp.WaitVisible(chromedp.CSS("#login-form")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS(`#login-form button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#view[data-page="topology"] svg#topology`)))
		done()
		signedIn = err == nil
		if err != nil {
			t.Logf("sign in, attempt %d: %v", attempt, err)
		}
	}
	if !signedIn {
		t.Fatalf("could not sign in (console errors: %s)", errorsSoFar())
	}
	// Ingress default/shop shares its host with the Ingress subtest's
	// e2e/shop, which is older and wins: one of the two is drawn.
	want := []string{
		"gateway:default/web", "gateway:default/edge", "gateway:default/web/http", "route:HTTPRoute:default/web",
		"route:HTTPRoute:default/edge", "service:default/api", "service:default/frontend", "service:default/shop",
	}
	testkit.EventuallyExplained(t, time.Minute, func() string {
		var ids []string
		if err := json.Unmarshal(eval("read the topology", `Array.from(document.querySelectorAll("svg#topology g.node")).map(n => n.dataset.id)`), &ids); err != nil {
			return err.Error()
		}
		have := map[string]bool{}
		proxies := 0
		for _, id := range ids {
			have[id] = true
			if strings.HasPrefix(id, "proxy:") {
				proxies++
			}
		}
		var missing []string
		for _, w := range want {
			if !have[w] {
				missing = append(missing, w)
			}
		}
		if !have["route:Ingress:default/shop"] && !have["route:Ingress:e2e/shop"] {
			missing = append(missing, "route:Ingress:default/shop (or e2e/shop)")
		}
		if len(missing) > 0 || proxies < 2 {
			return fmt.Sprintf("topology lacks %v (and has %d proxies); has %v", missing, proxies, ids)
		}
		return ""
	})
	screenshot("topology")

	// The CLI reads the same fleet: describe lists the proxies serving
	// the Gateway at its generation.
	web := e.waitProgrammed(t, "default", "web", time.Minute)
	out, err := exec.CommandContext(e.ctx, e.coxswain, "describe", "gateway", "default/web", "--kubeconfig", e.c.Kubeconfig,
		"--admin-url", base, "--admin-token", token, "--admin-insecure-skip-tls-verify").CombinedOutput()
	t.Logf("coxswain describe gateway default/web:\n%s", out)
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("serves generation %d", web.Generation)) {
		t.Errorf("describe with --admin-url: %v; want the proxies serving generation %d", err, web.Generation)
	}

	// Every page loads and draws its data.
	page("fleet", `tr[data-proxy]`)
	screenshot("fleet")
	page("routing", `tr[data-route^="httproute/default/web:"]`)
	screenshot("routing")
	page("problems", `#view[data-page="problems"] h2`)
	screenshot("problems")

	// A broken route appears on the problems page, without a reload.
	eval("mark the document", `window.__notReloaded = true`)
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: dashboard-broken, namespace: default}
spec:
  parentRefs: [{name: web}]
  hostnames: [broken.example.com]
  rules:
  - backendRefs: [{name: no-such-service, port: 80}]
`)
	t.Cleanup(func() { e.kubectl(t, "delete", "httproute", "-n", "default", "dashboard-broken", "--ignore-not-found") })
	t0 := time.Now()
	do("the broken route on the problems page", 30*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`tr[data-problem="HTTPRoute/default/dashboard-broken"]`)))
	t.Logf("the broken route showed on the problems page %s after it was applied", time.Since(t0).Round(10*time.Millisecond))
	screenshot("problems-broken-route")

	// A route change redraws the topology, without a reload: HTTPRoute
	// edge moves from shop to frontend.
	page("topology", `svg#topology path[data-from="route:HTTPRoute:default/edge"][data-to="service:default/shop"]`)
	e.kubectl(t, "patch", "httproute", "edge", "-n", "default", "--type=json",
		`-p=[{"op":"replace","path":"/spec/rules/0/backendRefs/0/name","value":"frontend"}]`)
	t0 = time.Now()
	do("the changed route on the topology", 30*time.Second,
		chromedp.WaitVisible(chromedp.CSS(`svg#topology path[data-from="route:HTTPRoute:default/edge"][data-to="service:default/frontend"]`)))
	t.Logf("the topology showed the route change %s after the patch", time.Since(t0).Round(10*time.Millisecond))
	if got := string(eval("no reload", `window.__notReloaded === true`)); got != "true" {
		t.Errorf("the page reloaded to show the change (marker: %s)", got)
	}
	if got := string(eval("old edge", `document.querySelectorAll('svg#topology path[data-from="route:HTTPRoute:default/edge"][data-to="service:default/shop"]').length`)); got != "0" {
		t.Errorf("the topology still draws HTTPRoute edge -> shop (%s edges)", got)
	}
	screenshot("topology-after-change")
	if errs := errorsSoFar(); errs != "" {
		t.Errorf("console errors:\n%s", errs)
	}
}

// serviceAccountToken is a one-hour token of the ServiceAccount, as
// `kubectl create token` makes.
func (e *lcEnv) serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(e.ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// adminURL finds the leader controller's admin port and waits until token
// reads it.
func (e *lcEnv) adminURL(t *testing.T, token string) string {
	t.Helper()
	hc := insecureClient()
	var base string
	testkit.EventuallyExplained(t, 3*time.Minute, func() string {
		pods := &corev1.PodList{}
		if err := e.cl.List(e.ctx, pods, client.InNamespace(installNS), client.HasLabels{"app.kubernetes.io/component"}); err != nil {
			return err.Error()
		}
		var seen []string
		for _, p := range pods.Items {
			if p.Labels["app.kubernetes.io/component"] != "controller" || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			u := "https://" + net.JoinHostPort(p.Status.PodIP, fmt.Sprint(names.AdminPort))
			var fleet struct {
				Leader bool `json:"leader"`
			}
			code := adminGet(t, hc, u+"/api/v1/fleet", token, &fleet)
			seen = append(seen, fmt.Sprintf("%s: %d leader=%v", p.Name, code, fleet.Leader))
			if code == http.StatusOK && fleet.Leader {
				base = u
				return ""
			}
		}
		return "no leader controller serves the admin API yet: " + strings.Join(seen, "; ")
	})
	return base
}

func insecureClient() *http.Client {
	// The admin port's certificate is self-signed unless --admin-cert-dir.
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}

// adminGet GETs url with token, decodes a 200 answer into v, and returns
// the status code (0 when the port does not answer).
func adminGet(t *testing.T, hc *http.Client, url, token string, v any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer func() { _ = r.Body.Close() }()
	if r.StatusCode == http.StatusOK && v != nil {
		_ = json.NewDecoder(r.Body).Decode(v)
	}
	return r.StatusCode
}

// removeSamplesKeepingClasses deletes what installSamples applied except
// the GatewayClass and IngressClass named coxswain, which the cluster's
// other subtests share with config/samples.
func (e *lcEnv) removeSamplesKeepingClasses(t *testing.T, repo string) {
	t.Helper()
	rendered := e.kubectlOutput(t, "kustomize", filepath.Join(repo, "config", "samples"))
	var keep []string
	for _, doc := range strings.Split(rendered, "\n---\n") {
		shared := (strings.Contains(doc, "kind: GatewayClass") || strings.Contains(doc, "kind: IngressClass\n")) &&
			strings.Contains(doc, "\n  name: coxswain\n")
		if !shared {
			keep = append(keep, doc)
		}
	}
	for _, yaml := range []string{strings.Join(keep, "\n---\n"), sampleExtras()} {
		if out, err := e.c.Kubectl(e.ctx, []byte(yaml), "delete", "--wait=true", "--timeout=2m", "--ignore-not-found", "-f", "-"); err != nil {
			t.Errorf("deleting the samples: %v\n%s", err, out)
		}
	}
	// The samples' IngressClass names parameters just deleted: apply the
	// cluster's own again (the same field manager drops the field).
	e.apply(t, `
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: coxswain}
spec: {controller: coxswain-labs.dev/gateway-controller}
`)
}

// kubectlOutput runs kubectl and returns its standard output alone.
func (e *lcEnv) kubectlOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(e.ctx, e.c.KubectlPath(), append([]string{"--kubeconfig", e.c.Kubeconfig}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
