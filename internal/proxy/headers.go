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

package proxy

import (
	"net/http"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

type header struct{ name, value string }

// headerMod is a HeaderModifier with canonical names.
type headerMod struct {
	set    []header
	add    []header
	remove []string
}

func (m *headerMod) apply(h http.Header) {
	if m == nil {
		return
	}
	for _, kv := range m.set {
		h[kv.name] = []string{kv.value}
	}
	for _, kv := range m.add {
		old := h[kv.name]
		h[kv.name] = append(old[:len(old):len(old)], kv.value) // never write into a shared array
	}
	for _, n := range m.remove {
		delete(h, n)
	}
}

func compileHeaderMod(hm *snapshot.HeaderModifier) *headerMod {
	if hm == nil || (len(hm.Set) == 0 && len(hm.Add) == 0 && len(hm.Remove) == 0) {
		return nil
	}
	m := &headerMod{}
	for _, h := range hm.Set {
		m.set = append(m.set, header{http.CanonicalHeaderKey(h.Name), h.Value})
	}
	for _, h := range hm.Add {
		m.add = append(m.add, header{http.CanonicalHeaderKey(h.Name), h.Value})
	}
	for _, n := range hm.Remove {
		m.remove = append(m.remove, http.CanonicalHeaderKey(n))
	}
	return m
}
