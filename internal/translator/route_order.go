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

package translator

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// namedRoute is a route of one kind with its metadata and its index in
// the translation's input: of two with one namespace/name, the first wins.
type namedRoute[R any] struct {
	meta *metav1.ObjectMeta
	r    *R
	at   int
	// kept is the Memo's entry for the route's namespace/name, from the
	// last translation (nil: none); its rank is where the route was in
	// that translation's order.
	kept *memoRoute
}

// compareNamed orders routes by namespace, name, then input index: the
// order a stable sort by namespace/name gives.
func compareNamed[R any](a, b namedRoute[R]) int {
	// Not cmp.Or, which would compare the names of every two routes of a
	// namespace twice over.
	if c := compareNames(a.meta, b.meta); c != 0 {
		return c
	}
	return cmp.Compare(a.at, b.at)
}

// sameName reports whether a and b have one namespace and name.
func sameName(a, b *metav1.ObjectMeta) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name
}

// minHintedSort is the fewest routes worth placing by their ranks rather
// than sorting outright.
const minHintedSort = 64

// sortNamed puts routes in compareNamed order, reusing routes' storage.
// Routes the Memo kept are placed by their rank, in one pass; only the others are
// sorted, and then merged in. The outcome is checked, and sorted outright
// when the ranks did not give compareNamed's order (two routes with one
// name), so the result is the same whatever the ranks say: at 10,000
// routes with one changed, this is a fraction of the sort it replaces.
func sortNamed[R any](routes []namedRoute[R]) []namedRoute[R] {
	return (&routeWalk[R]{}).sort(routes)
}

// routeWalk holds the lists one kind's route walk fills (processRouteKind
// and sortNamed), for the next translation to fill again: at 10,000
// routes they were a tenth of what a translation allocated. The zero
// value is ready.
type routeWalk[R any] struct {
	sorted, known, fresh []namedRoute[R]
	slots                []int
	// ranked, when not zero, is the Memo translation whose walk ranked
	// the routes kept: the ranks of the entries it left are their places
	// in one sorted order of their names (an entry it did not rank it
	// dropped), so routes placed by them need no check.
	ranked uint64
	// unique says the last sort placed routes of distinct names only
	// (kept routes by their distinct ranks, and new ones whose names
	// neither another new one nor a neighbour has): the walk need not
	// compare each route's name with the one before for a repeat.
	unique bool
	// carry is what the last walk left for this one to start from
	// (carryWalk).
	carry walkCarry[R]
}

// list is the walk's list of routes, emptied, with room for n.
func (w *routeWalk[R]) list(n int) []namedRoute[R] {
	return lists.Reuse(w.sorted, n)
}

// done ends a walk of routes whose sorted list was list and statuses out:
// with c (nil: nothing to carry), list is kept for the next walk to start
// from, else emptied, keeping no route alive, for the next to fill.
func (w *routeWalk[R]) done(t *translator, c *walkCarry[R], routes []*R, list []namedRoute[R], out []RouteStatus) {
	clear(w.known)
	clear(w.fresh)
	if c == nil {
		clear(list)
		w.sorted = list
		return
	}
	w.sorted = c.keep(t, routes, list, out)
}

// sort is sortNamed(routes), with the walk's scratch lists.
func (w *routeWalk[R]) sort(routes []namedRoute[R]) []namedRoute[R] {
	w.unique = false
	maxRank, hinted, trusted := -1, 0, w.ranked != 0
	for _, n := range routes {
		if n.kept != nil {
			hinted++
			maxRank = max(maxRank, n.kept.rank)
			trusted = trusted && n.kept.gen == w.ranked
		}
	}
	if len(routes) < minHintedSort || hinted == 0 || maxRank >= 2*len(routes)+minHintedSort {
		slices.SortFunc(routes, compareNamed)
		return routes
	}
	slots := lists.Reuse(w.slots, maxRank+1)[:maxRank+1] // index in routes + 1; 0 is empty
	clear(slots)
	w.slots = slots
	fresh := w.fresh[:0]
	for i, n := range routes {
		switch {
		case n.kept == nil || n.kept.rank < 0:
			fresh = append(fresh, n)
		case slots[n.kept.rank] != 0:
			slices.SortFunc(routes, compareNamed) // one rank twice
			return routes
		default:
			slots[n.kept.rank] = i + 1
		}
	}
	w.fresh = fresh
	known := lists.Reuse(w.known, len(routes)-len(fresh))
	for _, s := range slots {
		if s != 0 {
			known = append(known, routes[s-1])
		}
	}
	slices.SortFunc(fresh, compareNamed)
	// routes' contents are in known and fresh now: merge into it, finding
	// where each fresh route goes by binary search (a change adds one or
	// two among thousands).
	out := routes[:0]
	i := 0
	unique := trusted
	for _, f := range fresh {
		n, _ := slices.BinarySearchFunc(known[i:], f, compareNamed)
		out = append(append(out, known[i:i+n]...), f)
		i += n
		// A repeat of a new route's name is next to it.
		if len(out) > 1 && sameName(out[len(out)-2].meta, f.meta) || i < len(known) && sameName(known[i].meta, f.meta) {
			unique = false
		}
	}
	out = append(out, known[i:]...)
	w.known = known
	if !trusted && !slices.IsSortedFunc(out, compareNamed) {
		slices.SortFunc(out, compareNamed)
	}
	w.unique = unique
	return out
}
