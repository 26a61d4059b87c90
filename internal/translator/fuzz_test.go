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

package translator

import (
	"os"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// FuzzTranslate builds two inputs from the fuzz bytes: a structured cluster
// (structuredResources spends the bytes on choices among valid and invalid
// shapes) and, when they parse, the bytes as multi-document YAML of
// Kubernetes objects. Seeds are every golden input. It checks that nothing
// panics and every snapshot validates.
func FuzzTranslate(f *testing.F) {
	for _, in := range goldenInputs(f) {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		inputs := []*Resources{structuredResources(data)}
		if res, err := loadResources(data, false); err == nil {
			inputs = append(inputs, res)
		}
		for _, res := range inputs {
			r := Translate(res)
			if len(r.Snapshots) == 0 || r.Snapshots[len(r.Snapshots)-1].Scope != snapshot.SharedPool() {
				t.Fatal("the shared pool snapshot must always be present")
			}
			for _, s := range r.Snapshots {
				if err := snapshot.Validate(s); err != nil {
					t.Fatalf("snapshot %s invalid: %v", s.Scope, err)
				}
			}
		}
	})
}
