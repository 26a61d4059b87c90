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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiffNamesTheFirstDifference(t *testing.T) {
	d := Diff("a\nb\nc\nd\n", "a\nb\nX\nd\n")
	for _, want := range []string{"--- want", "+++ got", "- c", "+ X", "  b", "first difference at line 3"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}

func TestGoldenPassesOnEqualBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.out.yaml")
	writeFile(t, path, "a: 1\n")
	if r := record(t, func(tb testing.TB) { Golden(tb, path, []byte("a: 1\n")) }); r.failed {
		t.Fatalf("equal output failed: %s", r.message())
	}
}

func TestGoldenFailsWithADiffNamingTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "case.out.yaml")
	writeFile(t, path, "a: 1\nb: 2\n")
	r := record(t, func(tb testing.TB) { Golden(tb, path, []byte("a: 1\nb: 3\n")) })
	if !r.failed {
		t.Fatal("a different output passed")
	}
	for _, want := range []string{path, "-update", "- b: 2", "+ b: 3"} {
		if !strings.Contains(r.message(), want) {
			t.Errorf("failure lacks %q: %s", want, r.message())
		}
	}
	if got := readFile(t, path); got != "a: 1\nb: 2\n" {
		t.Errorf("a failed comparison changed the golden file: %q", got)
	}
}

func TestGoldenFailsOnAMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.out.yaml")
	r := record(t, func(tb testing.TB) { Golden(tb, path, []byte("a: 1\n")) })
	if !r.failed || !strings.Contains(r.message(), "-update") {
		t.Fatalf("a missing golden must fail and say how to create it: %s", r.message())
	}
}

func TestGoldenUpdateRewritesTheFile(t *testing.T) {
	saved := *update
	*update = true
	t.Cleanup(func() { *update = saved })
	if !Updating() {
		t.Fatal("Updating() is false under -update")
	}
	path := filepath.Join(t.TempDir(), "new", "case.out.yaml")
	if r := record(t, func(tb testing.TB) { Golden(tb, path, []byte("fresh\n")) }); r.failed {
		t.Fatalf("-update failed: %s", r.message())
	}
	if got := readFile(t, path); got != "fresh\n" {
		t.Errorf("-update wrote %q", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
