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

// Package monitoring reads Coxswain's monitoring bundle in config/monitoring
// (the Prometheus alerting rules and the Grafana dashboards, the one source
// the Helm chart copies) for the checks that hold it to the metrics: the
// static ones in this package's tests (promtool) and the local-cluster e2e,
// which evaluates every expression on a real Prometheus (docs/monitoring.md).
package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Paths of the bundle, relative to the repository root.
const (
	Dir           = "config/monitoring"
	RulesFile     = Dir + "/coxswain.rules.yaml"
	DashboardsDir = Dir + "/dashboards"
)

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is one group of a rule file.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is an alerting or a recording rule.
type Rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Alerts are the alerting rules of every group.
func (f *RuleFile) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// LoadRules reads the rule file under root.
func LoadRules(root string) (*RuleFile, error) {
	data, err := os.ReadFile(filepath.Join(root, RulesFile))
	if err != nil {
		return nil, err
	}
	f := &RuleFile{}
	if err := yaml.UnmarshalStrict(data, f); err != nil {
		return nil, fmt.Errorf("%s: %w", RulesFile, err)
	}
	return f, nil
}

// AlertBases are, per alert, the expressions its expr compares with its
// thresholds: each appears in the alert's expr verbatim (up to
// whitespace; the package's tests hold them to that), so that what is left
// is the comparison. An alert expression returns nothing while all is well;
// its bases return a series as soon as the metrics exist, which is what the
// e2e checks on a real Prometheus.
var AlertBases = map[string][]string{
	"CoxswainGatewayNotProgrammed": {`max by (namespace, name) (coxswain_gateway_programmed)`},
	"CoxswainNoConnectedProxies":   {`max by (namespace, name) (coxswain_gateway_dataplane_proxies)`},
	"CoxswainSnapshotRejected":     {`increase(coxswain_proxy_discovery_nacks_total[10m])`},
	"CoxswainSVIDExpiringSoon":     {`(coxswain_proxy_discovery_svid_expiry_timestamp_seconds > 0) - time()`},
	"CoxswainUpstreamErrorRatioHigh": {
		`sum by (route) (rate(coxswain_proxy_requests_total{status_code=~"5.."}[5m])) / sum by (route) (rate(coxswain_proxy_requests_total[5m]))`,
		`sum by (route) (rate(coxswain_proxy_requests_total[5m]))`,
	},
}

// NormalizeSpace collapses runs of white space to one space and drops it
// next to brackets, so expressions compare as written on one line.
func NormalizeSpace(expr string) string {
	s := strings.Join(strings.Fields(expr), " ")
	for _, p := range []string{"( ", " )"} {
		s = strings.ReplaceAll(s, p, strings.TrimSpace(p))
	}
	return s
}

// Dashboard is one Grafana dashboard of the bundle.
type Dashboard struct {
	// File is the file name under DashboardsDir.
	File string
	// UID and Title are the dashboard's.
	UID, Title string
	// JSON is the whole dashboard, decoded.
	JSON map[string]any
	// Queries are the Prometheus expressions of every panel target and
	// every query variable.
	Queries []Query
	// Variables are the names of the dashboard's template variables.
	Variables []string
}

// Query is one Prometheus expression of a dashboard.
type Query struct {
	// Where names it: the panel title and target refId, or the variable.
	Where string
	// Expr is as written, with Grafana's variables.
	Expr string
}

// LoadDashboards reads every dashboard under root, sorted by file name.
func LoadDashboards(root string) ([]Dashboard, error) {
	files, err := filepath.Glob(filepath.Join(root, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Dashboard
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d := Dashboard{File: filepath.Base(f)}
		if err := json.Unmarshal(data, &d.JSON); err != nil {
			return nil, fmt.Errorf("%s: %w", d.File, err)
		}
		d.UID, _ = d.JSON["uid"].(string)
		d.Title, _ = d.JSON["title"].(string)
		for _, p := range Panels(d.JSON) {
			title, _ := p["title"].(string)
			targets, _ := p["targets"].([]any)
			for _, t := range targets {
				tm, _ := t.(map[string]any)
				expr, _ := tm["expr"].(string)
				ref, _ := tm["refId"].(string)
				d.Queries = append(d.Queries, Query{Where: fmt.Sprintf("panel %q target %s", title, ref), Expr: expr})
			}
		}
		templating, _ := d.JSON["templating"].(map[string]any)
		vars, _ := templating["list"].([]any)
		for _, v := range vars {
			vm, _ := v.(map[string]any)
			name, _ := vm["name"].(string)
			d.Variables = append(d.Variables, name)
			if vm["type"] != "query" {
				continue
			}
			q, err := variableQuery(vm)
			if err != nil {
				return nil, fmt.Errorf("%s: variable %s: %w", d.File, name, err)
			}
			d.Queries = append(d.Queries, Query{Where: "variable " + name, Expr: q})
		}
		out = append(out, d)
	}
	return out, nil
}

// Panels returns every panel of a dashboard, those in collapsed rows too.
func Panels(dashboard map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(v any)
	walk = func(v any) {
		list, _ := v.([]any)
		for _, p := range list {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			out = append(out, pm)
			walk(pm["panels"])
		}
	}
	walk(dashboard["panels"])
	return out
}

// labelValues is Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// variableQuery returns the PromQL of a query variable: the selector of a
// label_values(selector, label) query, or the query itself
// (query_result(expr) gives expr).
func variableQuery(v map[string]any) (string, error) {
	var q string
	switch x := v["query"].(type) {
	case string:
		q = x
	case map[string]any:
		q, _ = x["query"].(string)
	}
	q = strings.TrimSpace(q)
	if m := labelValues.FindStringSubmatch(q); m != nil {
		return strings.TrimSpace(m[1]), nil
	}
	if strings.HasPrefix(q, "query_result(") && strings.HasSuffix(q, ")") {
		return q[len("query_result(") : len(q)-1], nil
	}
	if strings.HasPrefix(q, "label_values(") || strings.HasPrefix(q, "label_names(") || strings.HasPrefix(q, "metrics(") {
		return "", fmt.Errorf("query %q is not label_values(selector, label) with a selector", q)
	}
	return q, nil
}

// Grafana's built-in interval variables and what the checks put in their
// place.
var builtinIntervals = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "1h",
}

// grafanaVar matches $name, ${name} and ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-zA-Z]+)?\}|\$([a-zA-Z_][a-zA-Z0-9_]*)`)

// Substitute makes a dashboard expression plain PromQL: the interval
// variables become durations (5m for $__rate_interval), $__range_s and the
// like numbers, every other variable (a dashboard's own, used inside =~
// matchers) the regular expression .* ("All").
func Substitute(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if d, ok := builtinIntervals[name]; ok {
			return d
		}
		if strings.HasSuffix(name, "_s") || strings.HasSuffix(name, "_ms") {
			return "60"
		}
		return ".*"
	})
}

// VariablesOf lists the Grafana variables an expression uses, in order.
func VariablesOf(expr string) []string {
	var out []string
	for _, m := range grafanaVar.FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// IsBuiltinVariable reports whether name is one of Grafana's own ($__...).
func IsBuiltinVariable(name string) bool { return strings.HasPrefix(name, "__") }

// QueryRules renders exprs (plain PromQL) as a rule file of recording rules,
// one per expression, so that `promtool check rules` parses every one
// with Prometheus's own parser.
func QueryRules(exprs []string) ([]byte, error) {
	g := RuleGroup{Name: "coxswain-dashboard-queries"}
	for i, e := range exprs {
		g.Rules = append(g.Rules, Rule{Record: "dashboard_query_" + strconv.Itoa(i), Expr: e})
	}
	return yaml.Marshal(RuleFile{Groups: []RuleGroup{g}})
}
