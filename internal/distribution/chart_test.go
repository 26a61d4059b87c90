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
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

func chartDir() string { return filepath.Join(testkit.RepoRoot(), ChartDir) }

func renderChart(t *testing.T, values map[string]any) *RenderedChart {
	t.Helper()
	r, err := RenderChart(chartDir(), "coxswain", InstallNamespace, values)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return r
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func controllerContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := findObject(objs, "Deployment", ControllerDeployment)
	if d == nil {
		t.Fatalf("no Deployment %s rendered", ControllerDeployment)
	}
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == "coxswain" {
			return m
		}
	}
	t.Fatalf("Deployment %s has no coxswain container", ControllerDeployment)
	return nil
}

func envValue(c map[string]any, name string) (string, bool) {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == name {
			v, _ := m["value"].(string)
			return v, true
		}
	}
	return "", false
}

func stringsOf(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		out = append(out, e.(string))
	}
	return out
}

func TestChartLintsClean(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"defaults", nil},
		{"external CA, no metrics, debug, three replicas", map[string]any{
			"replicas":  3,
			"discovery": map[string]any{"ca": map[string]any{"mode": "external"}},
			"metrics":   map[string]any{"enabled": false},
			"logLevel":  "debug",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msgs := LintChart(chartDir(), InstallNamespace, tc.values, SeverityWarning); len(msgs) > 0 {
				t.Fatalf("helm lint:\n%s", strings.Join(msgs, "\n"))
			}
		})
	}
}

func TestChartLintRejectsBadValues(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"unknown CA mode":    {"discovery": map[string]any{"ca": map[string]any{"mode": "manual"}}},
		"negative pool size": {"proxy": map[string]any{"shared": map[string]any{"replicas": -1}}},
		"unknown log level":  {"logLevel": "chatty"},
	} {
		t.Run(name, func(t *testing.T) {
			if msgs := LintChart(chartDir(), InstallNamespace, values, SeverityError); len(msgs) == 0 {
				t.Fatalf("helm lint accepted %v", values)
			}
			if _, err := RenderChart(chartDir(), "coxswain", InstallNamespace, values); err == nil {
				t.Fatalf("helm template accepted %v", values)
			}
		})
	}
}

// chartValueCases are values given to the chart and what the controller
// Deployment it renders must then hold.
var chartValueCases = []struct {
	name         string
	values       map[string]any
	image        string
	replicas     int64
	args         []string
	caMode       string
	poolSize     string
	metricsPort  bool
	cpuRequest   string
	nodeSelector map[string]any
}{
	{
		name:        "defaults",
		image:       "coxswain:v0.1.0",
		replicas:    1,
		args:        []string{"serve", "controller", "--leader-elect=true", "--metrics-bind-address=:8083", "--zap-log-level=info"},
		caMode:      "auto",
		poolSize:    "2",
		metricsPort: true,
		cpuRequest:  "100m",
	},
	{
		name: "everything set",
		values: map[string]any{
			"image":          map[string]any{"repository": "registry.example.com/coxswain", "tag": "dev"},
			"replicas":       2,
			"leaderElection": map[string]any{"enabled": false},
			"discovery":      map[string]any{"ca": map[string]any{"mode": "external"}},
			"proxy": map[string]any{"shared": map[string]any{"replicas": 5, "tracing": map[string]any{
				"otlpEndpoint": "otel.observability.svc:4317", "insecure": true, "samplingRatio": "0.5"}}},
			"logLevel":     "debug",
			"metrics":      map[string]any{"enabled": false},
			"admin":        map[string]any{"enabled": true, "certSecret": "admin-tls"},
			"resources":    map[string]any{"requests": map[string]any{"cpu": "250m"}},
			"nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
		},
		image:    "registry.example.com/coxswain:dev",
		replicas: 2,
		args: []string{"serve", "controller", "--leader-elect=false", "--metrics-bind-address=0", "--zap-log-level=debug",
			"--admin-bind-address=:8085", "--admin-cert-dir=/etc/coxswain/admin-tls",
			"--shared-proxy-tracing-otlp-endpoint=otel.observability.svc:4317", "--shared-proxy-tracing-otlp-insecure", "--shared-proxy-tracing-sampling-ratio=0.5"},
		caMode:       "external",
		poolSize:     "5",
		metricsPort:  false,
		cpuRequest:   "250m",
		nodeSelector: map[string]any{"kubernetes.io/os": "linux"},
	},
}

func TestChartValuesReachTheDeployment(t *testing.T) {
	for _, tc := range chartValueCases {
		t.Run(tc.name, func(t *testing.T) {
			r := renderChart(t, tc.values)
			d := findObject(r.Objects, "Deployment", ControllerDeployment)
			c := controllerContainer(t, r.Objects)
			if c["image"] != tc.image {
				t.Errorf("image = %v, want %s", c["image"], tc.image)
			}
			if got, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); got != tc.replicas {
				t.Errorf("replicas = %d, want %d", got, tc.replicas)
			}
			if got := stringsOf(c["args"]); !reflect.DeepEqual(got, tc.args) {
				t.Errorf("args = %q, want %q", got, tc.args)
			}
			if v, _ := envValue(c, "COXSWAIN_DISCOVERY_CA_MODE"); v != tc.caMode {
				t.Errorf("COXSWAIN_DISCOVERY_CA_MODE = %q, want %q", v, tc.caMode)
			}
			if v, _ := envValue(c, "COXSWAIN_SHARED_PROXY_REPLICAS"); v != tc.poolSize {
				t.Errorf("COXSWAIN_SHARED_PROXY_REPLICAS = %q, want %q", v, tc.poolSize)
			}
			if _, ok := envValue(c, "POD_NAMESPACE"); !ok {
				t.Error("config/manager's POD_NAMESPACE env was lost")
			}
			hasMetrics := false
			for _, p := range c["ports"].([]any) {
				hasMetrics = hasMetrics || p.(map[string]any)["name"] == "metrics"
			}
			if hasMetrics != tc.metricsPort {
				t.Errorf("metrics port present = %t, want %t", hasMetrics, tc.metricsPort)
			}
			if got, _, _ := unstructured.NestedString(c, "resources", "requests", "cpu"); got != tc.cpuRequest {
				t.Errorf("cpu request = %q, want %q", got, tc.cpuRequest)
			}
			ns, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "nodeSelector")
			if len(ns) > 0 || len(tc.nodeSelector) > 0 {
				if !reflect.DeepEqual(ns, tc.nodeSelector) {
					t.Errorf("nodeSelector = %v, want %v", ns, tc.nodeSelector)
				}
			}
			if d.GetNamespace() != InstallNamespace {
				t.Errorf("Deployment namespace = %q", d.GetNamespace())
			}
			if !strings.Contains(r.Notes, tc.caMode) {
				t.Errorf("NOTES do not mention the CA mode:\n%s", r.Notes)
			}
		})
	}
}

// TestChartRendersInReleaseNamespace: every namespaced object, and every
// ServiceAccount subject, follows --namespace.
func TestChartRendersInReleaseNamespace(t *testing.T) {
	r, err := RenderChart(chartDir(), "edge", "edge-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.Objects {
		data, _ := yaml.Marshal(o.Object)
		if strings.Contains(string(data), InstallNamespace) {
			t.Errorf("%s still names %s:\n%s", KeyOf(o), InstallNamespace, data)
		}
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			if o.GetNamespace() != "edge-system" {
				t.Errorf("%s is in namespace %q, want edge-system", KeyOf(o), o.GetNamespace())
			}
		}
	}
}
