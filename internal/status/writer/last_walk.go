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
	"slices"

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
	// changed are the entries of last the informer marked since the
	// last round.
	changed changedEntries
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

// changedEntries are the entries of the last list whose names informer
// events marked, by index. A walk of 10,000 routes with one marked asks
// about every route; an index answers without reading the route's name
// (names scattered over the heap: reading one byte of each took a
// millisecond and more a round).
type changedEntries struct {
	// at are the marked indices of the last list, ascending.
	at []int
	// next is the first of at not yet passed: asks come in ascending
	// index order.
	next int
}

// changedIn finds, in last (in namespace/name order), the entries of kind
// marked in changed.
func changedIn[T any](changed map[settledKey]struct{}, kind string, last []T, name func(*T) types.NamespacedName) changedEntries {
	var out changedEntries
	for k := range changed {
		if k.kind != kind {
			continue
		}
		i, found := slices.BinarySearchFunc(last, k.name, func(e T, n types.NamespacedName) int {
			en := name(&e)
			switch {
			case nnBefore(en, n):
				return -1
			case en == n:
				return 0
			}
			return 1
		})
		if found {
			out.at = append(out.at, i)
		}
	}
	slices.Sort(out.at)
	return out
}

// has reports whether the last list's entry i was marked. Calls come in
// ascending order of i.
func (c *changedEntries) has(i int) bool {
	for c.next < len(c.at) && c.at[c.next] < i {
		c.next++
	}
	return c.next < len(c.at) && c.at[c.next] == i
}

// nnBefore reports whether a comes before b in namespace/name order.
func nnBefore(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
