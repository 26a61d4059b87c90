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

package proxy

import (
	"iter"
	"maps"
)

// hostTable indexes a listener's virtual hosts by hostname (or, for
// wildcards, by suffix). A listener patched from the state in force
// (patchListener) shares that state's table rather than copying it: at
// 10,000 hosts, a copy of the map at every endpoint refresh was more
// than a third of what a proxy allocated under endpoint churn. base is
// never modified once its state is compiled; over holds what this table
// changes in it (a nil value: a host removed), and is folded into a new
// base once it grows past a sixteenth of it.
type hostTable struct {
	base map[string]*vhost
	over map[string]*vhost
	// n is how many hosts the table holds.
	n int
}

// newHostTable is an empty table with room for size hosts.
func newHostTable(size int) hostTable {
	return hostTable{base: make(map[string]*vhost, size)}
}

// patched is a table holding what t holds, to change for the next state:
// t's base with a copy of its overlay, or, once that overlay is large, a
// new base with the overlay folded in.
func (t *hostTable) patched() hostTable {
	if len(t.over) > 64+len(t.base)/16 {
		base := make(map[string]*vhost, t.n)
		for h, vh := range t.all() {
			base[h] = vh
		}
		return hostTable{base: base, n: t.n}
	}
	over := make(map[string]*vhost, len(t.over)+8)
	maps.Copy(over, t.over)
	return hostTable{base: t.base, over: over, n: t.n}
}

// get is the host indexed by h.
func (t *hostTable) get(h string) (*vhost, bool) {
	if len(t.over) > 0 {
		if vh, ok := t.over[h]; ok {
			return vh, vh != nil
		}
	}
	vh, ok := t.base[h]
	return vh, ok
}

// getBytes is get(string(b)), without converting b: the map lookups
// convert in place.
func (t *hostTable) getBytes(b []byte) (*vhost, bool) {
	if len(t.over) > 0 {
		if vh, ok := t.over[string(b)]; ok {
			return vh, vh != nil
		}
	}
	vh, ok := t.base[string(b)]
	return vh, ok
}

// put indexes vh under h.
func (t *hostTable) put(h string, vh *vhost) {
	if _, ok := t.get(h); !ok {
		t.n++
	}
	if t.over != nil {
		t.over[h] = vh
	} else {
		t.base[h] = vh
	}
}

// del removes the host indexed under h.
func (t *hostTable) del(h string) {
	if _, ok := t.get(h); !ok {
		return
	}
	t.n--
	switch {
	case t.over == nil:
		delete(t.base, h)
	case t.base[h] != nil:
		t.over[h] = nil
	default:
		delete(t.over, h)
	}
}

// all yields every indexed host.
func (t *hostTable) all() iter.Seq2[string, *vhost] {
	return func(yield func(string, *vhost) bool) {
		for h, vh := range t.over {
			if vh != nil && !yield(h, vh) {
				return
			}
		}
		for h, vh := range t.base {
			if _, changed := t.over[h]; changed {
				continue
			}
			if !yield(h, vh) {
				return
			}
		}
	}
}
