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
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// update is the one -update flag of every package's golden tests:
// `go test ./internal/translator -update` rewrites that package's goldens.
var update = flag.Bool("update", false, "rewrite golden files from the current output instead of comparing")

// Updating reports whether this run rewrites golden files.
func Updating() bool { return *update }

// Golden compares got with the golden file at path, or rewrites the file
// under -update. A mismatch fails the test with a line diff that names the
// first differing lines and how to regenerate.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil { //nolint:gosec // golden files are checked in, world-readable like the rest of the tree
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s (want) differs from the output (got); run with -update to accept it:\n%s", path, Diff(string(want), string(got)))
	}
}

// Diff is a short line diff of want (a golden file, a first run) and got:
// the first differing line with a few lines of context on each side, and
// the line counts.
func Diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	first := 0
	for first < len(w) && first < len(g) && w[first] == g[first] {
		first++
	}
	const context = 3
	from := max(first-context, 0)
	var b strings.Builder
	b.WriteString("--- want\n+++ got\n")
	for i := from; i < first; i++ {
		b.WriteString("  " + w[i] + "\n")
	}
	for i := first; i < min(first+2*context, len(w)); i++ {
		b.WriteString("- " + w[i] + "\n")
	}
	for i := first; i < min(first+2*context, len(g)); i++ {
		b.WriteString("+ " + g[i] + "\n")
	}
	b.WriteString("(want " + strconv.Itoa(len(w)) + " lines, got " + strconv.Itoa(len(g)) + " lines; first difference at line " + strconv.Itoa(first+1) + ")")
	return b.String()
}
