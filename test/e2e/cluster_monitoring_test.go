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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/monitoring"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The monitoring bundle (config/monitoring, docs/monitoring.md) on a real
// Prometheus: Debian's prometheus binary runs on the host, scrapes the
// controller through its metrics Service's endpoints (as the chart's
// ServiceMonitor does) and every proxy pod the chart's PodMonitor selects,
// and loads the alerting rules. After traffic (good requests, 5xx, TCP and
// UDP) every dashboard query and every alert's base expression (the part
// its threshold compares: monitoring.AlertBases) must return a series, and
// every alert expression must evaluate (while all is well it returns
// nothing, so it is only held to parse and run).

// proxyPodSelector is the chart's PodMonitor selector
// (charts/coxswain/templates/monitoring.yaml; internal/distribution holds
// the chart to the same labels).
var proxyPodSelector = fmt.Sprintf("%s=%s,%s=%s,%s in (%s,%s)",
	names.LabelName, names.ValueName, names.LabelManagedBy, names.ValueManagedBy,
	names.LabelComponent, names.ComponentSharedProxy, names.ComponentDedicatedProxy)

// Prometheus job names as the Prometheus Operator would set them: the
// ServiceMonitor's Service name, the PodMonitor's namespace/name.
const (
	controllerJob = "coxswain-controller-metrics"
	proxiesJob    = installNS + "/coxswain-proxies"
)

func testMonitoring(t *testing.T, e *lcEnv) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is missing: apt-get install -y prometheus (.ci/run installs it)")
	}
	root := testkit.RepoRoot()
	rules, err := monitoring.LoadRules(root)
	if err != nil {
		t.Fatal(err)
	}
	dashboards, err := monitoring.LoadDashboards(root)
	if err != nil {
		t.Fatal(err)
	}

	// What the queries need to exist: a dedicated proxy besides the shared
	// pool, an HTTP route that answers and one that fails (a Service with
	// no endpoints), and TCP and UDP listeners (those of L4Routes).
	okURL, downURL, dedicatedURL := e.monitoringRoutes(t)
	l4 := e.monitoringL4(t)

	targets := map[string][]promTarget{
		controllerJob: e.controllerMetricsTargets(t),
		proxiesJob:    e.proxyMetricsTargets(t),
	}
	p := startPrometheus(t, bin, filepath.Join(root, monitoring.RulesFile), targets)
	p.waitTargetsUp(t, targets, time.Minute)

	// Traffic once every target is scraped, over a few scrapes, so that
	// rates have samples on both sides of it. mon-down gets enough (over
	// 0.1/s averaged over 5m) for CoxswainUpstreamErrorRatioHigh to go
	// pending.
	sent := map[string]int{}
	deadline := time.Now().Add(4 * time.Second)
	for i := 0; i < 400 && time.Now().Before(deadline); i++ {
		for _, u := range []struct{ name, url, host string }{
			{"ok", okURL, "mon-ok.example.com"}, {"dedicated", dedicatedURL, "mon-dedicated.example.com"},
			{"down", downURL, "mon-down.example.com"}, {"down", downURL, "mon-down.example.com"}, {"down", downURL, "mon-down.example.com"},
		} {
			code, _, err := statusOf(u.url, u.host, nil)
			if err == nil {
				sent[fmt.Sprintf("%s %d", u.name, code)]++
			}
		}
		if i%10 == 0 {
			l4.exchange(t)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("requests sent: %v", sent)
	if sent["ok 200"] == 0 || sent["dedicated 200"] == 0 {
		t.Fatalf("the monitoring routes did not answer 200: %v", sent)
	}
	// The 5xx of mon-down are counted and have a rate.
	p.waitSeries(t, `sum by (route) (rate(coxswain_proxy_requests_total{route="httproute/e2e/mon-down:0", status_code=~"5.."}[5m])) > 0`, time.Minute)
	p.waitRulesEvaluated(t, rules, time.Minute)
	// Every request of mon-down failed: its alert is pending (firing
	// only after its 5 minutes).
	p.waitAlert(t, "CoxswainUpstreamErrorRatioHigh", map[string]string{"route": "httproute/e2e/mon-down:0"}, time.Minute)

	checked := 0
	for _, a := range rules.Alerts() {
		if _, err := p.query(monitoring.NormalizeSpace(a.Expr)); err != nil {
			t.Errorf("alert %s: %v", a.Alert, err)
		}
		for _, b := range monitoring.AlertBases[a.Alert] {
			checked++
			n, err := p.query(b)
			switch {
			case err != nil:
				t.Errorf("alert %s base %s: %v", a.Alert, b, err)
			case n == 0:
				t.Errorf("alert %s base %s returned no series", a.Alert, b)
			}
		}
	}
	queries := 0
	for _, d := range dashboards {
		for _, q := range d.Queries {
			queries++
			expr := monitoring.Substitute(q.Expr)
			n, err := p.query(expr)
			switch {
			case err != nil:
				t.Errorf("dashboard %s %s: %s: %v", d.File, q.Where, expr, err)
			case n == 0:
				t.Errorf("dashboard %s %s returned no series: %s", d.File, q.Where, expr)
			}
		}
	}
	t.Logf("on Prometheus: %d alerts evaluated, %d alert base expressions and %d dashboard queries returned series; %d controller and %d proxy targets",
		len(rules.Alerts()), checked, queries, len(targets[controllerJob]), len(targets[proxiesJob]))
}

// monitoringRoutes routes mon-ok.example.com to blue and
// mon-down.example.com to a Service with no endpoints on Gateway web, and
// mon-dedicated.example.com to blue on a dedicated Gateway (deleted when
// the test ends); it returns the three URLs once each answers.
func (e *lcEnv) monitoringRoutes(t *testing.T) (okURL, downURL, dedicatedURL string) {
	t.Helper()
	e.apply(t, `
apiVersion: v1
kind: Service
metadata: {name: mon-nobody, namespace: e2e}
spec:
  selector: {app: mon-nobody}
  ports: [{name: http, port: 80, targetPort: 3000}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mon-ok, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [mon-ok.example.com]
  rules: [{backendRefs: [{name: blue, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mon-down, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [mon-down.example.com]
  rules: [{backendRefs: [{name: mon-nobody, port: 80}]}]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: mon, namespace: e2e}
spec:
  replicas: 1
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e-monitoring}
spec:
  controllerName: coxswain-labs.dev/gateway-controller
  parametersRef: {group: gateway.coxswain-labs.dev, kind: CoxswainGatewayParameters, name: mon, namespace: e2e}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: mon, namespace: e2e}
spec:
  gatewayClassName: e2e-monitoring
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mon-dedicated, namespace: e2e}
spec:
  parentRefs: [{name: mon}]
  hostnames: [mon-dedicated.example.com]
  rules: [{backendRefs: [{name: blue, port: 80}]}]
`)
	t.Cleanup(func() {
		// The garbage collector removes its proxies: the machine is small.
		if err := e.cl.Delete(e.ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: e2eNS, Name: "mon"}}); err != nil {
			t.Errorf("deleting Gateway mon: %v", err)
		}
	})
	for _, r := range []string{"mon-ok", "mon-down", "mon-dedicated"} {
		e.waitRouteAccepted(t, e2eNS, r, time.Minute)
	}
	web := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	okURL = gatewayURL(web, "http", 80) + "/"
	downURL = okURL
	dedicated := e.waitProgrammed(t, e2eNS, "mon", 2*time.Minute)
	dedicatedURL = gatewayURL(dedicated, "http", 8080) + "/"
	waitStatus(t, okURL, "mon-ok.example.com", nil, http.StatusOK, time.Minute)
	waitStatus(t, dedicatedURL, "mon-dedicated.example.com", nil, http.StatusOK, 2*time.Minute)
	testkit.EventuallyExplained(t, time.Minute, func() string {
		code, _, err := statusOf(downURL, "mon-down.example.com", nil)
		if err != nil || code < 500 {
			return fmt.Sprintf("GET mon-down.example.com: %d %v, want a 5xx", code, err)
		}
		return ""
	})
	return okURL, downURL, dedicatedURL
}

// monitoringL4 are the TCP and UDP listeners of Gateway l4 (L4Routes'
// objects, applied again so this test stands alone).
type monitoringL4 struct{ host string }

func (e *lcEnv) monitoringL4(t *testing.T) monitoringL4 {
	t.Helper()
	e.apply(t, l4Backends)
	for _, app := range []string{"tcp-echo", "udp-echo"} {
		if _, err := e.c.WaitForPodsReady(e.ctx, e2eNS, "app="+app, 1, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	e.apply(t, l4Gateway)
	gw := e.waitProgrammed(t, e2eNS, "l4", 2*time.Minute)
	l := monitoringL4{host: gw.Status.Addresses[0].Value}
	testkit.EventuallyExplained(t, time.Minute, func() string {
		if err := l.tcp(); err != nil {
			return "TCP: " + err.Error()
		}
		if err := l.udp(); err != nil {
			return "UDP: " + err.Error()
		}
		return ""
	})
	return l
}

// exchange sends one TCP and one UDP exchange; failures are logged only
// (the L4 metrics just need some traffic).
func (l monitoringL4) exchange(t *testing.T) {
	if err := l.tcp(); err != nil {
		t.Logf("TCP exchange: %v", err)
	}
	if err := l.udp(); err != nil {
		t.Logf("UDP exchange: %v", err)
	}
}

func (l monitoringL4) tcp() error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(l.host, "9000"), 3*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_, err = tcpTest(c)
	return err
}

func (l monitoringL4) udp() error {
	c, err := net.Dial("udp", net.JoinHostPort(l.host, "9000"))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("monitoring")); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 2048))
	return err
}

// promTarget is one static scrape target with the labels the Prometheus
// Operator would give it.
type promTarget struct {
	Addr      string
	Namespace string
	Pod       string
}

// controllerMetricsTargets are the ready endpoints of the controller's
// metrics Service (config/manager/metrics_service.yaml) on its port named
// metrics, as a ServiceMonitor finds them.
func (e *lcEnv) controllerMetricsTargets(t *testing.T) []promTarget {
	t.Helper()
	var out []promTarget
	testkit.EventuallyExplained(t, time.Minute, func() string {
		out = nil
		slices := &discoveryv1.EndpointSliceList{}
		if err := e.cl.List(e.ctx, slices, client.InNamespace(installNS), client.MatchingLabels{discoveryv1.LabelServiceName: "coxswain-controller-metrics"}); err != nil {
			return err.Error()
		}
		for _, s := range slices.Items {
			var port int32
			for _, p := range s.Ports {
				if p.Name != nil && *p.Name == "metrics" && p.Port != nil {
					port = *p.Port
				}
			}
			for _, ep := range s.Endpoints {
				if port == 0 || len(ep.Addresses) == 0 || (ep.Conditions.Ready != nil && !*ep.Conditions.Ready) {
					continue
				}
				pod := ""
				if ep.TargetRef != nil {
					pod = ep.TargetRef.Name
				}
				out = append(out, promTarget{Addr: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(port))), Namespace: installNS, Pod: pod})
			}
		}
		if len(out) == 0 {
			return "the Service coxswain-controller-metrics has no ready endpoint on a port named metrics"
		}
		return ""
	})
	return out
}

// proxyMetricsTargets are the running proxy pods, in every namespace,
// that the chart's PodMonitor selects, on their container port named
// metrics; at least one shared and one dedicated.
func (e *lcEnv) proxyMetricsTargets(t *testing.T) []promTarget {
	t.Helper()
	sel, err := labels.Parse(proxyPodSelector)
	if err != nil {
		t.Fatal(err)
	}
	var out []promTarget
	testkit.EventuallyExplained(t, time.Minute, func() string {
		out = nil
		pods := &corev1.PodList{}
		if err := e.cl.List(e.ctx, pods, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return err.Error()
		}
		modes := map[string]int{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil || !podReady(&p) {
				continue
			}
			for _, c := range p.Spec.Containers {
				for _, port := range c.Ports {
					if port.Name == "metrics" {
						out = append(out, promTarget{Addr: net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port.ContainerPort))), Namespace: p.Namespace, Pod: p.Name})
						modes[p.Labels[names.LabelComponent]]++
					}
				}
			}
		}
		if modes[names.ComponentSharedProxy] == 0 || modes[names.ComponentDedicatedProxy] == 0 {
			return fmt.Sprintf("ready proxy pods with a metrics port, by component: %v; want shared and dedicated ones", modes)
		}
		return ""
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testPrometheus is a prometheus process on loopback.
type testPrometheus struct {
	base string
	hc   *http.Client
}

// startPrometheus runs prometheus with a 1 s scrape and evaluation
// interval, rulesFile and targets by job, in a temporary directory, and
// stops it when the test ends.
func startPrometheus(t *testing.T, bin, rulesFile string, targets map[string][]promTarget) *testPrometheus {
	t.Helper()
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	cfg := struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []scrapeConfig    `json:"scrape_configs"`
	}{
		Global:    map[string]string{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		RuleFiles: []string{rulesFile},
	}
	jobs := make([]string, 0, len(targets))
	for j := range targets {
		jobs = append(jobs, j)
	}
	sort.Strings(jobs)
	for _, j := range jobs {
		sc := scrapeConfig{JobName: j}
		for _, tg := range targets[j] {
			sc.StaticConfigs = append(sc.StaticConfigs, staticConfig{Targets: []string{tg.Addr}, Labels: map[string]string{"namespace": tg.Namespace, "pod": tg.Pod}})
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, sc)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	out := &testkit.SyncBuffer{}
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--storage.tsdb.retention.time=1h")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus config:\n%s\nprometheus output:\n%s", data, out.String())
		}
	})
	p := &testPrometheus{base: "http://" + addr, hc: &http.Client{Timeout: 10 * time.Second}}
	testkit.EventuallyExplained(t, 30*time.Second, func() string {
		resp, err := p.hc.Get(p.base + "/-/ready")
		if err != nil {
			return "prometheus not ready: " + err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("prometheus /-/ready: %d", resp.StatusCode)
		}
		return ""
	})
	return p
}

// api GETs an /api/v1 endpoint and decodes its data.
func (p *testPrometheus) api(path string, params url.Values, data any) error {
	resp, err := p.hc.Get(p.base + "/api/v1/" + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.ErrorType, env.Error)
	}
	return json.Unmarshal(env.Data, data)
}

// query evaluates expr now and returns the number of series (a scalar or
// string result counts as one); a parse or evaluation error is an error.
func (p *testPrometheus) query(expr string) (int, error) {
	var res struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.api("query", url.Values{"query": {expr}}, &res); err != nil {
		return 0, err
	}
	switch res.ResultType {
	case "vector", "matrix":
		var series []json.RawMessage
		if err := json.Unmarshal(res.Result, &series); err != nil {
			return 0, err
		}
		return len(series), nil
	case "scalar", "string":
		return 1, nil
	}
	return 0, fmt.Errorf("result type %q", res.ResultType)
}

// waitSeries waits (bounded) until expr returns a series.
func (p *testPrometheus) waitSeries(t *testing.T, expr string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		n, err := p.query(expr)
		if err != nil {
			return err.Error()
		}
		if n == 0 {
			return "no series yet for " + expr
		}
		return ""
	})
}

// waitTargetsUp waits until every target of targets was scraped and is up.
func (p *testPrometheus) waitTargetsUp(t *testing.T, targets map[string][]promTarget, timeout time.Duration) {
	t.Helper()
	want := 0
	for _, ts := range targets {
		want += len(ts)
	}
	testkit.EventuallyExplained(t, timeout, func() string {
		var res struct {
			ActiveTargets []struct {
				ScrapePool string            `json:"scrapePool"`
				Labels     map[string]string `json:"labels"`
				Health     string            `json:"health"`
				LastError  string            `json:"lastError"`
			} `json:"activeTargets"`
		}
		if err := p.api("targets", url.Values{"state": {"active"}}, &res); err != nil {
			return err.Error()
		}
		var down []string
		for _, tg := range res.ActiveTargets {
			if tg.Health != "up" {
				down = append(down, fmt.Sprintf("%s %s: %s %s", tg.ScrapePool, tg.Labels["instance"], tg.Health, tg.LastError))
			}
		}
		if len(res.ActiveTargets) != want || len(down) > 0 {
			return fmt.Sprintf("%d of %d targets active; not up: %s", len(res.ActiveTargets), want, strings.Join(down, "; "))
		}
		return ""
	})
}

// waitRulesEvaluated waits until Prometheus loaded every alert of rules and
// evaluated each without error.
func (p *testPrometheus) waitRulesEvaluated(t *testing.T, rules *monitoring.RuleFile, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		var res struct {
			Groups []struct {
				Rules []struct {
					Name           string `json:"name"`
					Health         string `json:"health"`
					LastError      string `json:"lastError"`
					LastEvaluation string `json:"lastEvaluation"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := p.api("rules", url.Values{"type": {"alert"}}, &res); err != nil {
			return err.Error()
		}
		got := map[string]string{}
		for _, g := range res.Groups {
			for _, r := range g.Rules {
				switch {
				case r.Health == "ok":
					got[r.Name] = ""
				case r.LastError != "":
					got[r.Name] = r.LastError
				default:
					got[r.Name] = "not evaluated yet (" + r.Health + ")"
				}
			}
		}
		var errs []error
		for _, a := range rules.Alerts() {
			msg, ok := got[a.Alert]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s not loaded", a.Alert))
			case msg != "":
				errs = append(errs, fmt.Errorf("%s: %s", a.Alert, msg))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err.Error()
		}
		return ""
	})
}

// waitAlert waits until the alert with the given labels is pending or
// firing.
func (p *testPrometheus) waitAlert(t *testing.T, name string, want map[string]string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		var res struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		}
		if err := p.api("alerts", nil, &res); err != nil {
			return err.Error()
		}
		var seen []string
		for _, a := range res.Alerts {
			seen = append(seen, fmt.Sprintf("%v %s", a.Labels, a.State))
			if a.Labels["alertname"] != name || (a.State != "pending" && a.State != "firing") {
				continue
			}
			match := true
			for k, v := range want {
				match = match && a.Labels[k] == v
			}
			if match {
				return ""
			}
		}
		return fmt.Sprintf("alert %s %v is not pending; alerts: %s", name, want, strings.Join(seen, "; "))
	})
}
