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
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func encodeResult(t testing.TB, r *Result) []byte {
	t.Helper()
	b, err := yaml.Marshal(r)
	if err != nil {
		t.Fatalf("encode result: %v", err)
	}
	return b
}

func goldenInputs(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden inputs")
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, in := range goldenInputs(t) {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			r := Translate(loadGolden(t, in))
			for _, s := range r.Snapshots {
				if err := snapshot.Validate(s); err != nil {
					t.Errorf("snapshot %s is invalid: %v", s.Scope, err)
				}
			}
			testkit.Golden(t, filepath.Join("testdata", name+".out.yaml"), encodeResult(t, r))
		})
	}
}
