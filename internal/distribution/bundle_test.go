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
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// kustomizeBin is $KUSTOMIZE (set by `make test`), else bin/kustomize.
func kustomizeBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		bin = filepath.Join(testkit.RepoRoot(), "bin", "kustomize")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kustomize not found at %s: run `make kustomize` (or `make test`): %v", bin, err)
	}
	return bin
}

func generate(t *testing.T) *Output {
	t.Helper()
	out, err := Generate(testkit.RepoRoot(), DefaultGenerateOptions(kustomizeBin(t)))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return out
}

func kustomizeObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Kustomize(kustomizeBin(t), testkit.RepoRoot(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func loadBundle(t *testing.T) (*Bundle, []byte) {
	t.Helper()
	b, err := LoadBundle(filepath.Join(testkit.RepoRoot(), BundleDir))
	if err != nil {
		t.Fatalf("loading bundle/: %v", err)
	}
	df, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), BundleDockerfile))
	if err != nil {
		t.Fatal(err)
	}
	return b, df
}

// TestGeneratedFilesAreCurrent fails when config/ changed and `make bundle`
// was not run: bundle/, bundle.Dockerfile and the chart's generated files
// must be exactly what the generator writes now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	diffs, err := generate(t).Diff(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("generated distribution files are stale; run `make bundle` and commit:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// TestBundleValidatesClean runs BundleValidators (operator-framework's
// default, OperatorHub and good-practice validators, and Coxswain's policy)
// on the checked-in bundle: no errors, no warnings.
func TestBundleValidatesClean(t *testing.T) {
	f, err := ValidateBundleDir(filepath.Join(testkit.RepoRoot(), BundleDir))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Empty() {
		t.Fatalf("bundle validation:\n%s", f)
	}
}

// brokenBundles break the checked-in bundle one way each, grouped by the
// validator of BundleValidators that must report it, at level, with a
// message containing want.
var brokenBundles = []struct {
	name   string
	mutate func(b *Bundle)
	level  apierrors.Level
	want   string
}{
	// ClusterServiceVersionValidator.
	{"no install mode supported", func(b *Bundle) {
		for i := range b.CSV.Spec.InstallModes {
			b.CSV.Spec.InstallModes[i].Supported = false
		}
	}, apierrors.LevelError, "none of InstallModeTypes are supported"},
	{"no minKubeVersion", func(b *Bundle) { b.CSV.Spec.MinKubeVersion = "" }, apierrors.LevelWarn, "minKubeVersion is not informed"},
	{"minKubeVersion not semver", func(b *Bundle) { b.CSV.Spec.MinKubeVersion = "1.x" }, apierrors.LevelError, "MinKubeVersion has an invalid value"},
	{"alm-examples not JSON", func(b *Bundle) { b.CSV.Annotations[annotationALMExamples] = "[{" }, apierrors.LevelError, "invalid example"},
	{"alm-example of a kind not owned", func(b *Bundle) {
		b.CSV.Annotations[annotationALMExamples] = `[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]`
	}, apierrors.LevelError, "example must have a provided API"},
	// CustomResourceDefinitionValidator.
	{"CRD named after another plural", func(b *Bundle) {
		_ = unstructured.SetNestedField(b.CRDs[0].Object, "others", "spec", "names", "plural")
	}, apierrors.LevelError, "must be spec.names.plural"},
	// BundleValidator.
	{"owned CRD missing from manifests", func(b *Bundle) { b.CRDs = b.CRDs[1:] }, apierrors.LevelError, "not found in bundle"},
	{"owned CRD with the wrong kind", func(b *Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Kind = "Other" }, apierrors.LevelError, "not found in bundle"},
	{"owned CRD version not in the CRD", func(b *Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Version = "v9" }, apierrors.LevelError, "not found in bundle"},
	{"CRD not owned", func(b *Bundle) {
		b.CSV.Spec.CustomResourceDefinitions.Owned = b.CSV.Spec.CustomResourceDefinitions.Owned[1:]
	}, apierrors.LevelError, "but not defined in CSV"},
	{"the controller's ServiceAccount shipped beside the CSV", func(b *Bundle) {
		b.Others = append(b.Others, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": ControllerServiceAccount},
		}})
	}, apierrors.LevelError, "invalid service account found in bundle"},
	// OperatorHubV2Validator.
	{"no icon", func(b *Bundle) { b.CSV.Spec.Icon = nil }, apierrors.LevelWarn, "csv.Spec.Icon not specified"},
	{"bad icon media type", func(b *Bundle) { b.CSV.Spec.Icon[0].MediaType = "image/bmp" }, apierrors.LevelError, "does not have a valid mediatype"},
	{"bad maintainer email", func(b *Bundle) { b.CSV.Spec.Maintainers[0].Email = "nobody" }, apierrors.LevelError, "email nobody is invalid"},
	{"link without URL", func(b *Bundle) { b.CSV.Spec.Links[0].URL = "docs" }, apierrors.LevelError, "url docs is invalid"},
	{"no provider", func(b *Bundle) { b.CSV.Spec.Provider.Name = "" }, apierrors.LevelError, "Provider.Name not specified"},
	// StandardCapabilitiesValidator, StandardCategoriesValidator.
	{"unknown capability level", func(b *Bundle) { b.CSV.Annotations["capabilities"] = "Magic" }, apierrors.LevelError, "not a valid capabilities level"},
	{"unknown category", func(b *Bundle) { b.CSV.Annotations["categories"] = "Networking,Toys" }, apierrors.LevelError, "is not in the set of standard categories"},
	// GoodPracticesValidator.
	{"no deployment", func(b *Bundle) { b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = nil }, apierrors.LevelError, "unable to find a deployment"},
	{"no resource requests", func(b *Bundle) {
		b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0].Resources.Requests = nil
	}, apierrors.LevelWarn, "unable to find the resource requests"},
	{"channel off the naming convention", func(b *Bundle) {
		b.Annotations[AnnotationChannels], b.Annotations[AnnotationDefaultChannel] = "alpha", "alpha"
	}, apierrors.LevelWarn, "not following the recommended naming convention"},
	{"owned CRD without description", func(b *Bundle) { b.CSV.Spec.CustomResourceDefinitions.Owned[0].Description = "" }, apierrors.LevelWarn, "has an empty description"},
	// PolicyValidator.
	{"wildcard verb in cluster permissions", func(b *Bundle) {
		p := &b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0]
		p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"*"}})
	}, apierrors.LevelError, "wildcard (verbs=*)"},
	{"wildcard resource in permissions", func(b *Bundle) {
		p := &b.CSV.Spec.InstallStrategy.StrategySpec.Permissions[0]
		p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"get"}})
	}, apierrors.LevelError, "wildcard (resources=*)"},
	{"proxy ServiceAccount granted rights", func(b *Bundle) {
		s := &b.CSV.Spec.InstallStrategy.StrategySpec
		s.Permissions = append(s.Permissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: ProxyServiceAccount,
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}})
	}, apierrors.LevelError, "must hold no Kubernetes API rights"},
	{"proxy ServiceAccount bound by a manifest", func(b *Bundle) {
		b.Others = append(b.Others, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "leak"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": ProxyServiceAccount}},
		}})
	}, apierrors.LevelError, "binds the shared proxy"},
}

// TestValidateBundleCatchesBadBundles validates each of brokenBundles:
// every validator of BundleValidators can fail. Unbroken, the bundle
// validates clean in memory too, so each finding is the break's.
func TestValidateBundleCatchesBadBundles(t *testing.T) {
	b, _ := loadBundle(t)
	if f, err := ValidateBundle(b); err != nil || !f.Empty() {
		t.Fatalf("the unbroken bundle, validated in memory: %v\n%s", err, f)
	}
	for _, tc := range brokenBundles {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := loadBundle(t)
			tc.mutate(b)
			f, err := ValidateBundle(b)
			if err != nil {
				t.Fatal(err)
			}
			found := f.Errors
			if tc.level == apierrors.LevelWarn {
				found = f.Warnings
			}
			for _, e := range found {
				if strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("want a %s containing %q, got:\n%s", tc.level, tc.want, f)
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
		if o.GetKind() != "CustomResourceDefinition" || o.GetName() != "projects.infra.apoxy.dev" {
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
	bad = opts
	bad.DefaultChannel = "elsewhere"
	if _, err := BuildBundle(manifests, samples, bad); err == nil || !strings.Contains(err.Error(), "not one of the channels") {
		t.Errorf("a default channel that is not a channel must be refused, got %v", err)
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
