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
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

func findGateway(r *Result, ns, name string) *GatewayStatus {
	for i := range r.Gateways {
		if r.Gateways[i].Namespace == ns && r.Gateways[i].Name == name {
			return &r.Gateways[i]
		}
	}
	return nil
}

func condition(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

// TestNoInternalPortAvailable exhausts the internal port range: the
// Gateways that find no port get a Warning Event and Programmed=False, the
// others keep working, and the snapshot stays valid.
func TestNoInternalPortAvailable(t *testing.T) {
	res := generate(0, 2, 0)
	total := int(portalloc.Max-portalloc.Min) + 1
	// 64 listeners per Gateway (the API maximum): enough Gateways to
	// want more ports than the range holds.
	nGW := total/64 + 2
	for g := 0; g < nGW; g++ {
		gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: fmt.Sprintf("gw-%04d", g)}, Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain"}}
		for l := 0; l < 64; l++ {
			gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: gwv1.SectionName(fmt.Sprintf("l%d", l)), Port: gwv1.PortNumber(1000 + l), Protocol: gwv1.HTTPProtocolType})
		}
		res.Gateways = append(res.Gateways, gw)
	}
	r := Translate(res)
	if len(r.InternalPorts) != total {
		t.Fatalf("assigned %d internal ports, want the whole range %d", len(r.InternalPorts), total)
	}
	for _, s := range r.Snapshots {
		if err := snapshot.Validate(s); err != nil {
			t.Fatalf("invalid snapshot: %v", err)
		}
	}
	first := findGateway(r, "infra", "gw-0000")
	last := findGateway(r, "infra", fmt.Sprintf("gw-%04d", nGW-1))
	if c := condition(first.Status.Conditions, status.TypeProgrammed); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("first Gateway Programmed = %+v, want True", c)
	}
	c := condition(last.Status.Conditions, status.TypeProgrammed)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != status.ReasonNoResources {
		t.Errorf("last Gateway Programmed = %+v, want False/NoResources", c)
	}
	lc := condition(last.Status.Listeners[0].Conditions, status.TypeProgrammed)
	if lc == nil || lc.Status != metav1.ConditionFalse {
		t.Errorf("unassigned listener Programmed = %+v, want False", lc)
	}
	events := 0
	for _, e := range r.Events {
		if e.Reason == status.EventNoInternalPortAvailable && e.Type == "Warning" {
			events++
		}
	}
	if want := nGW*64 - total; events != want {
		t.Errorf("%d NoInternalPortAvailable events, want %d", events, want)
	}
}

// TestMakeBeforeBreak flips the dedicated Deployment's readiness: not
// ready, the Gateway is in both snapshots; ready, only in its own; a new
// Deployment generation not yet observed by the Deployment controller puts
// it back in both.
func TestMakeBeforeBreak(t *testing.T) {
	res := generate(20, 2, 1)
	res.GatewayParameters = append(res.GatewayParameters, &gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "dedicated"}})
	gw := res.Gateways[0]
	gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "dedicated"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: gw.Name + "-coxswain"}}
	res.DedicatedDeployments = append(res.DedicatedDeployments, dep)

	servedBy := func(r *Result) map[string]bool {
		out := map[string]bool{}
		for _, s := range r.Snapshots {
			for _, g := range s.Gateways {
				if g.Name == gw.Name && len(s.Listeners) > 0 {
					out[s.Scope.String()] = true
				}
			}
		}
		return out
	}
	r := Translate(res)
	if got := servedBy(r); !got["shared"] || !got["gateway/infra/gw-0"] {
		t.Fatalf("not ready: served by %v, want shared and dedicated", got)
	}
	if c := condition(findGateway(r, "infra", gw.Name).Status.Conditions, status.TypeDedicatedProxyReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != status.ReasonProvisioning {
		t.Fatalf("not ready: DedicatedProxyReady = %+v", c)
	}
	if len(SharedPortKeys(res)) != 2 {
		t.Fatalf("not ready: SharedPortKeys = %v, want the Gateway's two ports", SharedPortKeys(res))
	}
	dep.Status.ReadyReplicas, dep.Status.UpdatedReplicas = 1, 1
	r = Translate(res)
	if got := servedBy(r); got["shared"] || !got["gateway/infra/gw-0"] {
		t.Fatalf("ready: served by %v, want only dedicated", got)
	}
	if c := condition(findGateway(r, "infra", gw.Name).Status.Conditions, status.TypeDedicatedProxyReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("ready: DedicatedProxyReady = %+v", c)
	}
	if len(r.InternalPorts) != 0 || len(SharedPortKeys(res)) != 0 {
		t.Fatalf("ready: internal ports %v still assigned", r.InternalPorts)
	}
	dep.Generation = 2
	r = Translate(res)
	if got := servedBy(r); !got["shared"] || !got["gateway/infra/gw-0"] {
		t.Fatalf("rollout not observed: served by %v, want shared and dedicated", got)
	}
	if c := condition(findGateway(r, "infra", gw.Name).Status.Conditions, status.TypeDedicatedProxyReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != status.ReasonProvisioning {
		t.Fatalf("rollout not observed: DedicatedProxyReady = %+v", c)
	}
}

// TestHugeInput translates thousands of routes, checks every snapshot and
// that each route's two rules land in both listeners' virtual hosts.
func TestHugeInput(t *testing.T) {
	n := 3000
	r := Translate(generate(n, 50, 2))
	routes := 0
	for _, s := range r.Snapshots {
		if err := snapshot.Validate(s); err != nil {
			t.Fatalf("invalid snapshot: %v", err)
		}
		for _, l := range s.Listeners {
			for _, vh := range l.VirtualHosts {
				routes += len(vh.Routes)
			}
		}
	}
	// Two rules per route, on HTTP and HTTPS.
	if want := n * 2 * 2; routes != want {
		t.Fatalf("%d snapshot routes, want %d", routes, want)
	}
	if len(r.HTTPRoutes) != n {
		t.Fatalf("%d route statuses, want %d", len(r.HTTPRoutes), n)
	}
	for _, rs := range r.HTTPRoutes {
		for _, p := range rs.Parents {
			if c := condition(p.Conditions, status.TypeAccepted); c.Status != metav1.ConditionTrue {
				t.Fatalf("%s: %+v", rs.NamespacedName, c)
			}
		}
	}
}

// TestTranslateNilAndEmpty: no input still yields the shared snapshot.
func TestTranslateNilAndEmpty(t *testing.T) {
	for _, res := range []*Resources{nil, {}} {
		r := Translate(res)
		if len(r.Snapshots) != 1 || r.Snapshots[0].Scope != snapshot.SharedPool() {
			t.Fatalf("snapshots = %+v, want one empty shared pool snapshot", r.Snapshots)
		}
	}
	if SharedPortKeys(nil) != nil {
		t.Fatal("SharedPortKeys(nil) is not nil")
	}
}

func TestSupportedFeaturesSortedAndComplete(t *testing.T) {
	// Every non-mesh feature of Gateway API v1.6.3.
	if len(SupportedFeatures) != 48 {
		t.Fatalf("%d features, want 48", len(SupportedFeatures))
	}
	for i := 1; i < len(SupportedFeatures); i++ {
		if SupportedFeatures[i-1] >= SupportedFeatures[i] {
			t.Fatalf("not sorted/unique at %d: %v", i, SupportedFeatures)
		}
	}
}

// TestFeaturesFollowChannel: the retry features need HTTPRoute's
// rules[].retry, which only the experimental channel's CRD has.
func TestFeaturesFollowChannel(t *testing.T) {
	has := func(fs []gwv1.FeatureName, f string) bool { return slices.Contains(fs, gwv1.FeatureName(f)) }
	exp, std, unknown := FeaturesFor(nil, "experimental"), FeaturesFor(nil, "standard"), FeaturesFor(nil, "")
	if len(exp) != len(SupportedFeatures) {
		t.Errorf("experimental channel: %d features, want all %d", len(exp), len(SupportedFeatures))
	}
	for _, f := range []string{"HTTPRouteRetry", "HTTPRouteRetryBackendTimeout", "HTTPRouteRetryConnectionError"} {
		if !has(exp, f) || has(std, f) || has(unknown, f) {
			t.Errorf("%s: experimental %v, standard %v, unknown %v; want only experimental", f, has(exp, f), has(std, f), has(unknown, f))
		}
	}
	if !has(std, "TLSRouteModeMixed") || !has(std, "HTTPRouteDestinationPortMatching") {
		t.Error("experimental features that need no experimental field are not advertised on the standard channel")
	}
}
