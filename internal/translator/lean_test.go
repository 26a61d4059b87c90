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
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestLeanBackendsTranslateAlike: every golden input translates to the
// same Result whole and with its EndpointSlices and backend Services cut
// by LeanEndpointSlice and LeanBackendService, as the controller's cache
// keeps them. A translator that comes to read more of either fails here
// (backends-as-the-cluster-writes-them has what they cut) until the cut
// keeps it.
func TestLeanBackendsTranslateAlike(t *testing.T) {
	for _, in := range goldenInputs(t) {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			cut := 0
			lean, err := loadResourcesThen(data, true, func(obj any) {
				switch o := obj.(type) {
				case *discoveryv1.EndpointSlice:
					LeanEndpointSlice(o)
					cut++
				case *corev1.Service:
					if ClassifyService(goldenInstallNamespace, o) == ServiceBackend {
						LeanBackendService(o)
						cut++
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if cut == 0 {
				t.Skip("no EndpointSlice or backend Service")
			}
			whole, got := encodeResult(t, Translate(loadGolden(t, in))), encodeResult(t, Translate(lean))
			if !bytes.Equal(whole, got) {
				t.Errorf("cut backends translate differently:\n%s", testkit.Diff(string(whole), string(got)))
			}
		})
	}
}
