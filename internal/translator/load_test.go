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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Test input conventions (testdata/*.in.yaml):
//   - The controller is installed in goldenInstallNamespace. Services are
//     sorted as internal/provider sorts them (Resources.SetServices): the
//     shared pool's Service, the VIP Services (whose ports persist the
//     internal ports) and the dedicated Services carry the labels,
//     annotations and names internal/provision renders. Strict loading
//     rejects a Service that looks like Coxswain's but does not classify.
//   - Deployments are dedicated proxy Deployments and must carry the labels
//     provision renders (internal/provider lists only those).
//   - Secret stringData values TEST_CERT and TEST_KEY are replaced by
//     testdata/tls.crt and testdata/tls.key; stringData is merged into data
//     as the apiserver does. A ConfigMap data value TEST_CERT is replaced
//     by testdata/tls.crt too (a CA bundle).

// goldenInstallNamespace is the install namespace of every golden input.
const goldenInstallNamespace = "coxswain-system"

var testPEM = map[string][]byte{}

func testFile(name string) []byte {
	if b, ok := testPEM[name]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	testPEM[name] = b
	return b
}

// loadGolden reads and strictly loads the golden input file in.
func loadGolden(t testing.TB, in string) *Resources {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadResources(data, true)
	if err != nil {
		t.Fatalf("load %s: %v", in, err)
	}
	return res
}

// loadResources decodes multi-document YAML with the golden conventions.
// strict rejects unknown fields and kinds (golden inputs); the fuzz test
// decodes leniently.
func loadResources(data []byte, strict bool) (*Resources, error) {
	return loadResourcesThen(data, strict, nil)
}

// loadResourcesThen is loadResources with then (when set) called on each
// object after the golden conventions.
func loadResourcesThen(data []byte, strict bool, then func(obj any)) (*Resources, error) {
	return Decode(data, DecodeOptions{Strict: strict, InstallNamespace: goldenInstallNamespace, Check: func(obj any) error {
		if err := goldenCheck(obj, strict); err != nil {
			return err
		}
		if then != nil {
			then(obj)
		}
		return nil
	}})
}

// goldenCheck applies the golden input conventions to one object.
func goldenCheck(obj any, strict bool) error {
	switch o := obj.(type) {
	case *corev1.Service:
		if err := checkGoldenService(o); strict && err != nil {
			return err
		}
	case *corev1.Secret:
		for k, v := range o.StringData {
			switch strings.TrimSpace(v) {
			case "TEST_CERT":
				o.StringData[k] = string(testFile("tls.crt"))
			case "TEST_KEY":
				o.StringData[k] = string(testFile("tls.key"))
			}
		}
	case *corev1.ConfigMap:
		for k, v := range o.Data {
			if strings.TrimSpace(v) == "TEST_CERT" {
				o.Data[k] = string(testFile("tls.crt"))
			}
		}
	case *appsv1.Deployment:
		if !labels.SelectorFromSet(names.DedicatedProxySelector()).Matches(labels.Set(o.Labels)) {
			// internal/provider lists only dedicated proxy Deployments.
			return fmt.Errorf("golden Deployment %s/%s lacks the dedicated proxy labels %v", o.Namespace, o.Name, names.DedicatedProxySelector())
		}
	}
	return nil
}

// checkGoldenService rejects a Service that looks like one Coxswain renders
// (in the install namespace, or carrying Coxswain's managed-by or a
// component label) but that production's ClassifyService does not
// recognise: a golden written with other labels than provision renders
// would test a classification production never makes.
func checkGoldenService(s *corev1.Service) error {
	if ClassifyService(goldenInstallNamespace, s) != ServiceBackend {
		return nil
	}
	_, component := s.Labels[names.LabelComponent]
	if s.Namespace == goldenInstallNamespace || component || s.Labels[names.LabelManagedBy] == names.ValueManagedBy {
		return fmt.Errorf("golden Service %s/%s looks like one Coxswain renders but does not classify as one; give it the labels internal/provision renders (internal/names)", s.Namespace, s.Name)
	}
	return nil
}
