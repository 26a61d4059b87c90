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
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// One kube-apiserver for the package, started by the first test that needs
// it. It has the Gateway API CRDs and OLM's ClusterServiceVersion CRD, but
// none of Coxswain's: the install paths under test bring those.
var api = testkit.Envtest{Scheme: envtestScheme(), Adjust: withoutCoxswainCRDs}

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

// withoutCoxswainCRDs leaves the Gateway API CRDs and adds OLM's
// ClusterServiceVersion.
func withoutCoxswainCRDs(env *envtest.Environment) error {
	gwapi, err := testkit.GatewayAPICRDDir()
	if err != nil {
		return err
	}
	env.CRDDirectoryPaths = []string{gwapi}
	env.CRDs = []*apiextensionsv1.CustomResourceDefinition{olmcrds.ClusterServiceVersion()}
	return nil
}

// envtestScheme knows the built-in kinds and CRDs.
func envtestScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	return scheme
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func ensureNamespace(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

// waitEstablished waits (bounded) until every CRD is Established.
func waitEstablished(ctx context.Context, t *testing.T, c client.Client, crds []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: o.GetName()}, &crd); err != nil {
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", o.GetName(), err)
		}
	}
}

func can(ctx context.Context, t *testing.T, c client.Client, ns, sa string, attrs authorizationv1.ResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	if err := c.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestOLMInstallsTheBundle installs the checked-in bundle as OLM would, for
// real: the CSV (validated by OLM's own CSV schema), the CRDs, the install
// strategy turned into ServiceAccounts, RBAC and the Deployment, the other
// manifests, then every alm-example. Every object must be accepted, and the
// resulting RBAC must let the controller work and the proxy do nothing.
func TestOLMInstallsTheBundle(t *testing.T) {
	c := api.Client(t)
	ctx := testContext(t)
	const ns = "coxswain-olm"
	ensureNamespace(ctx, t, c, ns)
	b, _ := loadBundle(t)

	csv, err := CSVObject(b.CSV)
	if err != nil {
		t.Fatal(err)
	}
	csv.SetNamespace(ns)
	if err := testkit.ServerSideApply(ctx, c, csv); err != nil {
		t.Fatalf("the ClusterServiceVersion is refused by OLM's CRD schema: %v", err)
	}
	// The schema does bite: an owned CRD without its kind is refused.
	broken := csv.DeepCopy()
	owned, _, _ := unstructured.NestedSlice(broken.Object, "spec", "customresourcedefinitions", "owned")
	delete(owned[0].(map[string]any), "kind")
	_ = unstructured.SetNestedSlice(broken.Object, owned, "spec", "customresourcedefinitions", "owned")
	broken.SetName("coxswain.v0.0.1-broken")
	if err := testkit.ServerSideApply(ctx, c, broken, client.DryRunAll); err == nil {
		t.Error("OLM's CSV schema accepted an owned CRD without a kind")
	}

	objs, err := b.InstallObjects(ns)
	if err != nil {
		t.Fatal(err)
	}
	crds := FilterKind(objs, "CustomResourceDefinition")
	for _, o := range objs {
		if err := testkit.ServerSideApply(ctx, c, o); err != nil {
			t.Errorf("%s refused: %v", KeyOf(o), err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	waitEstablished(ctx, t, c, crds)

	applyALMExamples(ctx, t, c, b, ns)

	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ControllerDeployment}, &dep); err != nil {
		t.Fatalf("the controller Deployment was not created: %v", err)
	}
	if got := dep.Spec.Template.Spec.ServiceAccountName; got != ControllerServiceAccount {
		t.Errorf("Deployment runs as %q", got)
	}

	gw := func(verb, resource, sub string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: resource, Subresource: sub, Verb: verb}
	}
	lease := authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Namespace: ns, Verb: "update", Name: "coxswain-leader-lock"}
	tokenReview := authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}
	for _, a := range []authorizationv1.ResourceAttributes{gw("watch", "httproutes", ""), gw("patch", "gateways", "status"), lease, tokenReview} {
		if !can(ctx, t, c, ns, ControllerServiceAccount, a) {
			t.Errorf("the controller may not %s %s/%s", a.Verb, a.Resource, a.Subresource)
		}
		if can(ctx, t, c, ns, ProxyServiceAccount, a) {
			t.Errorf("the proxy may %s %s/%s", a.Verb, a.Resource, a.Subresource)
		}
	}
	if can(ctx, t, c, ns, ControllerServiceAccount, gw("update", "httproutes", "")) {
		t.Error("the controller may update route specs")
	}
}

// applyALMExamples applies every alm-example of the bundle's CSV, the
// namespaced ones in ns: each must be accepted.
func applyALMExamples(ctx context.Context, t *testing.T, c client.Client, b *Bundle, ns string) {
	t.Helper()
	var alm []map[string]any
	if err := json.Unmarshal([]byte(b.CSV.Annotations[annotationALMExamples]), &alm); err != nil {
		t.Fatal(err)
	}
	for _, e := range alm {
		ex := &unstructured.Unstructured{Object: e}
		mapping, err := c.RESTMapper().RESTMapping(ex.GroupVersionKind().GroupKind(), ex.GroupVersionKind().Version)
		if err != nil {
			t.Errorf("alm-example %s: %v", KeyOf(ex), err)
			continue
		}
		if mapping.Scope.Name() == "namespace" {
			ex.SetNamespace(ns)
		}
		if err := testkit.ServerSideApply(ctx, c, ex); err != nil {
			t.Errorf("alm-example %s refused: %v", KeyOf(ex), err)
		}
	}
}

// TestHelmChartInstalls server-side-applies `helm template` output (dry
// run): CRDs first, then every template, with default and non-default
// values and namespaces.
func TestHelmChartInstalls(t *testing.T) {
	c := api.Client(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		ns     string
		values map[string]any
	}{
		{InstallNamespace, nil},
		{"edge-system", map[string]any{
			"replicas": 2, "discovery": map[string]any{"ca": map[string]any{"mode": "external"}},
			"metrics": map[string]any{"enabled": false}, "logLevel": "debug",
			"proxy": map[string]any{"shared": map[string]any{"replicas": 4}},
		}},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			ensureNamespace(ctx, t, c, tc.ns)
			r, err := RenderChart(chartDir(), "coxswain", tc.ns, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.CRDs) == 0 || len(r.Objects) == 0 {
				t.Fatalf("the chart rendered %d CRDs and %d objects", len(r.CRDs), len(r.Objects))
			}
			for _, o := range append(append([]*unstructured.Unstructured{}, r.CRDs...), r.Objects...) {
				if err := testkit.ServerSideApply(ctx, c, o, client.DryRunAll); err != nil {
					t.Errorf("%s refused: %v", KeyOf(o), err)
				}
			}
		})
	}
}

// TestInstallManifestApplies server-side-applies dist/install.yaml (dry
// run) after creating its Namespace.
func TestInstallManifestApplies(t *testing.T) {
	c := api.Client(t)
	ctx := testContext(t)
	name, objs := installManifest(t)
	if len(objs) == 0 {
		t.Fatalf("%s is empty", name)
	}
	for _, o := range FilterKind(objs, "Namespace") {
		if err := testkit.ServerSideApply(ctx, c, o); err != nil {
			t.Fatalf("%s: %s refused: %v", name, KeyOf(o), err)
		}
	}
	for _, o := range objs {
		if err := testkit.ServerSideApply(ctx, c, o, client.DryRunAll); err != nil {
			t.Errorf("%s: %s refused: %v", name, KeyOf(o), err)
		}
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: InstallNamespace, Name: ControllerDeployment}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a dry run must persist nothing, got %v", err)
	}
}
