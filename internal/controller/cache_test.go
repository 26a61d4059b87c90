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

package controller

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestCacheKeepsManagedFieldsOfDeploymentsAlone: the cache strips
// managedFields from everything but Deployments, whose replicas hand-off
// reads them.
func TestCacheKeepsManagedFieldsOfDeploymentsAlone(t *testing.T) {
	fields := func() []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "coxswain", Operation: metav1.ManagedFieldsOperationApply}}
	}
	transform := CacheOptions().DefaultTransform
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: fields()}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", ManagedFields: fields()}}
	for _, o := range []any{route, dep} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	if route.ManagedFields != nil {
		t.Error("an HTTPRoute was cached with its managedFields")
	}
	if len(dep.ManagedFields) != 1 {
		t.Error("a Deployment was cached without its managedFields")
	}
}

// TestCacheDropsLastAppliedOfWhatItOnlyReads: kubectl's last-applied
// annotation is dropped from the kinds the controller only reads, and
// every other annotation kept; a kind the controller may update keeps it.
func TestCacheDropsLastAppliedOfWhatItOnlyReads(t *testing.T) {
	annotations := func() map[string]string {
		return map[string]string{lastApplied: `{"apiVersion":"v1"}`, "example.com/keep": "yes"}
	}
	transform := CacheOptions().DefaultTransform
	dropped := []metav1.Object{
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: annotations()}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "g", Annotations: annotations()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: annotations()}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Annotations: annotations()}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "es", Annotations: annotations()}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "i", Annotations: annotations()}},
	}
	kept := []metav1.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Annotations: annotations()}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Annotations: annotations()}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc", Annotations: annotations()}},
	}
	for _, o := range append(slices.Clone(dropped), kept...) {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range dropped {
		if _, ok := o.GetAnnotations()[lastApplied]; ok || o.GetAnnotations()["example.com/keep"] != "yes" {
			t.Errorf("%T cached with annotations %v", o, o.GetAnnotations())
		}
	}
	for _, o := range kept {
		if _, ok := o.GetAnnotations()[lastApplied]; !ok {
			t.Errorf("%T cached without its last-applied annotation", o)
		}
	}
}
