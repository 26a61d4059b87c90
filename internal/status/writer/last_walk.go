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
	"k8s.io/apimachinery/pkg/types"
)

// lastWalk goes through one kind's statuses as the last complete round
// desired them, alongside this round's desired list: both are in
// namespace/name order, as the translator lists them. Each step returns
// the last round's entry of the same name, if any, and forgets (as a
// sweep would) the entries the walk passed that this round no longer
// desires. Gateway rounds (gatewayWalk) and route rounds (routeWalk)
// walk this way; they differ in what makes an entry unchanged.
type lastWalk[T any] struct {
	last []T
	// at is the index in last of the next entry.
	at int
	// name is an entry's name.
	name func(*T) types.NamespacedName
	kind string
	// changed are the names of kind the informer marked since the last
	// round.
	changed changedNames
}

// next returns the last round's entry named n and its index (nil and -1
// when there is none), forgetting in s the entries before it. Calls come
// in namespace/name order.
func (w *lastWalk[T]) next(s *settledStatuses, n types.NamespacedName) (*T, int) {
	for w.at < len(w.last) && nnBefore(w.name(&w.last[w.at]), n) {
		s.forget(settledKey{w.kind, w.name(&w.last[w.at])})
		w.at++
	}
	if w.at == len(w.last) || w.name(&w.last[w.at]) != n {
		return nil, -1
	}
	w.at++
	return &w.last[w.at-1], w.at - 1
}

// forgetRest forgets the entries after the last desired one.
func (w *lastWalk[T]) forgetRest(s *settledStatuses) {
	for ; w.at < len(w.last); w.at++ {
		s.forget(settledKey{w.kind, w.name(&w.last[w.at])})
	}
}

// changedNames are the names of one kind that informer events marked. A
// walk of 10,000 routes with one marked asks about every route: a mask
// of a cheap mark of each name (its length and last bytes) answers most
// without hashing the name to look it up.
type changedNames struct {
	mask  uint64
	names map[types.NamespacedName]struct{}
}

// changedOf lists the names of kind in changed.
func changedOf(changed map[settledKey]struct{}, kind string) changedNames {
	var out changedNames
	for k := range changed {
		if k.kind != kind {
			continue
		}
		if out.names == nil {
			out.names = map[types.NamespacedName]struct{}{}
		}
		out.names[k.name] = struct{}{}
		out.mask |= nameMark(k.name)
	}
	return out
}

// has reports whether n was marked. With no name marked it reads
// nothing of n: a walk of 10,000 routes reading each name's last bytes
// (scattered over the heap) took about a millisecond a round, at every
// endpoint refresh.
func (c *changedNames) has(n types.NamespacedName) bool {
	if c.mask == 0 || c.mask&nameMark(n) == 0 {
		return false
	}
	_, ok := c.names[n]
	return ok
}

// nameMark is one bit of 64 for n, from its names' lengths and last bytes
// (where the names of many objects of one kind differ).
func nameMark(n types.NamespacedName) uint64 {
	h := uint(len(n.Name))*31 + uint(len(n.Namespace))*17
	if l := len(n.Name); l > 0 {
		h += uint(n.Name[l-1]) * 7
		if l > 1 {
			h += uint(n.Name[l-2]) * 3
		}
	}
	return 1 << (h % 64)
}

// nnBefore reports whether a comes before b in namespace/name order.
func nnBefore(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
