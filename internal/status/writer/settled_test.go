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
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestParentsDigestCoversEveryField: changing any field of a desired route
// parent changes the digest; a field the digest does not know fails the
// field count.
func TestParentsDigestCoversEveryField(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[gwv1.RouteParentStatus](): 3,
		reflect.TypeFor[gwv1.ParentReference]():   6,
		reflect.TypeFor[metav1.Condition]():       6,
	} {
		if typ.NumField() != n {
			t.Fatalf("%s has %d fields, not %d: teach parentsDigest the new one, then update this test", typ, typ.NumField(), n)
		}
	}
	base := func() []gwv1.RouteParentStatus {
		return []gwv1.RouteParentStatus{{
			ParentRef: gwv1.ParentReference{
				Group: ptr.To(gwv1.Group("g")), Kind: ptr.To(gwv1.Kind("k")), Namespace: ptr.To(gwv1.Namespace("ns")),
				Name: "n", SectionName: ptr.To(gwv1.SectionName("s")), Port: ptr.To(gwv1.PortNumber(80)),
			},
			ControllerName: "c",
			Conditions: []metav1.Condition{{
				Type: "Accepted", Status: metav1.ConditionTrue, ObservedGeneration: 1,
				LastTransitionTime: metav1.NewTime(time.Unix(100, 0)), Reason: "r", Message: "m",
			}},
		}}
	}
	changes := map[string]func(p *gwv1.RouteParentStatus){
		"group":       func(p *gwv1.RouteParentStatus) { p.ParentRef.Group = nil },
		"kind":        func(p *gwv1.RouteParentStatus) { p.ParentRef.Kind = ptr.To(gwv1.Kind("k2")) },
		"namespace":   func(p *gwv1.RouteParentStatus) { p.ParentRef.Namespace = ptr.To(gwv1.Namespace("ns2")) },
		"name":        func(p *gwv1.RouteParentStatus) { p.ParentRef.Name = "n2" },
		"sectionName": func(p *gwv1.RouteParentStatus) { p.ParentRef.SectionName = nil },
		"port":        func(p *gwv1.RouteParentStatus) { p.ParentRef.Port = ptr.To(gwv1.PortNumber(81)) },
		"controller":  func(p *gwv1.RouteParentStatus) { p.ControllerName = "c2" },
		"type":        func(p *gwv1.RouteParentStatus) { p.Conditions[0].Type = "ResolvedRefs" },
		"status":      func(p *gwv1.RouteParentStatus) { p.Conditions[0].Status = metav1.ConditionFalse },
		"observed":    func(p *gwv1.RouteParentStatus) { p.Conditions[0].ObservedGeneration = 2 },
		"transition": func(p *gwv1.RouteParentStatus) {
			p.Conditions[0].LastTransitionTime = metav1.NewTime(time.Unix(101, 0))
		},
		"reason":     func(p *gwv1.RouteParentStatus) { p.Conditions[0].Reason = "r2" },
		"message":    func(p *gwv1.RouteParentStatus) { p.Conditions[0].Message = "m2" },
		"conditions": func(p *gwv1.RouteParentStatus) { p.Conditions = append(p.Conditions, p.Conditions[0]) },
		"split":      func(p *gwv1.RouteParentStatus) { p.Conditions[0].Reason, p.Conditions[0].Message = "rm", "" },
	}
	want := parentsDigest(base())
	for name, change := range changes {
		ps := base()
		change(&ps[0])
		if parentsDigest(ps) == want {
			t.Errorf("changing %s kept the digest", name)
		}
	}
	if parentsDigest(append(base(), base()...)) == want {
		t.Error("a second parent kept the digest")
	}
}

// TestGatewayDigestCoversEveryField: changing any field of a desired
// Gateway status or of the data plane's gate changes the digest; a field
// the digest does not know fails the field count.
func TestGatewayDigestCoversEveryField(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[gwv1.GatewayStatus]():        4,
		reflect.TypeFor[gwv1.GatewayStatusAddress](): 2,
		reflect.TypeFor[gwv1.ListenerStatus]():       4,
		reflect.TypeFor[gwv1.RouteGroupKind]():       2,
		reflect.TypeFor[metav1.Condition]():          6,
		reflect.TypeFor[GatewayDataPlane]():          5,
		reflect.TypeFor[programmedGate]():            3,
	} {
		if typ.NumField() != n {
			t.Fatalf("%s has %d fields, not %d: teach gatewayDigest the new one, then update this test", typ, typ.NumField(), n)
		}
	}
	cond := func() metav1.Condition {
		return metav1.Condition{Type: "Programmed", Status: metav1.ConditionTrue, ObservedGeneration: 1,
			LastTransitionTime: metav1.NewTime(time.Unix(100, 0)), Reason: "r", Message: "m"}
	}
	type input struct {
		d translator.GatewayStatus
		g programmedGate
	}
	base := func() input {
		return input{
			d: translator.GatewayStatus{GatewayState: &translator.GatewayState{Status: gwv1.GatewayStatus{
				Addresses:  []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "10.0.0.1"}},
				Conditions: []metav1.Condition{cond()},
				Listeners: []gwv1.ListenerStatus{{
					Name:           "http",
					SupportedKinds: []gwv1.RouteGroupKind{{Group: ptr.To(gwv1.Group("g")), Kind: "HTTPRoute"}},
					AttachedRoutes: 3,
					Conditions:     []metav1.Condition{cond()},
				}},
				AttachedListenerSets: ptr.To(int32(1)),
			}}},
			g: programmedGate{dp: &GatewayDataPlane{Published: true, Scope: "shared", Proxies: 2, Ready: 2}, scope: "shared", generation: 1},
		}
	}
	changes := map[string]func(in *input){
		"address type":     func(in *input) { in.d.Status.Addresses[0].Type = nil },
		"address value":    func(in *input) { in.d.Status.Addresses[0].Value = "10.0.0.2" },
		"addresses":        func(in *input) { in.d.Status.Addresses = nil },
		"condition type":   func(in *input) { in.d.Status.Conditions[0].Type = "Accepted" },
		"condition status": func(in *input) { in.d.Status.Conditions[0].Status = metav1.ConditionFalse },
		"observed":         func(in *input) { in.d.Status.Conditions[0].ObservedGeneration = 2 },
		"transition": func(in *input) {
			in.d.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Unix(101, 0))
		},
		"reason":          func(in *input) { in.d.Status.Conditions[0].Reason = "r2" },
		"message":         func(in *input) { in.d.Status.Conditions[0].Message = "m2" },
		"split":           func(in *input) { in.d.Status.Conditions[0].Reason, in.d.Status.Conditions[0].Message = "rm", "" },
		"listener name":   func(in *input) { in.d.Status.Listeners[0].Name = "https" },
		"kind group":      func(in *input) { in.d.Status.Listeners[0].SupportedKinds[0].Group = nil },
		"kind":            func(in *input) { in.d.Status.Listeners[0].SupportedKinds[0].Kind = "GRPCRoute" },
		"kinds":           func(in *input) { in.d.Status.Listeners[0].SupportedKinds = nil },
		"attached":        func(in *input) { in.d.Status.Listeners[0].AttachedRoutes = 4 },
		"listener reason": func(in *input) { in.d.Status.Listeners[0].Conditions[0].Reason = "r2" },
		"listeners":       func(in *input) { in.d.Status.Listeners = append(in.d.Status.Listeners, in.d.Status.Listeners[0]) },
		"listener sets":   func(in *input) { in.d.Status.AttachedListenerSets = ptr.To(int32(2)) },
		"no listener sets": func(in *input) {
			in.d.Status.AttachedListenerSets = nil
		},
		"published":       func(in *input) { in.g.dp.Published = false },
		"dp scope":        func(in *input) { in.g.dp.Scope = "dedicated" },
		"proxies":         func(in *input) { in.g.dp.Proxies = 3 },
		"ready":           func(in *input) { in.g.dp.Ready = 1 },
		"no data plane":   func(in *input) { in.g.dp = nil },
		"gate scope":      func(in *input) { in.g.scope = "other" },
		"gate generation": func(in *input) { in.g.generation = 2 },
	}
	in := base()
	want, ok := gatewayDigest(&in.d, in.g)
	if !ok {
		t.Fatal("a gate without rejections is not settable")
	}
	for name, change := range changes {
		in := base()
		change(&in)
		if got, _ := gatewayDigest(&in.d, in.g); got == want {
			t.Errorf("changing %s kept the digest", name)
		}
	}
	in = base()
	in.g.dp.Rejections = []Rejection{{NodeID: "n"}}
	if _, ok := gatewayDigest(&in.d, in.g); ok {
		t.Error("a gate with rejections is settable")
	}
}

// TestSettledListIsTheSameListOnly: a round settles a route without a
// digest only for the very list it last settled at the same
// resourceVersion; an equal copy needs the digest, a new resourceVersion
// settles nothing, and a complete round forgets what it did not see.
func TestSettledListIsTheSameListOnly(t *testing.T) {
	parents := []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"}, ControllerName: "c"}}
	copied := append([]gwv1.RouteParentStatus(nil), parents...)
	a := settledKey{"HTTPRoute", types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := settledKey{"HTTPRoute", types.NamespacedName{Namespace: "ns", Name: "b"}}
	var s settledStatuses
	s.begin()
	s.record(a, "1", parentsDigest(parents), parentsID(parents))
	s.record(b, "1", parentsDigest(parents), parentsID(parents))
	s.end(true, true)

	s.begin()
	if !s.settledList(a, "1", parentsID(parents)) {
		t.Error("the same list at the same resourceVersion is not settled")
	}
	if s.settledList(a, "2", parentsID(parents)) {
		t.Error("a new resourceVersion is settled")
	}
	if s.settledList(a, "1", parentsID(copied)) {
		t.Error("an equal copy is settled without its digest")
	}
	if !s.settled(a, "1", parentsDigest(copied), parentsID(copied)) {
		t.Error("an equal copy's digest does not settle it")
	}
	if s.settledList(a, "1", parentsID(nil)) {
		t.Error("an empty list is settled by identity")
	}
	s.end(true, true) // b was not seen

	s.begin()
	if !s.settledList(a, "1", parentsID(copied)) {
		t.Error("the list last settled by digest is not the one named now")
	}
	if s.settledList(b, "1", parentsID(parents)) || s.settled(b, "1", parentsDigest(parents), listID{}) {
		t.Error("a route the last complete round did not see is still settled")
	}
	// A list replaced by another is no longer settled, whatever it is
	// filed under.
	other := []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "other"}, ControllerName: "c"}}
	s.record(a, "2", parentsDigest(other), parentsID(other))
	if s.settledList(a, "2", parentsID(copied)) || s.settledList(a, "1", parentsID(copied)) {
		t.Error("a replaced list is still settled")
	}
	if !s.settledList(a, "2", parentsID(other)) {
		t.Error("the list that replaced it is not settled")
	}
	s.end(false, true)
}

// TestDesiredDigestsReuseTheSameLists: the digests of a Result's Gateway
// statuses are taken again only for those that are not the very lists
// of the earlier Result's (the Memo hands an unchanged Gateway its last
// status); every digest equals a fresh one.
func TestDesiredDigestsReuseTheSameLists(t *testing.T) {
	if n := reflect.TypeFor[gwv1.GatewayStatus]().NumField(); n != 4 {
		t.Fatalf("GatewayStatus has %d fields, not 4: teach sameGatewayStatus the new one, then update this test", n)
	}
	status := func(name string, attached int32) translator.GatewayStatus {
		return translator.GatewayStatus{GatewayState: &translator.GatewayState{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}, Status: gwv1.GatewayStatus{
			Addresses:  []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: "10.0.0.1"}},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"}},
			Listeners:  []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: attached}},
		}}}
	}
	first := &translator.Result{Gateways: []translator.GatewayStatus{status("a", 1), status("b", 1), status("c", 1)}}
	prev := newDesiredDigests(first, nil)
	marked := statusDigest{7, 7} // not a digest of anything: shows where prev's were taken
	for i := range prev.digests {
		prev.digests[i] = marked
	}
	equalCopy := *first.Gateways[2].GatewayState
	equalCopy.Status.Listeners = []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 1}}
	next := &translator.Result{Gateways: []translator.GatewayStatus{first.Gateways[0], status("b", 2), {GatewayState: &equalCopy}}}
	got, fresh := newDesiredDigests(next, prev), newDesiredDigests(next, nil)
	if got.digests[0] != marked {
		t.Error("the very same status was digested again")
	}
	for i := 1; i < 3; i++ {
		if got.digests[i] != fresh.digests[i] {
			t.Errorf("status %d, not the same lists, did not get its own digest", i)
		}
	}
	if fresh.digests[0] == marked || fresh.digests[2] != desiredGatewayDigest(&first.Gateways[2]) {
		t.Error("fresh digests are wrong")
	}
}
