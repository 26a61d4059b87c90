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

// Package portalloc assigns the internal ports the shared proxy pool binds
// for each shared Gateway listener port. It is a pure function of the
// assignments already persisted (in the shared VIP Services) and the ports
// wanted now, so the translator and the VIP Service reconciler compute the
// same answer from the same state, and assignments survive restarts.
package portalloc

import "sort"

// The internal port range, both ends included.
const (
	// Min is the lowest internal port.
	Min int32 = 30000
	// Max is the highest internal port.
	Max int32 = 32767
)

// Key is one Gateway listener port.
type Key struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Port      int32  `json:"port"`
}

// Less orders keys by namespace, name, port.
func (k Key) Less(o Key) bool {
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	if k.Name != o.Name {
		return k.Name < o.Name
	}
	return k.Port < o.Port
}

// Assignment maps a Gateway listener port to an internal port.
type Assignment struct {
	Key
	Internal int32 `json:"internal"`
}

// Assign keeps every existing assignment that is still wanted, valid and
// unique, then gives each remaining wanted key the lowest free port in
// [Min, Max], in key order. Keys that find no free port are returned in
// unassigned. The result is sorted by key.
func Assign(existing []Assignment, wanted []Key) (assigned []Assignment, unassigned []Key) {
	want := make(map[Key]bool, len(wanted))
	for _, k := range wanted {
		want[k] = true
	}
	prev := append([]Assignment(nil), existing...)
	sort.Slice(prev, func(i, j int) bool {
		if prev[i].Key != prev[j].Key {
			return prev[i].Less(prev[j].Key)
		}
		return prev[i].Internal < prev[j].Internal
	})
	used := map[int32]bool{}
	have := map[Key]bool{}
	for _, a := range prev {
		if !want[a.Key] || have[a.Key] || used[a.Internal] || a.Internal < Min || a.Internal > Max {
			continue
		}
		have[a.Key] = true
		used[a.Internal] = true
		assigned = append(assigned, a)
	}
	keys := make([]Key, 0, len(want))
	for k := range want {
		if !have[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	next := Min
	for _, k := range keys {
		for next <= Max && used[next] {
			next++
		}
		if next > Max {
			unassigned = append(unassigned, k)
			continue
		}
		used[next] = true
		assigned = append(assigned, Assignment{Key: k, Internal: next})
	}
	sort.Slice(assigned, func(i, j int) bool { return assigned[i].Less(assigned[j].Key) })
	return assigned, unassigned
}
