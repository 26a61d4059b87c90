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

	"k8s.io/apimachinery/pkg/types"
)

// TestChangedNames: the names one kind's events marked are found, in any
// order and again, the marks of another kind do not count, and names that
// share a mark with a marked one are not taken for it.
func TestChangedNames(t *testing.T) {
	n := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	changed := map[settledKey]struct{}{
		{"HTTPRoute", n("b", "x")}: {},
		{"HTTPRoute", n("a", "z")}: {},
		{"HTTPRoute", n("a", "m")}: {},
		{"HTTPRoute", n("c", "a")}: {}, // never asked about
		{"GRPCRoute", n("a", "b")}: {},
	}
	c := changedOf(changed, "HTTPRoute")
	for _, q := range []struct {
		name types.NamespacedName
		want bool
	}{
		{n("a", "a"), false},
		{n("a", "b"), false}, // a GRPCRoute's mark
		{n("a", "m"), true},
		{n("a", "m"), true}, // asked again
		{n("a", "y"), false},
		// a/z is not asked about
		{n("b", "a"), false},
		{n("b", "x"), true},
		{n("bb", "x"), false},
		{n("a", "m"), true}, // out of order
		{n("b", "ax"), false},
		{n("c", "m"), false}, // the mark of a/m (same lengths and bytes)
	} {
		if got := c.has(q.name); got != q.want {
			t.Errorf("has(%v) = %v, want %v", q.name, got, q.want)
		}
	}
	if none := changedOf(nil, "HTTPRoute"); none.has(n("a", "m")) {
		t.Error("no marks, yet some names")
	}
}
