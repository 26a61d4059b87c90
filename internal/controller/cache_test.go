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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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
