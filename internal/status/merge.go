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
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MergeConditions computes the conditions to write: every desired
// condition, with ObservedGeneration set to observedGeneration, keeping the
// existing LastTransitionTime when the Status of that type did not change
// and using now otherwise. An existing condition whose type is not desired
// is dropped when this controller owns that type (Owned: the Gateway API
// condition types and ours, e.g. a DedicatedProxyReady left over after a
// Gateway returns to the shared pool) and kept unchanged otherwise (another
// writer's). The result is sorted by type, so it is deterministic for any
// input order. changed reports whether the result differs from existing in
// anything but order.
func MergeConditions(existing, desired []metav1.Condition, observedGeneration int64, now metav1.Time) (merged []metav1.Condition, changed bool) {
	old := make(map[string]metav1.Condition, len(existing))
	for _, c := range existing {
		if _, dup := old[c.Type]; dup {
			changed = true // duplicates collapse to the first
			continue
		}
		old[c.Type] = c
	}
	seen := make(map[string]bool, len(desired))
	for _, d := range desired {
		if seen[d.Type] {
			continue // first wins; duplicate types are a caller bug
		}
		seen[d.Type] = true
		d.ObservedGeneration = observedGeneration
		if o, ok := old[d.Type]; ok && o.Status == d.Status && !o.LastTransitionTime.IsZero() {
			d.LastTransitionTime = o.LastTransitionTime
		} else {
			d.LastTransitionTime = now
		}
		if o, ok := old[d.Type]; !ok || !sameCondition(o, d) {
			changed = true
		}
		merged = append(merged, d)
	}
	for _, o := range existing {
		if seen[o.Type] {
			continue
		}
		seen[o.Type] = true
		if Owned(o.Type) {
			changed = true
			continue
		}
		merged = append(merged, o)
	}
	sort.SliceStable(merged, func(i, j int) bool { return merged[i].Type < merged[j].Type })
	return merged, changed
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason &&
		a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration &&
		a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// ourTypePrefix marks condition types this project defines.
const ourTypePrefix = "gateway.coxswain-labs.dev/"

// ownedTypes are the Gateway API condition types this controller writes or
// has written on the objects it owns.
var ownedTypes = map[string]bool{
	"Accepted": true, "Programmed": true, "ResolvedRefs": true, "Conflicted": true,
	"PartiallyInvalid": true, "OverlappingTLSConfig": true, "Ready": true,
	"Scheduled": true, "Detached": true, "SupportedVersion": true,
}

// Owned reports whether MergeConditions treats a condition type as this
// controller's (dropped when no longer desired).
func Owned(condType string) bool {
	return ownedTypes[condType] || strings.HasPrefix(condType, ourTypePrefix)
}
