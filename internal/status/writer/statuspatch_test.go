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

package writer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// statusTestRoute is an HTTPRoute as the cache holds one: metadata,
// a spec of two rules, and the status of two controllers' parents.
func statusTestRoute() *gwv1.HTTPRoute {
	port := gwv1.PortNumber(8080)
	rt := &gwv1.HTTPRoute{
		TypeMeta: metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "shop", ResourceVersion: "4711", Generation: 3, UID: "u-1",
			Labels: map[string]string{"app": "shop"}, Annotations: map[string]string{"note": "x"}},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}, {Name: "other"}}},
			Hostnames:       []gwv1.Hostname{"shop.example.com"},
			Rules: []gwv1.HTTPRouteRule{
				{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/cart")}}},
					BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "cart", Port: &port}}}}},
				{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "shop", Port: &port}}}}},
			},
		},
	}
	rt.Status.Parents = []gwv1.RouteParentStatus{
		statusTestParent("web", "coxswain.dev/gateway-controller", metav1.ConditionTrue),
		statusTestParent("other", "example.net/other", metav1.ConditionFalse),
	}
	return rt
}

func statusTestParent(gateway, controller string, accepted metav1.ConditionStatus) gwv1.RouteParentStatus {
	at := metav1.NewTime(time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC))
	return gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(gateway)}, ControllerName: gwv1.GatewayController(controller),
		Conditions: []metav1.Condition{
			{Type: "Accepted", Status: accepted, Reason: "Accepted", ObservedGeneration: 3, LastTransitionTime: at},
			{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", ObservedGeneration: 3, LastTransitionTime: at},
		}}
}

func statusTestGateway() *gwv1.Gateway {
	gw := &gwv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "web", ResourceVersion: "99", Generation: 1},
		Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain", Listeners: []gwv1.Listener{
			{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}, {Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType}}},
	}
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "10.0.0.7"}}
	gw.Status.Conditions = statusTestParent("web", "", metav1.ConditionTrue).Conditions
	for _, l := range gw.Spec.Listeners {
		gw.Status.Listeners = append(gw.Status.Listeners, gwv1.ListenerStatus{Name: l.Name, AttachedRoutes: 10,
			SupportedKinds: []gwv1.RouteGroupKind{{Kind: "HTTPRoute"}}, Conditions: gw.Status.Conditions})
	}
	return gw
}

// statusMutations change a copy's status as the writer does: conditions,
// entries added and dropped, fields emptied (which the patch must null).
var statusMutations = []func(client.Object, *rand.Rand){
	func(o client.Object, r *rand.Rand) {
		switch o := o.(type) {
		case *gwv1.HTTPRoute:
			if len(o.Status.Parents) > 0 {
				o.Status.Parents[r.IntN(len(o.Status.Parents))].Conditions[0].Status = metav1.ConditionFalse
			}
		case *gwv1.Gateway:
			o.Status.Conditions[r.IntN(len(o.Status.Conditions))].Reason = "Pending"
		}
	},
	func(o client.Object, r *rand.Rand) {
		switch o := o.(type) {
		case *gwv1.HTTPRoute:
			o.Status.Parents = append(o.Status.Parents, statusTestParent(fmt.Sprint("gw-", r.IntN(100)), "coxswain.dev/gateway-controller", metav1.ConditionTrue))
		case *gwv1.Gateway:
			if len(o.Status.Listeners) > 0 {
				o.Status.Listeners[r.IntN(len(o.Status.Listeners))].AttachedRoutes = r.Int32N(1000)
			}
		}
	},
	func(o client.Object, r *rand.Rand) {
		switch o := o.(type) {
		case *gwv1.HTTPRoute:
			if len(o.Status.Parents) > 0 {
				i := r.IntN(len(o.Status.Parents))
				o.Status.Parents = append(o.Status.Parents[:i:i], o.Status.Parents[i+1:]...)
			}
		case *gwv1.Gateway:
			o.Status.Addresses = nil
		}
	},
	func(o client.Object, _ *rand.Rand) {
		switch o := o.(type) {
		case *gwv1.HTTPRoute:
			o.Status.Parents = nil
		case *gwv1.Gateway:
			o.Status.Listeners = nil
		}
	},
	func(client.Object, *rand.Rand) {}, // nothing changed: the lock alone
}

// TestStatusPatchEqualsWholeObjectPatch: the patch built from the
// statuses is, as JSON, the one controller-runtime builds from the whole
// objects with the optimistic lock, over random sequences of status
// changes to routes, Gateways, an Ingress and a GatewayClass.
func TestStatusPatchEqualsWholeObjectPatch(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	check := func(orig, obj client.Object) {
		t.Helper()
		got, err := statusPatch(orig, obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}).Data(obj)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("status patch\n%s\nwhole-object patch\n%s", got, want)
		}
	}
	for range 300 {
		var orig client.Object = statusTestRoute()
		if r.IntN(2) == 0 {
			orig = statusTestGateway()
		}
		obj := orig.DeepCopyObject().(client.Object)
		for range 1 + r.IntN(3) {
			statusMutations[r.IntN(len(statusMutations))](obj, r)
		}
		check(orig, obj)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "i", ResourceVersion: "5"}}
	ing2 := ing.DeepCopy()
	ing2.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.9"}}
	check(ing, ing2)
	check(ing2, ing)
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "coxswain", ResourceVersion: "8"}, Spec: gwv1.GatewayClassSpec{ControllerName: "coxswain.dev/gateway-controller"}}
	gc2 := gc.DeepCopy()
	gc2.Status.Conditions = statusTestParent("", "", metav1.ConditionTrue).Conditions
	check(gc, gc2)
}

// BenchmarkStatusPatch is what building one status patch costs: from the
// statuses (statusPatch) and from the whole objects, as before.
func BenchmarkStatusPatch(b *testing.B) {
	for _, tc := range []struct {
		name string
		orig client.Object
	}{{"httproute", statusTestRoute()}, {"gateway", statusTestGateway()}} {
		obj := tc.orig.DeepCopyObject().(client.Object)
		statusMutations[0](obj, rand.New(rand.NewPCG(1, 2)))
		b.Run(tc.name+"/status", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := statusPatch(tc.orig, obj); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/whole-object", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := client.MergeFromWithOptions(tc.orig, client.MergeFromWithOptimisticLock{}).Data(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
