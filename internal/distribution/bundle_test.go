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
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/coxswain-go/coxswain/internal/testenv"
)

// kustomizeBin is $KUSTOMIZE (set by `make test`), else bin/kustomize.
func kustomizeBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		bin = filepath.Join(testenv.RepoRoot(), "bin", "kustomize")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kustomize not found at %s: run `make kustomize` (or `make test`): %v", bin, err)
	}
	return bin
}

func generate(t *testing.T) *Output {
	t.Helper()
	out, err := Generate(testenv.RepoRoot(), DefaultGenerateOptions(kustomizeBin(t)))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return out
}

func kustomizeObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Kustomize(kustomizeBin(t), testenv.RepoRoot(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func loadBundle(t *testing.T) (*Bundle, []byte) {
	t.Helper()
	b, err := LoadBundle(filepath.Join(testenv.RepoRoot(), BundleDir))
	if err != nil {
		t.Fatalf("loading bundle/: %v", err)
	}
	df, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), BundleDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return b, df
}

// TestGeneratedFilesAreCurrent fails when config/ changed and `make bundle`
// was not run: bundle/, bundle.Dockerfile and the chart's generated files
// must be exactly what the generator writes now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	diffs, err := generate(t).Diff(testenv.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("generated distribution files are stale; run `make bundle` and commit:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// TestBundleValidatesClean runs the operator-framework checks (CSV, CRD,
// bundle and OperatorHub) on the checked-in bundle: no errors, no warnings.
func TestBundleValidatesClean(t *testing.T) {
	b, df := loadBundle(t)
	if fs := ValidateBundle(b, df); len(fs) > 0 {
		var lines []string
		for _, f := range fs {
			lines = append(lines, f.String())
		}
		t.Fatalf("bundle validation:\n%s", strings.Join(lines, "\n"))
	}
}

func TestValidateBundleCatchesBadBundles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(b *Bundle) []byte // returns the Dockerfile to check
		want   string
	}{
		{"no icon", func(b *Bundle) []byte { b.CSV.Spec.Icon = nil; return nil }, "spec.icon"},
		{"bad icon media type", func(b *Bundle) []byte { b.CSV.Spec.Icon[0].MediaType = "image/bmp"; return nil }, "media type"},
		{"unknown capability level", func(b *Bundle) []byte { b.CSV.Annotations["capabilities"] = "Magic"; return nil }, "capability level"},
		{"unknown category", func(b *Bundle) []byte { b.CSV.Annotations["categories"] = "Networking,Toys"; return nil }, "OperatorHub category"},
		{"no minKubeVersion", func(b *Bundle) []byte { b.CSV.Spec.MinKubeVersion = ""; return nil }, "minKubeVersion"},
		{"bad maintainer email", func(b *Bundle) []byte { b.CSV.Spec.Maintainers[0].Email = "nobody"; return nil }, "email"},
		{"link without URL", func(b *Bundle) []byte { b.CSV.Spec.Links[0].URL = "docs"; return nil }, "http(s) URL"},
		{"no install mode supported", func(b *Bundle) []byte {
			for i := range b.CSV.Spec.InstallModes {
				b.CSV.Spec.InstallModes[i].Supported = false
			}
			return nil
		}, "no install mode is supported"},
		{"owned CRD missing from manifests", func(b *Bundle) []byte { b.CRDs = b.CRDs[1:]; return nil }, "not in the bundle's manifests"},
		{"owned CRD with the wrong kind", func(b *Bundle) []byte { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Kind = "Other"; return nil }, "the CRD says"},
		{"owned CRD version not served", func(b *Bundle) []byte { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Version = "v9"; return nil }, "not served"},
		{"CRD not owned", func(b *Bundle) []byte {
			b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
			return nil
		}, "not owned by the CSV"},
		{"alm-examples not JSON", func(b *Bundle) []byte { b.CSV.Annotations[annotationALMExamples] = "[{"; return nil }, "not a JSON array"},
		{"alm-example of a kind not owned", func(b *Bundle) []byte {
			b.CSV.Annotations[annotationALMExamples] = `[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]`
			return nil
		}, "not of an owned CRD"},
		{"wildcard verb in cluster permissions", func(b *Bundle) []byte {
			p := &b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}})
			return nil
		}, "wildcard (verbs=*)"},
		{"wildcard resource in permissions", func(b *Bundle) []byte {
			p := &b.CSV.Spec.InstallStrategy.StrategySpec.Permissions[0]
			p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"get"}})
			return nil
		}, "wildcard (resources=*)"},
		{"proxy ServiceAccount granted rights", func(b *Bundle) []byte {
			s := &b.CSV.Spec.InstallStrategy.StrategySpec
			s.Permissions = append(s.Permissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: ProxyServiceAccount,
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}})
			return nil
		}, "must hold no Kubernetes API rights"},
		{"proxy ServiceAccount bound by a manifest", func(b *Bundle) []byte {
			b.Others = append(b.Others, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "leak"},
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": ProxyServiceAccount}},
			}})
			return nil
		}, "binds the shared proxy"},
		{"unsupported manifest kind", func(b *Bundle) []byte {
			b.Others = append(b.Others, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": "p"},
			}})
			return nil
		}, "not supported in a registry+v1 bundle"},
		{"default channel not a channel", func(b *Bundle) []byte { b.Annotations[AnnotationDefaultChannel] = "stable"; return nil }, "not one of the channels"},
		{"wrong media type", func(b *Bundle) []byte { b.Annotations[AnnotationMediaType] = "plain"; return nil }, "registry+v1"},
		{"Dockerfile out of step with annotations", func(b *Bundle) []byte {
			return []byte(strings.ReplaceAll(string(b.Dockerfile(BundleDir)), "channels.v1=alpha", "channels.v1=beta"))
		}, "missing LABEL"},
		{"no deployment", func(b *Bundle) []byte { b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = nil; return nil }, "deployments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := loadBundle(t)
			df := tc.mutate(b)
			errs := Errors(ValidateBundle(b, df))
			for _, e := range errs {
				if strings.Contains(e.String(), tc.want) {
					return
				}
			}
			t.Fatalf("want an error containing %q, got %v", tc.want, errs)
		})
	}
}

// TestBundleCarriesTheInstall checks what the CSV and manifests hold against
// config/: the generated ClusterRole as cluster permissions, the leader
// election Role as permissions, the three Project roles and the proxy
// ServiceAccount beside the CSV, every CRD owned and exemplified.
func TestBundleCarriesTheInstall(t *testing.T) {
	b, _ := loadBundle(t)
	install := kustomizeObjects(t, "config/default")
	rulesOf := func(kind, name string) []rbacv1.PolicyRule {
		o := findObject(install, kind, name)
		if o == nil {
			t.Fatalf("config/default renders no %s %s", kind, name)
		}
		var r rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			t.Fatal(err)
		}
		return r.Rules
	}
	strat := b.CSV.Spec.InstallStrategy.StrategySpec
	if len(strat.ClusterPermissions) != 1 || strat.ClusterPermissions[0].ServiceAccountName != ControllerServiceAccount {
		t.Fatalf("cluster permissions = %+v, want one entry for %s", strat.ClusterPermissions, ControllerServiceAccount)
	}
	if !reflect.DeepEqual(strat.ClusterPermissions[0].Rules, rulesOf("ClusterRole", "coxswain-manager-role")) {
		t.Error("cluster permissions differ from config/rbac/role.yaml")
	}
	if len(strat.Permissions) != 1 || !reflect.DeepEqual(strat.Permissions[0].Rules, rulesOf("Role", "coxswain-leader-election-role")) {
		t.Errorf("permissions differ from the leader election Role: %+v", strat.Permissions)
	}
	if len(strat.DeploymentSpecs) != 1 || strat.DeploymentSpecs[0].Name != ControllerDeployment {
		t.Fatalf("deployments = %+v", strat.DeploymentSpecs)
	}
	if img := strat.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Image; img != b.CSV.Annotations[annotationContainerImage] {
		t.Errorf("deployment image %q != containerImage %q", img, b.CSV.Annotations[annotationContainerImage])
	}
	for _, name := range []string{"coxswain-infra-project-lifecycle", "coxswain-infra-project-status", "coxswain-infra-project-reader"} {
		o := findObject(b.Others, "ClusterRole", name)
		if o == nil {
			t.Errorf("bundle lacks ClusterRole %s", name)
			continue
		}
		if !reflect.DeepEqual(o.Object["rules"], findObject(install, "ClusterRole", name).Object["rules"]) {
			t.Errorf("ClusterRole %s differs from config/rbac", name)
		}
	}
	if findObject(b.Others, "ServiceAccount", ProxyServiceAccount) == nil {
		t.Errorf("bundle lacks the ServiceAccount %s", ProxyServiceAccount)
	}
	if len(b.CRDs) != len(FilterKind(install, "CustomResourceDefinition")) {
		t.Errorf("bundle has %d CRDs, config/crd %d", len(b.CRDs), len(FilterKind(install, "CustomResourceDefinition")))
	}
	for _, crd := range FilterKind(install, "CustomResourceDefinition") {
		got := findObject(b.CRDs, "CustomResourceDefinition", crd.GetName())
		if got == nil || !reflect.DeepEqual(got.Object["spec"], crd.Object["spec"]) {
			t.Errorf("bundle CRD %s differs from config/crd", crd.GetName())
		}
	}
	if b.CSV.Spec.MinKubeVersion == "" || b.CSV.Annotations["capabilities"] == "" || len(b.CSV.Spec.Icon) != 1 {
		t.Error("CSV lacks minKubeVersion, capability level or icon")
	}
}

func TestBuildBundleRejectsWhatOLMCannotCarry(t *testing.T) {
	manifests := kustomizeObjects(t, "config/manifests")
	samples := kustomizeObjects(t, "config/samples")
	opts := DefaultGenerateOptions("").Bundle

	extra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": map[string]any{"name": "stray"},
		"spec": map[string]any{"controller": "example.com/x"},
	}}
	if _, err := BuildBundle(append(append([]*unstructured.Unstructured{}, manifests...), extra), samples, opts); err == nil || !strings.Contains(err.Error(), "cannot travel") {
		t.Errorf("an IngressClass in the install must be refused, got %v", err)
	}

	var noCRD []*unstructured.Unstructured
	for _, o := range manifests {
		if !(o.GetKind() == "CustomResourceDefinition" && o.GetName() == "projects.infra.apoxy.dev") {
			noCRD = append(noCRD, o)
		}
	}
	if _, err := BuildBundle(noCRD, samples, opts); err == nil || !strings.Contains(err.Error(), "describes CRDs") {
		t.Errorf("a CSV base describing a missing CRD must be refused, got %v", err)
	}

	bad := opts
	bad.Version = "one"
	if _, err := BuildBundle(manifests, samples, bad); err == nil {
		t.Error("a non-semver version must be refused")
	}

	b, err := BuildBundle(manifests, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	var excluded []string
	for _, k := range b.Excluded {
		excluded = append(excluded, k.Kind)
	}
	for _, kind := range []string{"Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !strings.Contains(strings.Join(excluded, ","), kind) {
			t.Errorf("%s should be excluded from the bundle, excluded = %v", kind, excluded)
		}
	}
}
