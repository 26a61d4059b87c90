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

package writer

import (
	"encoding/json"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusPatch is the JSON merge patch, with the optimistic lock, that
// takes orig's status to obj's. The writer changes nothing but the status
// of the copy it patches, so the merge patch of the two whole objects
// (client.MergeFromWithOptimisticLock, which copies both again and
// encodes and decodes every field of each) is the lock's resourceVersion
// plus the merge patch of the two statuses: that is what is built, from
// the statuses alone. TestStatusPatchEqualsWholeObjectPatch holds the two
// equal. An object without a Status field takes the whole-object way.
func statusPatch(orig, obj client.Object) ([]byte, error) {
	from, ok := statusField(orig)
	to, ok2 := statusField(obj)
	if !ok || !ok2 || orig.GetResourceVersion() == "" {
		return client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}).Data(obj)
	}
	fromJSON, err := json.Marshal(from)
	if err != nil {
		return nil, err
	}
	toJSON, err := json.Marshal(to)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(fromJSON, toJSON)
	if err != nil {
		return nil, err
	}
	type lock struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	patch := struct {
		Metadata lock            `json:"metadata"`
		Status   json.RawMessage `json:"status,omitempty"`
	}{Metadata: lock{orig.GetResourceVersion()}}
	if string(diff) != "{}" {
		patch.Status = diff
	}
	return json.Marshal(patch)
}

// statusField is the value of obj's Status field (a typed API object).
func statusField(obj client.Object) (any, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("Status")
	if !f.IsValid() || !f.CanInterface() {
		return nil, false
	}
	return f.Interface(), true
}
