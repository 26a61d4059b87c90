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

package names_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
)

func isDNS1035Label(s string) bool { return len(validation.IsDNS1035Label(s)) == 0 }

func TestObjectNames(t *testing.T) {
	long := strings.Repeat("n", 253)
	for _, c := range []struct{ ns, name string }{{"default", "web"}, {long[:63], long}, {"a.b", "x.y.z"}, {"0ns", "9"}} {
		n := names.VIPServiceName(c.ns, c.name)
		if !isDNS1035Label(n) || len(n) > 63 {
			t.Errorf("VIPServiceName(%q, %q) = %q is not a DNS-1035 label", c.ns, c.name, n)
		}
		if n != names.VIPServiceName(c.ns, c.name) {
			t.Errorf("VIPServiceName not deterministic")
		}
	}
	if names.VIPServiceName("a", "b-c") == names.VIPServiceName("a-b", "c") {
		t.Errorf("VIPServiceName collides for a/b-c and a-b/c")
	}
	if got := names.DedicatedServiceName("edge", "coxswain"); got != "edge-coxswain" {
		t.Errorf("DedicatedServiceName = %q", got)
	}
	if got := names.DedicatedServiceName("my.gw", "coxswain"); !isDNS1035Label(got) {
		t.Errorf("DedicatedServiceName(my.gw) = %q is not a DNS-1035 label", got)
	}
	if v := names.LabelValue(long); len(v) > 63 || v == names.LabelValue(long[:100]) {
		t.Errorf("LabelValue(long) = %q", v)
	}
}

// TestEndpoints pins the URLs proxies dial: they must match the discovery
// Services of config/manager.
func TestEndpoints(t *testing.T) {
	if got, want := names.DiscoveryEndpoint("ns"), "https://coxswain-controller-discovery.ns.svc:50051"; got != want {
		t.Errorf("DiscoveryEndpoint = %s, want %s", got, want)
	}
	if got, want := names.BootstrapEndpoint("ns"), "https://coxswain-controller-discovery-bootstrap.ns.svc:50052"; got != want {
		t.Errorf("BootstrapEndpoint = %s, want %s", got, want)
	}
	if got := names.BindAddress(names.HealthPort); got != ":8081" {
		t.Errorf("BindAddress(HealthPort) = %s", got)
	}
}

// TestParametersKindsMatchTheAPI keeps the parametersRef names equal to the
// API types they refer to.
func TestParametersKindsMatchTheAPI(t *testing.T) {
	if names.ParametersGroup != gatewayv1alpha1.GroupVersion.Group {
		t.Errorf("ParametersGroup = %s, API group %s", names.ParametersGroup, gatewayv1alpha1.GroupVersion.Group)
	}
	if names.IngressParametersGroup != ingressv1alpha1.GroupVersion.Group {
		t.Errorf("IngressParametersGroup = %s, API group %s", names.IngressParametersGroup, ingressv1alpha1.GroupVersion.Group)
	}
	scheme := runtime.NewScheme()
	if err := gatewayv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := ingressv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for kind, obj := range map[string]runtime.Object{
		names.ParametersKind:        &gatewayv1alpha1.CoxswainGatewayParameters{},
		names.IngressParametersKind: &ingressv1alpha1.CoxswainIngressClassParameters{},
	} {
		gvks, _, err := scheme.ObjectKinds(obj)
		if err != nil || len(gvks) != 1 || gvks[0].Kind != kind {
			t.Errorf("kind %s: the API registers %v (%v)", kind, gvks, err)
		}
	}
}
