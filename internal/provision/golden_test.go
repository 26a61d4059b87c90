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

package provision

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	testInstallNS   = "coxswain-system"
	testImage       = "ghcr.io/coxswain-go/coxswain:v0.1.0"
	testTrustBundle = "-----BEGIN CERTIFICATE-----\nMIIBdGVzdA==\n-----END CERTIFICATE-----\n"
)

// goldenCase is the input of one golden test. Exactly one of the three
// sections is used: a dedicated Gateway (gateway, gatewayClass, parameters),
// the shared pool (sharedPool), or a shared VIP Service (vip).
type goldenCase struct {
	InstallNamespace string                                      `json:"installNamespace,omitempty"`
	DefaultImage     *string                                     `json:"defaultImage,omitempty"`
	TrustBundle      *string                                     `json:"trustBundle,omitempty"`
	GatewayClass     *gwv1.GatewayClass                          `json:"gatewayClass,omitempty"`
	Gateway          *gwv1.Gateway                               `json:"gateway,omitempty"`
	Parameters       []gatewayv1alpha1.CoxswainGatewayParameters `json:"parameters,omitempty"`
	SharedPool       *struct {
		Replicas int32 `json:"replicas"`
	} `json:"sharedPool,omitempty"`
	VIP *struct {
		Gateway     *gwv1.Gateway          `json:"gateway"`
		Assignments []portalloc.Assignment `json:"assignments"`
		ServiceType corev1.ServiceType     `json:"serviceType,omitempty"`
	} `json:"vip,omitempty"`
}

// goldenResult is the rendered output of one case.
type goldenResult struct {
	Dedicated   *bool                    `json:"dedicated,omitempty"`
	Error       string                   `json:"error,omitempty"`
	Sanitized   []string                 `json:"sanitized,omitempty"`
	Objects     []map[string]interface{} `json:"objects,omitempty"`
	Assignments []portalloc.Assignment   `json:"assignmentsReadBack,omitempty"`
}

func renderCase(t *testing.T, c goldenCase) goldenResult {
	t.Helper()
	ns := c.InstallNamespace
	if ns == "" {
		ns = testInstallNS
	}
	image := testImage
	if c.DefaultImage != nil {
		image = *c.DefaultImage
	}
	trust := testTrustBundle
	if c.TrustBundle != nil {
		trust = *c.TrustBundle
	}
	var res goldenResult
	var objs []Object
	switch {
	case c.SharedPool != nil:
		objs = RenderSharedPool(ns, image, SharedPoolOptions{Replicas: c.SharedPool.Replicas})
	case c.VIP != nil:
		typ := c.VIP.ServiceType
		if typ == "" {
			typ = corev1.ServiceTypeLoadBalancer
		}
		var svc *corev1.Service
		if typ == corev1.ServiceTypeLoadBalancer {
			svc = RenderVIPService(c.VIP.Gateway, ns, c.VIP.Assignments)
		} else {
			svc = RenderVIPServiceOfType(c.VIP.Gateway, ns, c.VIP.Assignments, typ)
		}
		objs = []Object{svc}
		res.Assignments = AssignmentsFromVIPServices([]*corev1.Service{svc})
	default:
		eff, dedicated, err := Resolve(c.Gateway, c.GatewayClass, c.Parameters)
		res.Dedicated = &dedicated
		if err != nil {
			res.Error = err.Error()
			return res
		}
		if !dedicated {
			return res
		}
		d, err := RenderDedicated(DedicatedInput{Gateway: c.Gateway, Effective: eff, InstallNamespace: ns, DefaultImage: image, TrustBundle: trust})
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Sanitized = d.Sanitized
		objs = d.Objects()
	}
	for _, o := range objs {
		u, err := ToUnstructured(o)
		if err != nil {
			t.Fatalf("ToUnstructured: %v", err)
		}
		res.Objects = append(res.Objects, u.Object)
	}
	return res
}

func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 25 {
		t.Fatalf("want at least 25 golden cases, have %d", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var c goldenCase
			if err := yaml.UnmarshalStrict(raw, &c); err != nil {
				t.Fatalf("parse %s: %v", in, err)
			}
			got, err := yaml.Marshal(renderCase(t, c))
			if err != nil {
				t.Fatal(err)
			}
			// Rendering is deterministic: a second run is byte-identical.
			again, _ := yaml.Marshal(renderCase(t, c))
			if !bytes.Equal(got, again) {
				t.Fatalf("rendering is not deterministic")
			}
			testkit.Golden(t, filepath.Join("testdata", name+".out.yaml"), got)
		})
	}
}
