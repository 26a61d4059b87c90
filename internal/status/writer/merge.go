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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
)

// The status lists the writer merges: listener statuses (a Gateway's and
// a ListenerSet's, by name), and the per-controller entries of a route's
// status.parents and a policy's status.ancestors (ours replaced, every
// other controller's kept). Each desired entry keeps the
// lastTransitionTime of its namesake's conditions (status.MergeConditions).

// mergeListeners returns desired with each listener's conditions merged
// over those of the listener of that name in existing; gate (may be nil)
// adjusts the desired conditions given the existing ones first.
func mergeListeners[L any](existing, desired []L, name func(*L) gwv1.SectionName, conds func(*L) *[]metav1.Condition,
	gate func(existing, desired []metav1.Condition) []metav1.Condition, generation int64, now metav1.Time) []L {
	out := make([]L, 0, len(desired))
	for i := range desired {
		var prev []metav1.Condition
		for j := range existing {
			if name(&existing[j]) == name(&desired[i]) {
				prev = *conds(&existing[j])
			}
		}
		l := desired[i]
		want := *conds(&l)
		if gate != nil {
			want = gate(prev, want)
		}
		*conds(&l), _ = status.MergeConditions(prev, want, generation, now)
		out = append(out, l)
	}
	return out
}

// mergeOurs replaces this controller's entries of existing (those whose
// controller is ours) with desired, keeping every other controller's;
// same tells a desired entry's predecessor. Never nil: the schemas require
// these lists.
func mergeOurs[E any](existing, desired []E, controller func(*E) *gwv1.GatewayController, same func(a, b *E) bool,
	conds func(*E) *[]metav1.Condition, generation int64, now metav1.Time) []E {
	ours := func(e *E) bool { return string(*controller(e)) == names.ControllerName }
	out := []E{}
	for i := range existing {
		if !ours(&existing[i]) {
			out = append(out, existing[i])
		}
	}
	for i := range desired {
		var prev []metav1.Condition
		for j := range existing {
			if ours(&existing[j]) && same(&existing[j], &desired[i]) {
				prev = *conds(&existing[j])
			}
		}
		e := desired[i]
		*controller(&e) = gwv1.GatewayController(names.ControllerName)
		*conds(&e), _ = status.MergeConditions(prev, *conds(&e), generation, now)
		out = append(out, e)
	}
	return out
}

func parentController(p *gwv1.RouteParentStatus) *gwv1.GatewayController { return &p.ControllerName }
func parentConditions(p *gwv1.RouteParentStatus) *[]metav1.Condition     { return &p.Conditions }
func sameParent(a, b *gwv1.RouteParentStatus) bool {
	return apiequality.Semantic.DeepEqual(a.ParentRef, b.ParentRef)
}

func ancestorController(a *gwv1.PolicyAncestorStatus) *gwv1.GatewayController {
	return &a.ControllerName
}
func ancestorConditions(a *gwv1.PolicyAncestorStatus) *[]metav1.Condition { return &a.Conditions }
func sameAncestor(a, b *gwv1.PolicyAncestorStatus) bool {
	return apiequality.Semantic.DeepEqual(a.AncestorRef, b.AncestorRef)
}

func listenerName(l *gwv1.ListenerStatus) gwv1.SectionName            { return l.Name }
func listenerConditions(l *gwv1.ListenerStatus) *[]metav1.Condition   { return &l.Conditions }
func entryName(l *gwv1.ListenerEntryStatus) gwv1.SectionName          { return l.Name }
func entryConditions(l *gwv1.ListenerEntryStatus) *[]metav1.Condition { return &l.Conditions }
