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

// TestChangedNames: the entries of the last list whose names one kind's
// events marked are found by index, asked in ascending order with gaps;
// the marks of another kind and of names not in the list do not count.
func TestChangedNames(t *testing.T) {
	n := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	last := []types.NamespacedName{n("a", "a"), n("a", "b"), n("a", "m"), n("a", "y"), n("a", "z"), n("b", "a"), n("b", "x"), n("bb", "x"), n("c", "m")}
	changed := map[settledKey]struct{}{
		{"HTTPRoute", n("b", "x")}:  {},
		{"HTTPRoute", n("a", "z")}:  {}, // never asked about
		{"HTTPRoute", n("a", "m")}:  {},
		{"HTTPRoute", n("c", "a")}:  {}, // not in the list
		{"HTTPRoute", n("a", "mm")}: {}, // not in the list
		{"GRPCRoute", n("a", "b")}:  {},
	}
	name := func(x *types.NamespacedName) types.NamespacedName { return *x }
	c := changedIn(changed, "HTTPRoute", last, name)
	want := map[int]bool{2: true, 4: true, 6: true}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 7, 8} { // 4 skipped
		if got := c.has(i); got != want[i] {
			t.Errorf("has(%d) (%v) = %v, want %v", i, last[i], got, want[i])
		}
	}
	if none := changedIn(nil, "HTTPRoute", last, name); none.has(2) {
		t.Error("no marks, yet a marked entry")
	}
	if none := changedIn(changed, "HTTPRoute", nil, name); none.has(0) {
		t.Error("an empty list, yet a marked entry")
	}
}
