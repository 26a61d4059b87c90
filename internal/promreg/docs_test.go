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

package promreg

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// metricName finds metric names in Go source: a quoted coxswain_ name.
var metricName = regexp.MustCompile(`"(coxswain_[a-z0-9_]+)"`)

// TestEveryMetricIsDocumented fails when a metric named in the source
// (outside tests) is not in docs/metrics.md, or the doc lists one the
// source no longer has.
func TestEveryMetricIsDocumented(t *testing.T) {
	root := testkit.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	inSource := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range metricName.FindAllSubmatch(b, -1) {
			inSource[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inSource) < 20 {
		t.Fatalf("found only %d metric names in the source: the scan is broken", len(inSource))
	}
	for n := range inSource {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("metric %s is not documented in docs/metrics.md", n)
		}
	}
	for _, m := range regexp.MustCompile("`(coxswain_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		if !inSource[m[1]] {
			t.Errorf("docs/metrics.md lists %s, which the source does not have", m[1])
		}
	}
}
