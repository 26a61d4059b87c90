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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// TestMergeOursKeepsOtherControllersAncestors: a BackendTLSPolicy's
// ancestors of another controller stay; ours are replaced by the desired
// ones, which keep the transition time of an unchanged condition and drop
// a Gateway that no longer uses the policy.
func TestMergeOursKeepsOtherControllersAncestors(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	ref := func(name string) gwv1.ParentReference { return gwv1.ParentReference{Name: gwv1.ObjectName(name)} }
	accepted := metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: then, ObservedGeneration: 1}
	existing := []gwv1.PolicyAncestorStatus{
		{AncestorRef: ref("theirs"), ControllerName: "example.com/other", Conditions: []metav1.Condition{accepted}},
		{AncestorRef: ref("kept"), ControllerName: names.ControllerName, Conditions: []metav1.Condition{accepted}},
		{AncestorRef: ref("gone"), ControllerName: names.ControllerName, Conditions: []metav1.Condition{accepted}},
	}
	want := accepted
	want.LastTransitionTime = metav1.Time{}
	desired := []gwv1.PolicyAncestorStatus{
		{AncestorRef: ref("kept"), Conditions: []metav1.Condition{want}},
		{AncestorRef: ref("new"), Conditions: []metav1.Condition{want}},
	}
	got := mergeOurs(existing, desired, ancestorController, sameAncestor, ancestorConditions, 2, now)
	if len(got) != 3 || got[0].AncestorRef.Name != "theirs" || got[0].ControllerName != "example.com/other" {
		t.Fatalf("merged ancestors %+v: want the other controller's first and untouched", got)
	}
	if got[1].AncestorRef.Name != "kept" || !got[1].Conditions[0].LastTransitionTime.Equal(&then) {
		t.Errorf("kept ancestor %+v: want its unchanged condition's transition time %v", got[1], then)
	}
	if got[2].AncestorRef.Name != "new" || string(got[2].ControllerName) != names.ControllerName || !got[2].Conditions[0].LastTransitionTime.Equal(&now) {
		t.Errorf("new ancestor %+v: want ours, transitioned now", got[2])
	}
}
