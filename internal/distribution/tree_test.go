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
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDiffTreeSeesEveryKindOfStaleness: the freshness checks (the test above
// and `make verify-distribution`) rest on DiffTree and WriteTree.
func TestDiffTreeSeesEveryKindOfStaleness(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"manifests/a.yaml": []byte("a: 1\n"), "metadata/annotations.yaml": []byte("x: y\n")}
	owned := []string{"manifests", "metadata"}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "old.yaml"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	diffs, err := DiffTree(dir, files, owned)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"missing: manifests/a.yaml", "missing: metadata/annotations.yaml", "not generated: manifests/old.yaml"}
	if !reflect.DeepEqual(diffs, want) {
		t.Fatalf("diffs = %q, want %q", diffs, want)
	}
	if err := WriteTree(dir, files, owned); err != nil {
		t.Fatal(err)
	}
	if diffs, _ := DiffTree(dir, files, owned); len(diffs) != 0 {
		t.Fatalf("after WriteTree: %q", diffs)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifests", "old.yaml")); !os.IsNotExist(err) {
		t.Fatalf("WriteTree kept a file it no longer generates: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "a.yaml"), []byte("a: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if diffs, _ := DiffTree(dir, files, owned); !reflect.DeepEqual(diffs, []string{"stale: manifests/a.yaml"}) {
		t.Fatalf("an edited file: %q", diffs)
	}
}
