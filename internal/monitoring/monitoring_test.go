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

package monitoring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The static checks of the monitoring bundle: promtool (Debian's prometheus
// package, which .ci/run installs) parses the rules and every dashboard
// query with Prometheus's own parser, and unit-tests the alerts; the rest
// holds the bundle to the documented metrics and to plain Grafana.

// promtool returns the promtool binary. Without one the test fails in CI
// ($CI set, as .ci/run runs) and is skipped elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err == nil {
		return bin
	}
	if os.Getenv("CI") != "" {
		t.Fatal("promtool is missing, and CI must run this check: .ci/run installs Debian's prometheus package (apt-get install -y prometheus)")
	}
	t.Skip("skipping: promtool not found (apt-get install -y prometheus); CI installs it and runs this check")
	return ""
}

// checkRules runs `promtool check rules` on file and returns the number of
// rules it found.
func checkRules(t *testing.T, file string) int {
	t.Helper()
	out, err := exec.Command(promtool(t), "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", file, err, out)
	}
	m := regexp.MustCompile(`SUCCESS: (\d+) rules found`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("promtool check rules %s said:\n%s", file, out)
	}
	var n int
	_, _ = fmt.Sscan(string(m[1]), &n)
	return n
}

func loadRules(t *testing.T) *RuleFile {
	t.Helper()
	f, err := LoadRules(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func loadDashboards(t *testing.T) []Dashboard {
	t.Helper()
	ds, err := LoadDashboards(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 3 {
		t.Fatalf("%d dashboards in %s, want 3 (controller, proxy, discovery)", len(ds), DashboardsDir)
	}
	return ds
}

func TestRulesPassPromtool(t *testing.T) {
	n := checkRules(t, filepath.Join(testkit.RepoRoot(), RulesFile))
	if want := len(loadRules(t).Alerts()); n != want {
		t.Fatalf("promtool found %d rules, the file has %d alerts", n, want)
	}
	t.Logf("promtool check rules: %d rules", n)
}

// TestAlertsFire runs testdata/alerts_test.yaml with `promtool test rules`
// against the rules with their annotations cut to the summary.
func TestAlertsFire(t *testing.T) {
	bin := promtool(t)
	f := loadRules(t)
	for gi := range f.Groups {
		for ri := range f.Groups[gi].Rules {
			r := &f.Groups[gi].Rules[ri]
			r.Annotations = map[string]string{"summary": r.Annotations["summary"]}
		}
	}
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	testFile := filepath.Join(dir, "alerts_test.yaml")
	if err := os.WriteFile(testFile, []byte(strings.Replace(string(tests), "RULES_FILE", "rules.yaml", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", testFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert has a case that fires it.
	for _, a := range f.Alerts() {
		if !strings.Contains(string(tests), "alertname: "+a.Alert+"\n    exp_alerts:") {
			t.Errorf("testdata/alerts_test.yaml has no case in which %s fires", a.Alert)
		}
	}
}

// TestDashboardQueriesParse: every dashboard query, its variables
// substituted, and every alert base expression, as recording rules that
// promtool parses.
func TestDashboardQueriesParse(t *testing.T) {
	var exprs []string
	for _, d := range loadDashboards(t) {
		for _, q := range d.Queries {
			exprs = append(exprs, Substitute(q.Expr))
		}
	}
	queries := len(exprs)
	for _, bases := range AlertBases {
		exprs = append(exprs, bases...)
	}
	data, err := QueryRules(exprs)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "queries.rules.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := checkRules(t, file); n != len(exprs) {
		t.Fatalf("promtool found %d rules, want %d", n, len(exprs))
	}
	t.Logf("promtool parsed %d dashboard queries and %d alert base expressions", queries, len(exprs)-queries)
}

func TestSubstitute(t *testing.T) {
	for in, want := range map[string]string{
		`rate(x{route=~"$route"}[$__rate_interval])`:       `rate(x{route=~".*"}[5m])`,
		`sum(x{job=~"${job}", a=~"${a:regex}"}[$__range])`: `sum(x{job=~".*", a=~".*"}[1h])`,
		`x / $__range_s`: `x / 60`,
	} {
		if got := Substitute(in); got != want {
			t.Errorf("Substitute(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAlertsAreComplete: a severity, a summary, a description and a
// runbook link into docs/monitoring.md for every alert, and its base
// expressions, word for word, in its expression.
func TestAlertsAreComplete(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "docs", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range loadRules(t).Alerts() {
		seen[a.Alert] = true
		switch a.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity %q, want critical, warning or info", a.Alert, a.Labels["severity"])
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("%s has no %s annotation", a.Alert, k)
			}
		}
		anchor := strings.ToLower(a.Alert)
		if !strings.HasSuffix(a.Annotations["runbook_url"], "docs/monitoring.md#"+anchor) {
			t.Errorf("%s: runbook_url %q does not point at docs/monitoring.md#%s", a.Alert, a.Annotations["runbook_url"], anchor)
		}
		if !strings.Contains(string(doc), "### "+a.Alert+"\n") {
			t.Errorf("docs/monitoring.md has no section ### %s", a.Alert)
		}
		bases, ok := AlertBases[a.Alert]
		if !ok {
			t.Errorf("%s has no entry in AlertBases", a.Alert)
		}
		for _, b := range bases {
			if !strings.Contains(NormalizeSpace(a.Expr), NormalizeSpace(b)) {
				t.Errorf("%s: base expression %s is not in its expr %s", a.Alert, b, NormalizeSpace(a.Expr))
			}
		}
	}
	for name := range AlertBases {
		if !seen[name] {
			t.Errorf("AlertBases names %s, which is no alert of %s", name, RulesFile)
		}
	}
}

// corePanels are the panel types Grafana ships: the dashboards need no
// plugin.
var corePanels = map[string]bool{
	"row": true, "timeseries": true, "stat": true, "table": true, "gauge": true, "bargauge": true,
	"text": true, "heatmap": true, "piechart": true, "barchart": true, "state-timeline": true,
	"status-history": true, "histogram": true,
}

// regexMatcher is a =~ label matcher's value.
var regexMatcher = regexp.MustCompile(`=~"[^"]*"`)

// TestDashboardsArePlainGrafana: unique uids, a ${datasource} variable that
// every panel and target uses, core panel types only, unique panel ids,
// and every dashboard variable defined and used only inside =~ matchers
// (where "All" is .*).
func TestDashboardsArePlainGrafana(t *testing.T) {
	uids := map[string]string{}
	wantDS := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	for _, d := range loadDashboards(t) {
		if d.UID == "" || !strings.HasPrefix(d.Title, "Coxswain / ") {
			t.Errorf("%s: uid %q, title %q; want a uid and a title Coxswain / ...", d.File, d.UID, d.Title)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share the uid %s", d.File, other, d.UID)
		}
		uids[d.UID] = d.File
		if _, ok := d.JSON["__requires"]; ok {
			t.Errorf("%s has __requires (an export for sharing); keep it a plain dashboard", d.File)
		}
		vars := map[string]bool{}
		hasDS := false
		templating, _ := d.JSON["templating"].(map[string]any)
		list, _ := templating["list"].([]any)
		for _, v := range list {
			vm := v.(map[string]any)
			vars[vm["name"].(string)] = true
			if vm["name"] == "datasource" && vm["type"] == "datasource" && vm["query"] == "prometheus" {
				hasDS = true
			}
			if vm["type"] == "query" && !equalJSON(vm["datasource"], wantDS) {
				t.Errorf("%s: variable %s uses datasource %v, want ${datasource}", d.File, vm["name"], vm["datasource"])
			}
		}
		if !hasDS {
			t.Errorf("%s has no datasource variable of type prometheus", d.File)
		}
		ids := map[any]bool{}
		for _, p := range Panels(d.JSON) {
			typ, _ := p["type"].(string)
			if !corePanels[typ] {
				t.Errorf("%s: panel %q is of type %q, not a core panel", d.File, p["title"], typ)
			}
			if ids[p["id"]] {
				t.Errorf("%s: panel id %v is used twice", d.File, p["id"])
			}
			ids[p["id"]] = true
			if typ == "row" {
				continue
			}
			if !equalJSON(p["datasource"], wantDS) {
				t.Errorf("%s: panel %q uses datasource %v, want ${datasource}", d.File, p["title"], p["datasource"])
			}
			targets, _ := p["targets"].([]any)
			if len(targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.File, p["title"])
			}
			for _, tg := range targets {
				if tm := tg.(map[string]any); !equalJSON(tm["datasource"], wantDS) {
					t.Errorf("%s: panel %q target %v uses datasource %v, want ${datasource}", d.File, p["title"], tm["refId"], tm["datasource"])
				}
			}
		}
		for _, q := range d.Queries {
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("%s: %s has an empty query", d.File, q.Where)
			}
			for _, v := range VariablesOf(q.Expr) {
				if !IsBuiltinVariable(v) && !vars[v] {
					t.Errorf("%s: %s uses $%s, which the dashboard does not define", d.File, q.Where, v)
				}
			}
			for _, v := range VariablesOf(regexMatcher.ReplaceAllString(q.Expr, "")) {
				if !IsBuiltinVariable(v) {
					t.Errorf("%s: %s uses $%s outside a =~ matcher", d.File, q.Where, v)
				}
			}
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

// coxswainMetric finds Coxswain metric names in an expression.
var coxswainMetric = regexp.MustCompile(`\bcoxswain_[a-z0-9_]+`)

// TestBundleNamesDocumentedMetrics: every coxswain_ metric an alert or a
// dashboard queries is in docs/metrics.md (histograms by their base name).
func TestBundleNamesDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, a := range loadRules(t).Alerts() {
		exprs = append(exprs, a.Expr)
	}
	for _, d := range loadDashboards(t) {
		for _, q := range d.Queries {
			exprs = append(exprs, q.Expr)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, m := range coxswainMetric.FindAllString(e, -1) {
			if strings.HasSuffix(m, "_") {
				continue // a prefix in a {__name__=~"..."} matcher
			}
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b := strings.TrimSuffix(m, suffix); b != m && strings.Contains(string(doc), "`"+b+"`") {
					m = b
				}
			}
			used[m] = true
			if !strings.Contains(string(doc), "`"+m+"`") {
				t.Errorf("the monitoring bundle queries %s, which docs/metrics.md does not list", m)
			}
		}
	}
	t.Logf("the bundle queries %d Coxswain metrics", len(used))
}
