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

package provider

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestRouteChangeCompilesThatRouteAlone: on a real apiserver (real
// resourceVersions), a change to one of three HTTPRoutes compiles that
// route again and reuses the other two.
func TestRouteChangeCompilesThatRouteAlone(t *testing.T) {
	run := runProvider(t, nil, nil)
	ctx, c := run.ctx, run.client
	run.next(t)
	if err := c.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := c.Create(ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Rules:           []gwv1.HTTPRouteRule{{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Value: ptr.To("/" + name)}}}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	waitResult(t, run, func(r *translator.Result) bool { return len(r.HTTPRoutes) == 3 })
	reused, compiled := compilations(t, run, "reused"), compilations(t, run, "compiled")

	route := &gwv1.HTTPRoute{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "b"}, route); err != nil {
		t.Fatal(err)
	}
	route.Spec.Rules[0].Matches[0].Path.Value = ptr.To("/b2")
	if err := c.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	waitResult(t, run, func(r *translator.Result) bool { return servesPath(r, "/b2") })
	if got := compilations(t, run, "compiled") - compiled; got != 1 {
		t.Fatalf("one route changed: %v compilations, want 1", got)
	}
	if got := compilations(t, run, "reused") - reused; got < 2 {
		t.Fatalf("one route changed: %v compilations reused, want 2 or more", got)
	}

	// Gather hands over the informer store's own objects: an unchanged
	// route is the same object in two gathers.
	first, err := run.p.Gather(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := run.p.Gather(ctx)
	if err != nil {
		t.Fatal(err)
	}
	same := map[*gwv1.HTTPRoute]bool{}
	for _, r := range first.HTTPRoutes {
		same[r] = true
	}
	for _, r := range second.HTTPRoutes {
		if !same[r] {
			t.Fatalf("route %s/%s was copied between two gathers", r.Namespace, r.Name)
		}
	}
}

// waitResult waits for a Result that ok accepts.
func waitResult(t *testing.T, run *providerRun, ok func(*translator.Result) bool) {
	t.Helper()
	for range 50 {
		if ok(run.next(t)) {
			return
		}
	}
	t.Fatal("no such Result")
}

func servesPath(r *translator.Result, path string) bool {
	for _, s := range r.Snapshots {
		for _, l := range s.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, rt := range vh.Routes {
					if rt.Match.Path != nil && rt.Match.Path.Value == path {
						return true
					}
				}
			}
		}
	}
	return false
}

// compilations is the provider's route compilation count of one result.
func compilations(t *testing.T, run *providerRun, result string) float64 {
	t.Helper()
	return counterValue(t, run.p.m.compilations, result)
}
