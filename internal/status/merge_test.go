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

package status

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func at(sec int64) metav1.Time { return metav1.NewTime(time.Unix(sec, 0).UTC()) }

func TestMergeConditions(t *testing.T) {
	t0, t1 := at(1000), at(2000)
	existing := []metav1.Condition{
		{Type: TypeProgrammed, Status: metav1.ConditionTrue, Reason: ReasonProgrammed, ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: TypeAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted, ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "Theirs", LastTransitionTime: t0},
	}
	tests := []struct {
		name        string
		existing    []metav1.Condition
		desired     []metav1.Condition
		gen         int64
		wantChanged bool
		wantTimes   map[string]metav1.Time
		wantGen     int64
	}{
		{
			name:        "same status same generation keeps time and is unchanged",
			existing:    existing,
			desired:     []metav1.Condition{Accepted(true, ReasonAccepted, "", 0), Programmed(true, ReasonProgrammed, "", 0)},
			gen:         1,
			wantChanged: false,
			wantTimes:   map[string]metav1.Time{TypeAccepted: t0, TypeProgrammed: t0, "example.com/Other": t0},
			wantGen:     1,
		},
		{
			name:        "new generation changes observedGeneration but keeps time",
			existing:    existing,
			desired:     []metav1.Condition{Accepted(true, ReasonAccepted, "", 0), Programmed(true, ReasonProgrammed, "", 0)},
			gen:         2,
			wantChanged: true,
			wantTimes:   map[string]metav1.Time{TypeAccepted: t0, TypeProgrammed: t0},
			wantGen:     2,
		},
		{
			name:        "status flip takes now",
			existing:    existing,
			desired:     []metav1.Condition{Accepted(false, ReasonInvalidParameters, "x", 0), Programmed(true, ReasonProgrammed, "", 0)},
			gen:         1,
			wantChanged: true,
			wantTimes:   map[string]metav1.Time{TypeAccepted: t1, TypeProgrammed: t0},
			wantGen:     1,
		},
		{
			name:        "reason change alone keeps time but is a change",
			existing:    existing,
			desired:     []metav1.Condition{Accepted(true, ReasonListenersNotValid, "", 0), Programmed(true, ReasonProgrammed, "", 0)},
			gen:         1,
			wantChanged: true,
			wantTimes:   map[string]metav1.Time{TypeAccepted: t0},
			wantGen:     1,
		},
		{
			name:        "new type from empty takes now",
			existing:    nil,
			desired:     []metav1.Condition{False(TypeDedicatedProxyReady, ReasonProvisioning, "waiting", 0)},
			gen:         3,
			wantChanged: true,
			wantTimes:   map[string]metav1.Time{TypeDedicatedProxyReady: t1},
			wantGen:     3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			merged, changed := MergeConditions(tc.existing, tc.desired, tc.gen, t1)
			if changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			for typ, want := range tc.wantTimes {
				c := meta.FindStatusCondition(merged, typ)
				if c == nil {
					t.Fatalf("condition %s missing from %v", typ, merged)
				}
				if !c.LastTransitionTime.Equal(&want) {
					t.Errorf("%s time = %v, want %v", typ, c.LastTransitionTime, want)
				}
			}
			for _, d := range tc.desired {
				if c := meta.FindStatusCondition(merged, d.Type); c.ObservedGeneration != tc.wantGen {
					t.Errorf("%s observedGeneration = %d, want %d", d.Type, c.ObservedGeneration, tc.wantGen)
				}
			}
			for i := 1; i < len(merged); i++ {
				if merged[i-1].Type > merged[i].Type {
					t.Errorf("not sorted by type: %v", merged)
				}
			}
		})
	}
}

func TestMergeConditionsKeepsForeignTypesAndIsOrderIndependent(t *testing.T) {
	t0 := at(10)
	existing := []metav1.Condition{{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "Theirs", LastTransitionTime: t0}}
	a := []metav1.Condition{Accepted(true, ReasonAccepted, "", 0), Programmed(true, ReasonProgrammed, "", 0)}
	b := []metav1.Condition{a[1], a[0]}
	m1, _ := MergeConditions(existing, a, 4, t0)
	m2, _ := MergeConditions(existing, b, 4, t0)
	if len(m1) != 3 || meta.FindStatusCondition(m1, "example.com/Other") == nil {
		t.Fatalf("foreign condition lost: %v", m1)
	}
	for i := range m1 {
		if !sameCondition(m1[i], m2[i]) {
			t.Fatalf("order dependent: %v vs %v", m1, m2)
		}
	}
	// Applying the merge result again is a no-op.
	if _, changed := MergeConditions(m1, a, 4, at(99)); changed {
		t.Fatalf("re-merge reported a change")
	}
}

func TestMergeConditionsDuplicateExisting(t *testing.T) {
	t0 := at(10)
	existing := []metav1.Condition{
		{Type: TypeAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted, ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: TypeAccepted, Status: metav1.ConditionFalse, Reason: ReasonInvalid, ObservedGeneration: 1, LastTransitionTime: t0},
	}
	merged, changed := MergeConditions(existing, []metav1.Condition{Accepted(true, ReasonAccepted, "", 0)}, 1, at(20))
	if !changed || len(merged) != 1 {
		t.Fatalf("duplicates not collapsed: changed=%v merged=%v", changed, merged)
	}
}

// TestMergeConditionsDropsOurStaleTypes: a condition type we own that is
// no longer desired goes away; foreign types stay.
func TestMergeConditionsDropsOurStaleTypes(t *testing.T) {
	t0 := at(10)
	existing := []metav1.Condition{
		{Type: TypeAccepted, Status: metav1.ConditionTrue, Reason: ReasonAccepted, ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: TypeDedicatedProxyReady, Status: metav1.ConditionTrue, Reason: ReasonReady, ObservedGeneration: 1, LastTransitionTime: t0},
		{Type: "example.com/Theirs", Status: metav1.ConditionTrue, Reason: "X", LastTransitionTime: t0},
	}
	merged, changed := MergeConditions(existing, []metav1.Condition{Accepted(true, ReasonAccepted, "", 0)}, 1, at(20))
	if !changed {
		t.Fatal("dropping a stale condition is a change")
	}
	if meta.FindStatusCondition(merged, TypeDedicatedProxyReady) != nil {
		t.Fatalf("stale DedicatedProxyReady kept: %v", merged)
	}
	if meta.FindStatusCondition(merged, "example.com/Theirs") == nil || meta.FindStatusCondition(merged, TypeAccepted) == nil {
		t.Fatalf("lost a condition: %v", merged)
	}
}
