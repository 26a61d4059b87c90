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

package provision

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a rendered Kubernetes object: metadata plus a kind. It has the
// method set of controller-runtime's client.Object, so callers pass it to a
// client as is, while this pure package links apimachinery only (no
// client-go).
type Object interface {
	metav1.Object
	runtime.Object
}

// ToUnstructured converts a rendered object into the unstructured form sent
// as a server-side apply configuration: only the fields the renderer sets,
// without status or a null creationTimestamp.
func ToUnstructured(obj Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T %s: %w", obj, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	pruneNullTimestamps(u.Object)
	if u.GetAPIVersion() == "" || u.GetKind() == "" {
		return nil, fmt.Errorf("convert %T %s: apiVersion and kind must be set", obj, obj.GetName())
	}
	return u, nil
}

// pruneNullTimestamps removes "creationTimestamp: null" from every metadata
// map (object and pod template).
func pruneNullTimestamps(m map[string]interface{}) {
	for k, v := range m {
		switch t := v.(type) {
		case map[string]interface{}:
			if k == "metadata" {
				if ts, ok := t["creationTimestamp"]; ok && ts == nil {
					delete(t, "creationTimestamp")
				}
			}
			pruneNullTimestamps(t)
		case []interface{}:
			for _, e := range t {
				if em, ok := e.(map[string]interface{}); ok {
					pruneNullTimestamps(em)
				}
			}
		}
	}
}
