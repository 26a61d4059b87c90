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
	"bytes"
	"path/filepath"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestGolden runs BuildBundle and ChartFiles (pure functions) on each
// testdata/*.in.yaml and compares every generated file, concatenated, with
// the matching *.out.yaml. Regenerate with `go test ./internal/distribution
// -run TestGolden -update`.
func TestGolden(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no testdata/*.in.yaml: %v", err)
	}
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			objs, err := DecodeFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var samples, install []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetAnnotations()["distribution.test/sample"] == "true" {
					samples = append(samples, o)
				} else if o.GetKind() != "ClusterServiceVersion" {
					install = append(install, o)
				}
			}
			opts := BundleOptions{Package: "widget", Version: "1.2.3", Image: "example.com/widget:v1.2.3",
				Channels: []string{"alpha", "stable"}, DefaultChannel: "stable", Icon: []byte("<svg/>")}
			b, err := BuildBundle(objs, samples, opts)
			if err != nil {
				t.Fatal(err)
			}
			files, err := b.Files()
			if err != nil {
				t.Fatal(err)
			}
			chart, err := ChartFiles(install)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			write := func(prefix string, fs map[string][]byte) {
				names := make([]string, 0, len(fs))
				for n := range fs {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					got.WriteString("### " + prefix + n + "\n")
					got.Write(fs[n])
				}
			}
			write("bundle/", files)
			write("bundle.Dockerfile", map[string][]byte{"": b.Dockerfile("bundle")})
			write("chart/", chart)
			for _, k := range b.Excluded {
				got.WriteString("### excluded: " + k.String() + "\n")
			}

			testkit.Golden(t, in[:len(in)-len(".in.yaml")]+".out.yaml", got.Bytes())
		})
	}
}
