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
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// normalize strips what legitimately differs between install paths: the
// managing tool's labels, and on the controller container what the chart's
// values set (image, pull policy, args, env). Everything else must match.
func normalize(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	labels := c.GetLabels()
	delete(labels, labelManagedBy)
	delete(labels, "helm.sh/chart")
	c.SetLabels(labels)
	if c.GetKind() == "Deployment" {
		cs, _, _ := unstructured.NestedSlice(c.Object, "spec", "template", "spec", "containers")
		for _, x := range cs {
			m := x.(map[string]any)
			for _, f := range []string{"image", "imagePullPolicy", "args", "env"} {
				delete(m, f)
			}
		}
		_ = unstructured.SetNestedSlice(c.Object, cs, "spec", "template", "spec", "containers")
	}
	return c.Object
}

// TestChartRendersWhatConfigInstalls: with default values, `helm template`
// (crds/ plus templates) yields exactly the objects of
// `kustomize build config/default` but the Namespace, with the same RBAC,
// CRDs, Services, ServiceAccounts, policies and Deployment shape.
func TestChartRendersWhatConfigInstalls(t *testing.T) {
	install := kustomizeObjects(t, "config/default")
	r := renderChart(t, nil)
	chart := append(append([]*unstructured.Unstructured{}, r.CRDs...), r.Objects...)

	byKey := func(objs []*unstructured.Unstructured) map[Key]*unstructured.Unstructured {
		m := map[Key]*unstructured.Unstructured{}
		for _, o := range objs {
			if _, dup := m[KeyOf(o)]; dup {
				t.Errorf("%s rendered twice", KeyOf(o))
			}
			m[KeyOf(o)] = o
		}
		return m
	}
	want, got := byKey(install), byKey(chart)
	var missing, extra []string
	for k, w := range want {
		if k.Kind == "Namespace" {
			continue
		}
		g, ok := got[k]
		if !ok {
			missing = append(missing, k.String())
			continue
		}
		if !reflect.DeepEqual(normalize(w), normalize(g)) {
			wy, _ := yaml.Marshal(normalize(w))
			gy, _ := yaml.Marshal(normalize(g))
			t.Errorf("%s differs between config/default and the chart:\n--- config\n%s\n--- chart\n%s", k, wy, gy)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k.String())
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("the chart lacks %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("the chart renders objects config/default does not: %v", extra)
	}
}

// installManifest is dist/install.yaml when `make build-installer` wrote
// it, else the same `kustomize build config/default` it would write.
func installManifest(t *testing.T) (string, []*unstructured.Unstructured) {
	t.Helper()
	path := filepath.Join(testkit.RepoRoot(), "dist", "install.yaml")
	if _, err := os.Stat(path); err == nil {
		objs, err := DecodeFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return "dist/install.yaml", objs
	}
	return "kustomize build config/default", kustomizeObjects(t, "config/default")
}

// TestInstallManifestIsCurrent: a dist/install.yaml left by an earlier
// `make build-installer` must still be what config/default renders (only the
// controller image, IMG, and the proxy image that follows it may differ).
func TestInstallManifestIsCurrent(t *testing.T) {
	name, objs := installManifest(t)
	if name != "dist/install.yaml" {
		t.Skip("no dist/install.yaml; `make build-installer` writes it (make test does)")
	}
	want := kustomizeObjects(t, "config/default")
	strip := func(objs []*unstructured.Unstructured) map[Key]map[string]any {
		m := map[Key]map[string]any{}
		for _, o := range objs {
			c := o.DeepCopy()
			if c.GetKind() == "Deployment" {
				cs, _, _ := unstructured.NestedSlice(c.Object, "spec", "template", "spec", "containers")
				for _, x := range cs {
					delete(x.(map[string]any), "image")
					// The proxy image follows the controller image.
					env, _ := x.(map[string]any)["env"].([]any)
					for _, e := range env {
						if v := e.(map[string]any); v["name"] == ProxyImageEnv {
							delete(v, "value")
						}
					}
				}
				_ = unstructured.SetNestedSlice(c.Object, cs, "spec", "template", "spec", "containers")
			}
			m[KeyOf(c)] = c.Object
		}
		return m
	}
	if got, w := strip(objs), strip(want); !reflect.DeepEqual(got, w) {
		var stale []string
		for k := range w {
			if !reflect.DeepEqual(got[k], w[k]) {
				stale = append(stale, k.String())
			}
		}
		for k := range got {
			if _, ok := w[k]; !ok {
				stale = append(stale, k.String()+" (no longer rendered)")
			}
		}
		sort.Strings(stale)
		t.Fatalf("dist/install.yaml is stale (run `make build-installer`): %v", stale)
	}
}

// boundRules gathers every rule bound to the controller
// ServiceAccount by the (Cluster)RoleBindings among objs.
func boundRules(t *testing.T, objs []*unstructured.Unstructured, sa string) (rules []map[string]any, bindings int) {
	t.Helper()
	for _, b := range objs {
		if b.GetKind() != "RoleBinding" && b.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		bound := false
		for _, s := range subjects {
			m := s.(map[string]any)
			bound = bound || (m["kind"] == "ServiceAccount" && m["name"] == sa)
		}
		if !bound {
			continue
		}
		bindings++
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		role := findObject(objs, kind, name)
		if role == nil {
			t.Errorf("%s binds the missing %s %s", KeyOf(b), kind, name)
			continue
		}
		rs, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, r := range rs {
			rules = append(rules, r.(map[string]any))
		}
	}
	return rules, bindings
}

// wildcardsOf is Wildcards (the bundle policy's rule) of a rule in its
// generic form.
func wildcardsOf(t *testing.T, rule map[string]any) []string {
	t.Helper()
	var r rbacv1.PolicyRule
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rule, &r); err != nil {
		t.Fatalf("rule %v: %v", rule, err)
	}
	return Wildcards(r)
}

// TestLeastPrivilege holds every install path to the same rule: the
// controller's roles grant no wildcard verb, resource or group, and the
// shared proxy ServiceAccount is named by no RoleBinding or
// ClusterRoleBinding at all.
func TestLeastPrivilege(t *testing.T) {
	b, _ := loadBundle(t)
	olm, err := b.InstallObjects(InstallNamespace)
	if err != nil {
		t.Fatal(err)
	}
	r := renderChart(t, nil)
	name, install := installManifest(t)
	for _, p := range []struct {
		name string
		objs []*unstructured.Unstructured
	}{{name, install}, {"helm template", r.Objects}, {"OLM bundle", olm}} {
		t.Run(p.name, func(t *testing.T) {
			rules, n := boundRules(t, p.objs, ControllerServiceAccount)
			if n == 0 || len(rules) == 0 {
				t.Fatalf("nothing is bound to %s", ControllerServiceAccount)
			}
			for _, rule := range rules {
				if w := wildcardsOf(t, rule); len(w) > 0 {
					t.Errorf("the controller is granted a wildcard %v in %v", w, rule)
				}
			}
			if _, n := boundRules(t, p.objs, ProxyServiceAccount); n > 0 {
				t.Errorf("%d binding(s) name %s; the proxy must hold no Kubernetes API rights", n, ProxyServiceAccount)
			}
			if findObject(p.objs, "ServiceAccount", ProxyServiceAccount) == nil {
				t.Errorf("no ServiceAccount %s installed", ProxyServiceAccount)
			}
		})
	}
}

// TestLeastPrivilegeCheckCanFail feeds the checks above a leaking install.
func TestLeastPrivilegeCheckCanFail(t *testing.T) {
	objs, err := Decode([]byte(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: too-much}
rules:
- apiGroups: [""]
  resources: ["*"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: too-much}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: too-much}
subjects:
- {kind: ServiceAccount, name: coxswain-shared-proxy, namespace: coxswain-system}
`))
	if err != nil {
		t.Fatal(err)
	}
	rules, n := boundRules(t, objs, ProxyServiceAccount)
	if n != 1 || len(rules) != 1 || len(wildcardsOf(t, rules[0])) != 1 {
		t.Fatalf("bindings=%d rules=%v: the leak was not seen", n, rules)
	}
}
