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

package describe

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/admin"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestDescribe runs against a real kube-apiserver (envtest): a Gateway
// whose status is all True describes without problems and lists its
// listener and attached route; an HTTPRoute with a ResolvedRefs=False
// parent, a Service without ready endpoints, a missing Service and a
// Warning Event reports each as a problem.
func TestDescribe(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := gwv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	env := &testkit.Envtest{Scheme: scheme}
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "default"
	now := metav1.Now()
	cond := func(typ string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionTrue
		if !ok {
			s = metav1.ConditionFalse
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: 1}
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	mustCreate(ctx, t, c, gw)
	gw.Status = gwv1.GatewayStatus{
		Addresses:  []gwv1.GatewayStatusAddress{{Value: "10.0.0.9"}},
		Conditions: []metav1.Condition{cond("Accepted", true, "Accepted", "Gateway is accepted"), cond("Programmed", true, "Programmed", "2 of 2 proxies acked")},
		Listeners: []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 1, SupportedKinds: []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}},
			Conditions: []metav1.Condition{cond("Accepted", true, "Accepted", "listener is valid"), cond("Conflicted", false, "NoConflicts", "no conflicts")}}},
	}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	rt := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
		Hostnames:       []gwv1.Hostname{"app.example.com"},
		Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{
			{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "app", Port: ptr.To(gwv1.PortNumber(80))}}},
			{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "idle", Port: ptr.To(gwv1.PortNumber(80))}}},
			{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "missing", Port: ptr.To(gwv1.PortNumber(80))}}},
		}}}}}
	mustCreate(ctx, t, c, rt)
	rt.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "web"}, ControllerName: names.ControllerName,
		Conditions: []metav1.Condition{cond("Accepted", true, "Accepted", "route is accepted"), cond("ResolvedRefs", false, "BackendNotFound", "backendRef default/missing: Service not found")}}}
	if err := c.Status().Update(ctx, rt); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"app", "idle"} {
		mustCreate(ctx, t, c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}})
	}
	mustCreate(ctx, t, c, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "app-1", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}}, {Addresses: []string{"10.1.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}})
	mustCreate(ctx, t, c, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: ns}, Type: corev1.EventTypeWarning, Reason: "Example",
		Message: "something went wrong", InvolvedObject: corev1.ObjectReference{Kind: "HTTPRoute", Namespace: ns, Name: "app"}, LastTimestamp: now})

	rep, err := Gateway(ctx, c, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(rep.Lines, "\n")
	for _, want := range []string{"Gateway default/web (class coxswain", "address 10.0.0.9", "listener http: HTTP port 80, hostname *, 1 routes attached", "HTTPRoute default/app", "Programmed=True"} {
		if !strings.Contains(text, want) {
			t.Errorf("Gateway report lacks %q:\n%s", want, text)
		}
	}
	// The route's ResolvedRefs=False shows under the Gateway too.
	if rep.Problems != 1 {
		t.Errorf("Gateway report: %d problems, want 1 (the attached route's ResolvedRefs):\n%s", rep.Problems, text)
	}

	rep, err = HTTPRoute(ctx, c, ns, "app")
	if err != nil {
		t.Fatal(err)
	}
	text = strings.Join(rep.Lines, "\n")
	for _, want := range []string{
		"PROBLEM: ResolvedRefs=False (BackendNotFound)",
		"backend Service default/app:80: 1 ready endpoints",
		"PROBLEM: backend Service default/idle:80 has no ready endpoints",
		"PROBLEM: backend Service default/missing:80 does not exist",
		"PROBLEM: event Example: something went wrong",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("HTTPRoute report lacks %q:\n%s", want, text)
		}
	}
	if rep.Problems != 4 {
		t.Errorf("HTTPRoute report: %d problems, want 4:\n%s", rep.Problems, text)
	}
	if _, err := HTTPRoute(ctx, c, ns, "nope"); err == nil {
		t.Error("a missing HTTPRoute: no error")
	}

	// An Ingress the controller never gave an address.
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To("coxswain"),
		Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	mustCreate(ctx, t, c, ing)
	rep, err = Ingress(ctx, c, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	text = strings.Join(rep.Lines, "\n")
	if rep.Problems != 1 || !strings.Contains(text, "PROBLEM: no load balancer address") || !strings.Contains(text, "host web.example.com path /") ||
		!strings.Contains(text, "backend Service default/app:80: 1 ready endpoints") {
		t.Errorf("Ingress report (%d problems):\n%s", rep.Problems, text)
	}
}

func mustCreate(ctx context.Context, t *testing.T, c interface {
	Create(context.Context, client.Object, ...client.CreateOption) error
}, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// TestProxiesFromTheFleet: the proxies serving a Gateway, at its
// generation, are said; one behind or refusing, or none, is a problem.
func TestProxiesFromTheFleet(t *testing.T) {
	p := func(node string, gen int64, rejected bool) admin.FleetProxy {
		fp := admin.FleetProxy{Proxy: discovery.Proxy{NodeID: node, Scope: "shared", BoundPorts: []int32{80},
			Gateways: []snapshot.GatewayRef{{Namespace: "apps", Name: "web", Generation: gen}}}, SVIDExpiresIn: "1h0m0s"}
		if rejected {
			fp.Rejected = &discovery.ProxyRejection{Version: "v9", Detail: "bind 80: address already in use"}
		}
		return fp
	}
	for _, c := range []struct {
		name     string
		fleet    admin.FleetView
		problems int
		want     string
	}{
		{"all current", admin.FleetView{Leader: true, Proxies: []admin.FleetProxy{p("a", 3, false), p("b", 3, false)}}, 0, "proxy b (scope shared) serves generation 3"},
		{"one behind", admin.FleetView{Leader: true, Proxies: []admin.FleetProxy{p("a", 3, false), p("b", 2, false)}}, 1, "proxy b (scope shared) serves generation 2, behind 3"},
		{"one refusing", admin.FleetView{Leader: true, Proxies: []admin.FleetProxy{p("a", 2, true)}}, 1, "refused snapshot v9: bind 80"},
		{"none", admin.FleetView{Leader: true}, 1, "no connected proxy serves this Gateway"},
		{"standby", admin.FleetView{}, 1, "standby"},
	} {
		r := &Report{}
		r.Proxies(c.fleet, "apps", "web", 3)
		out := strings.Join(r.Lines, "\n")
		if r.Problems != c.problems || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d problems, want %d; output:\n%s", c.name, r.Problems, c.problems, out)
		}
	}
}
