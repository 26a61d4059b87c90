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

package distribution

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/monitoring"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// allMonitoring are the chart values that turn on every monitoring object.
var allMonitoring = map[string]any{"monitoring": map[string]any{
	"serviceMonitor":    map[string]any{"enabled": true, "interval": "15s", "labels": map[string]any{"release": "kube-prometheus-stack"}},
	"podMonitor":        map[string]any{"enabled": true},
	"prometheusRule":    map[string]any{"enabled": true},
	"grafanaDashboards": map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "Coxswain"}},
}}

var monitoringKinds = []string{"ServiceMonitor", "PodMonitor", "PrometheusRule"}

func TestChartMonitoringIsOffByDefault(t *testing.T) {
	r := renderChart(t, nil)
	for _, o := range r.Objects {
		if o.GetAPIVersion() == "monitoring.coreos.com/v1" || o.GetLabels()["grafana_dashboard"] != "" {
			t.Errorf("the default values render %s", KeyOf(o))
		}
	}
	// The controller's metrics Service is part of every install.
	metricsService(t, r.Objects)
}

// metricsService is the controller's metrics Service: port 8083 named
// metrics onto the container port metrics of the controller pods.
func metricsService(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	svc := findObject(objs, "Service", "coxswain-controller-metrics")
	if svc == nil {
		t.Fatal("no Service coxswain-controller-metrics rendered")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 {
		t.Fatalf("metrics Service ports %v, want one", ports)
	}
	p := ports[0].(map[string]any)
	if p["name"] != "metrics" || p["port"] != int64(names.MetricsPort) || p["targetPort"] != "metrics" {
		t.Errorf("metrics Service port %v, want metrics %d -> metrics", p, names.MetricsPort)
	}
	sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	d := findObject(objs, "Deployment", ControllerDeployment)
	podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("metrics Service selects %s=%s, which the controller pods do not carry (%v)", k, v, podLabels)
		}
	}
	return svc
}

func TestChartRendersEveryMonitoringObject(t *testing.T) {
	if msgs := LintChart(chartDir(), InstallNamespace, allMonitoring, SeverityWarning); len(msgs) > 0 {
		t.Fatalf("helm lint:\n%s", strings.Join(msgs, "\n"))
	}
	r := renderChart(t, allMonitoring)
	for _, kind := range monitoringKinds {
		n := 0
		for _, o := range r.Objects {
			if o.GetKind() == kind {
				n++
				if o.GetAPIVersion() != "monitoring.coreos.com/v1" || o.GetNamespace() != InstallNamespace {
					t.Errorf("%s: apiVersion %s namespace %s", KeyOf(o), o.GetAPIVersion(), o.GetNamespace())
				}
			}
		}
		if n != 1 {
			t.Errorf("%d %s rendered, want 1", n, kind)
		}
	}

	// The ServiceMonitor selects the metrics Service and its port.
	sm := findObject(r.Objects, "ServiceMonitor", "coxswain-controller")
	svc := metricsService(t, r.Objects)
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range sel {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the metrics Service has %v", k, v, svc.GetLabels())
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || eps[0].(map[string]any)["interval"] != "15s" {
		t.Errorf("ServiceMonitor endpoints %v, want port metrics every 15s", eps)
	}
	if sm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack the extra label", sm.GetLabels())
	}

	// The PodMonitor selects exactly the labels the controller puts on
	// shared and dedicated proxy pods.
	pm := findObject(r.Objects, "PodMonitor", "coxswain-proxies")
	if anyNS, _, _ := unstructured.NestedBool(pm.Object, "spec", "namespaceSelector", "any"); !anyNS {
		t.Error("the PodMonitor must look in every namespace (dedicated proxies run in their Gateway's)")
	}
	match, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	if want := map[string]string{names.LabelName: names.ValueName, names.LabelManagedBy: names.ValueManagedBy}; !reflect.DeepEqual(match, want) {
		t.Errorf("PodMonitor matchLabels %v, want %v", match, want)
	}
	exprs, _, _ := unstructured.NestedSlice(pm.Object, "spec", "selector", "matchExpressions")
	wantExpr := map[string]any{"key": names.LabelComponent, "operator": "In", "values": []any{names.ComponentSharedProxy, names.ComponentDedicatedProxy}}
	if len(exprs) != 1 || !reflect.DeepEqual(exprs[0], wantExpr) {
		t.Errorf("PodMonitor matchExpressions %v, want [%v]", exprs, wantExpr)
	}
	pmEps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	if len(pmEps) != 1 || pmEps[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("PodMonitor endpoints %v, want the port metrics", pmEps)
	}

	// The PrometheusRule carries config/monitoring's rules unchanged.
	want, err := monitoring.LoadRules(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	pr := findObject(r.Objects, "PrometheusRule", "coxswain")
	spec, _, _ := unstructured.NestedMap(pr.Object, "spec")
	data, _ := json.Marshal(spec)
	got := &monitoring.RuleFile{}
	if err := yaml.UnmarshalStrict(data, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the PrometheusRule's groups differ from %s:\n got %+v\nwant %+v", monitoring.RulesFile, got, want)
	}

	// One ConfigMap per dashboard, for Grafana's sidecar, holding the
	// dashboard of config/monitoring.
	dashboards, err := monitoring.LoadDashboards(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	cms := 0
	for _, o := range r.Objects {
		if o.GetKind() != "ConfigMap" || o.GetLabels()["grafana_dashboard"] != "1" {
			continue
		}
		cms++
		if o.GetAnnotations()["grafana_folder"] != "Coxswain" {
			t.Errorf("%s lacks the extra annotation: %v", KeyOf(o), o.GetAnnotations())
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for file, text := range data {
			src, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), monitoring.DashboardsDir, file))
			if err != nil {
				t.Errorf("%s holds %s, which is no dashboard of %s", KeyOf(o), file, monitoring.DashboardsDir)
				continue
			}
			var a, b any
			if err := json.Unmarshal([]byte(text), &a); err != nil {
				t.Errorf("%s: %s does not parse: %v", KeyOf(o), file, err)
			}
			_ = json.Unmarshal(src, &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: %s differs from %s", KeyOf(o), file, monitoring.DashboardsDir)
			}
		}
	}
	if cms != len(dashboards) || cms != 3 {
		t.Errorf("%d dashboard ConfigMaps for %d dashboards, want 3", cms, len(dashboards))
	}
}

func TestChartServiceMonitorNeedsMetrics(t *testing.T) {
	values := map[string]any{
		"metrics":    map[string]any{"enabled": false},
		"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	}
	if _, err := RenderChart(chartDir(), "coxswain", InstallNamespace, values); err == nil || !strings.Contains(err.Error(), "needs metrics.enabled") {
		t.Fatalf("a ServiceMonitor without metrics rendered (%v)", err)
	}
	if _, err := RenderChart(chartDir(), "coxswain", InstallNamespace, map[string]any{"monitoring": map[string]any{"podMonitor": map[string]any{"enable": true}}}); err == nil {
		t.Fatal("a misspelt monitoring value passed the schema")
	}
}

// TestChartMonitoringFilesAreConfigMonitoring: the chart's copy is
// config/monitoring, byte for byte (`make bundle` writes it; `make verify`
// fails on a stale copy).
func TestChartMonitoringFilesAreConfigMonitoring(t *testing.T) {
	files, err := MonitoringChartFiles(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("%d monitoring files, want the rules and 3 dashboards", len(files))
	}
	d, err := DiffTree(chartDir(), files, []string{ChartMonitoringDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(d) > 0 {
		t.Fatalf("charts/coxswain/%s is stale; run `make bundle`:\n%s", ChartMonitoringDir, strings.Join(d, "\n"))
	}
}
