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

package portalloc

import (
	"reflect"
	"testing"
)

func k(ns, name string, port int32) Key { return Key{Namespace: ns, Name: name, Port: port} }

func TestAssign(t *testing.T) {
	tests := []struct {
		name       string
		existing   []Assignment
		wanted     []Key
		want       []Assignment
		unassigned []Key
	}{
		{
			name:   "fresh keys get the lowest ports in key order",
			wanted: []Key{k("b", "gw", 80), k("a", "gw", 443), k("a", "gw", 80)},
			want:   []Assignment{{k("a", "gw", 80), 30000}, {k("a", "gw", 443), 30001}, {k("b", "gw", 80), 30002}},
		},
		{
			name:     "existing assignments are kept and new keys fill the gaps",
			existing: []Assignment{{k("z", "gw", 80), 30000}, {k("a", "gw", 80), 30005}},
			wanted:   []Key{k("a", "gw", 80), k("m", "gw", 80), k("z", "gw", 80)},
			want:     []Assignment{{k("a", "gw", 80), 30005}, {k("m", "gw", 80), 30001}, {k("z", "gw", 80), 30000}},
		},
		{
			name:     "assignments no longer wanted are released",
			existing: []Assignment{{k("old", "gw", 80), 30000}},
			wanted:   []Key{k("new", "gw", 80)},
			want:     []Assignment{{k("new", "gw", 80), 30000}},
		},
		{
			name:     "a port claimed twice goes to the first key; the other is reassigned",
			existing: []Assignment{{k("b", "gw", 80), 30000}, {k("a", "gw", 80), 30000}},
			wanted:   []Key{k("a", "gw", 80), k("b", "gw", 80)},
			want:     []Assignment{{k("a", "gw", 80), 30000}, {k("b", "gw", 80), 30001}},
		},
		{
			name:     "out-of-range persisted ports are ignored",
			existing: []Assignment{{k("a", "gw", 80), 80}},
			wanted:   []Key{k("a", "gw", 80)},
			want:     []Assignment{{k("a", "gw", 80), 30000}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, un := Assign(tc.existing, tc.wanted)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("assigned = %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(un, tc.unassigned) {
				t.Errorf("unassigned = %v, want %v", un, tc.unassigned)
			}
		})
	}
}

func TestAssignExhaustion(t *testing.T) {
	var wanted []Key
	n := int(Max-Min) + 3
	for i := 0; i < n; i++ {
		wanted = append(wanted, k("ns", "gw", int32(i+1)))
	}
	got, un := Assign(nil, wanted)
	if len(got) != int(Max-Min)+1 || len(un) != 2 {
		t.Fatalf("assigned %d, unassigned %d; want %d and 2", len(got), len(un), Max-Min+1)
	}
	// Stable: feeding the result back changes nothing.
	again, _ := Assign(got, wanted)
	if !reflect.DeepEqual(again, got) {
		t.Fatal("re-assigning from persisted state changed the assignment")
	}
}
