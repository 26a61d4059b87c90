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

package testkit

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of everything the
// envtest suites apply.
const FieldOwner = client.FieldOwner("coxswain-envtest")

// ServerSideApply applies a copy of obj as FieldOwner, forcing ownership.
// The copy drops resourceVersion and managedFields, so an object read back
// from the apiserver or decoded from a rendered manifest applies as is.
func ServerSideApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured, opts ...client.ApplyOption) error {
	obj = obj.DeepCopy()
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), append([]client.ApplyOption{FieldOwner, client.ForceOwnership}, opts...)...)
}
