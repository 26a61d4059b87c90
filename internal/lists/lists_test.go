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

package lists_test

import (
	"testing"

	"github.com/coxswain-go/coxswain/internal/lists"
)

func TestSame(t *testing.T) {
	a := []int{1, 2, 3}
	for _, c := range []struct {
		name string
		x, y []int
		want bool
	}{
		{"both empty", nil, []int{}, true},
		{"the same list", a, a, true},
		{"a shorter list over the same array", a, a[:2], false},
		{"equal elements of another array", a, []int{1, 2, 3}, false},
		{"one empty", a, nil, false},
	} {
		if got := lists.Same(c.x, c.y); got != c.want {
			t.Errorf("%s: Same = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReuse(t *testing.T) {
	list := make([]int, 5, 10)
	if got := lists.Reuse(list, 10); len(got) != 0 || cap(got) != 10 || &got[:1][0] != &list[0] {
		t.Errorf("room enough: got len %d cap %d, not list's array emptied", len(got), cap(got))
	}
	if got := lists.Reuse(list, 16); len(got) != 0 || cap(got) != 18 {
		t.Errorf("room for 16: got len %d cap %d, want a new array of cap 18", len(got), cap(got))
	}
	if got := lists.Reuse[int](nil, 0); got != nil {
		t.Errorf("nothing asked: got %v, want nil", got)
	}
}
