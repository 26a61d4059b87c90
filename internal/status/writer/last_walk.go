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

// changedNames are the names of one kind that informer events marked, in
// namespace/name order, consumed as a walk asks about names in that order:
// a walk of 10,000 routes with one marked compared names instead of
// hashing every one to look it up in the set of marked keys.
type changedNames []types.NamespacedName

// changedOf lists the names of kind in changed.
func changedOf(changed map[settledKey]struct{}, kind string) changedNames {
	var out changedNames
	for k := range changed {
		if k.kind == kind {
			out = append(out, k.name)
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		switch {
		case nnBefore(a, b):
			return -1
		case nnBefore(b, a):
			return 1
		}
		return 0
	})
	return out
}

// has reports whether n was marked; n is not before any name asked about
// earlier.
func (c *changedNames) has(n types.NamespacedName) bool {
	for len(*c) > 0 && nnBefore((*c)[0], n) {
		*c = (*c)[1:]
	}
	return len(*c) > 0 && (*c)[0] == n
}

// nnBefore reports whether a comes before b in namespace/name order.
func nnBefore(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
