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
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// FuzzTranslate builds two inputs from the fuzz bytes: a structured cluster
// (structuredResources spends the bytes on choices among valid and invalid
// shapes) and, when they parse, the bytes as multi-document YAML of
// Kubernetes objects. Seeds are every golden input. It checks that nothing
// panics, every snapshot validates and the input is left as it was.
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
			// The provider hands the translator the informer cache's own
			// objects (no deep copy): translating must not change them.
			before, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			r := Translate(res)
			if after, _ := json.Marshal(res); !bytes.Equal(before, after) {
				t.Fatalf("Translate changed its input:\n%s", firstDifference(before, after))
			}
			if len(r.Snapshots) == 0 || r.Snapshots[len(r.Snapshots)-1].Scope != snapshot.SharedPool() {
				t.Fatal("the shared pool snapshot must always be present")
			}
			for _, s := range r.Snapshots {
				if err := snapshot.Validate(s); err != nil {
					t.Fatalf("snapshot %s invalid: %v", s.Scope, err)
				}
				sameInEveryLayout(t, s)
			}
		}
	})
}

// sameInEveryLayout checks that s travels through discovery unchanged in
// every resource layout: split, then reassembled as a proxy does.
func sameInEveryLayout(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	want, err := snapshot.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, layout := range []snapshot.Layout{snapshot.LayoutListeners, snapshot.LayoutVirtualHosts, snapshot.LayoutVersionBuckets} {
		res, err := snapshot.ResourcesIn(layout, s)
		if err != nil {
			t.Fatalf("snapshot %s, %s layout: %v", s.Scope, layout, err)
		}
		got, _, err := (&snapshot.Assembler{Scope: s.Scope, Layout: layout}).Assemble(res)
		if err != nil {
			t.Fatalf("snapshot %s, %s layout: reassembly: %v", s.Scope, layout, err)
		}
		if b, _ := snapshot.Encode(got); !bytes.Equal(b, want) {
			t.Fatalf("snapshot %s changes through the %s layout:\n%s", s.Scope, layout, firstDifference(want, b))
		}
	}
}

// firstDifference shows where two encodings part, with some context.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("before: ...%s\nafter:  ...%s", a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
}
