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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// New returns a condition with a zero LastTransitionTime; the writer's
// MergeConditions fills the time.
func New(condType string, ok bool, reason, message string, generation int64) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type:               condType,
		Status:             s,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
	}
}

// True is New(condType, true, ...).
func True(condType, reason, message string, generation int64) metav1.Condition {
	return New(condType, true, reason, message, generation)
}

// False is New(condType, false, ...).
func False(condType, reason, message string, generation int64) metav1.Condition {
	return New(condType, false, reason, message, generation)
}

// Accepted builds an Accepted condition.
func Accepted(ok bool, reason, message string, generation int64) metav1.Condition {
	return New(TypeAccepted, ok, reason, message, generation)
}

// Programmed builds a Programmed condition.
func Programmed(ok bool, reason, message string, generation int64) metav1.Condition {
	return New(TypeProgrammed, ok, reason, message, generation)
}

// ResolvedRefs builds a ResolvedRefs condition.
func ResolvedRefs(ok bool, reason, message string, generation int64) metav1.Condition {
	return New(TypeResolvedRefs, ok, reason, message, generation)
}

// Conflicted builds a Conflicted condition (True means a conflict).
func Conflicted(conflict bool, reason, message string, generation int64) metav1.Condition {
	return New(TypeConflicted, conflict, reason, message, generation)
}
