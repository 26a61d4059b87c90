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
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
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
