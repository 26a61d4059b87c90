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
	"iter"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// A route walk (processRouteKind) visits every route of its kind. At
// 10,000 routes with one changed, that walk was half of a translation at
// 1,000 Gateways, although it reused every attachment but one: each
// route's entry, status and attachments are scattered over the heap. In
// the environment of the last translation, a walk starts instead from
// what the last walk of its kind left (walkCarry): it visits only the
// routes that are not objects of the last input, drops those gone, and
// takes every other route's attachments, status and endpoint sets from
// the last walk, without a look at the route. The outcome is the walk's
// (TestMemoEqualsTranslate, TestCarriedWalkEqualsTranslate).

// maxCarried is the most routes added and removed that a walk carries
// the last one over; it walks them all when more changed.
const maxCarried = 64

// carryLookahead is how far the comparison of two inputs looks for an
// object of one in the other before counting both as changed.
const carryLookahead = 4

// walkCarry is what one kind's last route walk left for the next.
type walkCarry[R any] struct {
	// gen is the Memo translation that left it (0: none), ords how many
	// listeners that translation numbered.
	gen  uint64
	ords int
	// in is that translation's input; all its routes with a name, in
	// compareNamed order, each with the Memo entry that held its
	// attachment (kept; nil: none, or not ours); out its statuses.
	in  []*R
	all []namedRoute[R]
	out []RouteStatus
	// seg is, by ord, the walk's part of each listener's route list in
	// that translation (Memo.routeLists), and the routes it counted there.
	seg []walkSeg
	// entries counts the routes of all with an entry. ok says the next
	// walk may start from the carry: every route of ours had an entry
	// holding its attachment, and no name came twice.
	entries int
	ok      bool
	// setList is the endpointSet calls of the routes of all, one for each
	// set, with how many of the routes make it (0: none any more), in no
	// order; setAt is where each set is in it (nil: not listed yet), and
	// unused how many have 0. A list, not a map, is walked at every
	// translation: at 10,000 sets, a map's walk was a tenth of a change.
	setList []carriedSet
	setAt   map[string]int
	unused  int

	// Scratch: each listener's route list length and count when the walk
	// began (from, counted), where its carried part ends (mid), and how
	// many removed routes it had counted (drop); the input's objects
	// added and removed, then as routes, and where the added went.
	from, mid          []int
	counted, drop      []int32
	addedIn, removedIn []*R
	added, removed     []namedRoute[R]
	at, gone, places   []int
	fresh              []RouteStatus
}

// walkSeg is a walk's part of one listener's route list, [from, to), and
// how many routes it counted there.
type walkSeg struct {
	from, to int
	attached int32
}

// carriedSet is one endpoint set the routes of a walk make: the call that
// makes it, and how many of the routes make it.
type carriedSet struct {
	call [1]setCall
	n    int
}

// begin starts recording a full walk for the next one to start from (nil:
// nothing to record, without a Memo or a memo kind).
func (c *walkCarry[R]) begin(t *translator, memoKind string) *walkCarry[R] {
	if t.memo == nil || memoKind == "" {
		return nil
	}
	c.gen, c.ok, c.entries, c.setAt = 0, true, 0, nil
	c.mark(t)
	return c
}

// mark records each listener's route list length and count as a walk
// begins.
func (c *walkCarry[R]) mark(t *translator) {
	n := len(t.states)
	c.from, c.counted = sized(c.from, n), sized(c.counted, n)
	for i := range t.states {
		c.from[i], c.counted[i] = len(t.states[i].routes), t.states[i].attached
	}
}

// twice notes a route skipped for a name that came before.
func (c *walkCarry[R]) twice() {
	if c != nil {
		c.ok = false
	}
}

// visited notes a route visited: used is the entry holding its
// attachment (nil: none), ours whether a parent of ours took it.
func (c *walkCarry[R]) visited(used *memoRoute, ours bool) {
	if c == nil {
		return
	}
	if used != nil {
		c.entries++
	}
	if ours && (used == nil || !used.attached) {
		c.ok = false
	}
}

// keep ends a walk of routes whose sorted list was list (each route's
// kept the entry that holds its attachment) and statuses out, keeping
// them for the next walk to start from, with each listener's part of its
// route list. It returns the list the carry held, emptied, for the next
// walk to fill.
func (c *walkCarry[R]) keep(t *translator, routes []*R, list []namedRoute[R], out []RouteStatus) []namedRoute[R] {
	n := len(t.states)
	c.seg = lists.Reuse(c.seg, n)
	for i := range t.states {
		st := &t.states[i]
		c.seg = append(c.seg, walkSeg{from: c.from[i], to: len(st.routes), attached: st.attached - c.counted[i]})
	}
	c.in = append(c.in[:0], routes...)
	spare := c.all
	clear(spare)
	c.all, c.out = list, out
	c.gen, c.ords = t.memo.gen, len(t.byOrd)
	return spare[:0]
}

// sized is s with length n, its contents undefined.
func sized[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, n+n/8)
	}
	return s[:n]
}

// carryWalk is processRouteKind's walk of routes started from the last
// one's carry, and true; or nil and false, having changed nothing the
// walk reads, when it cannot start from it: no carry of the last
// translation, another environment, or too many routes changed.
func carryWalk[R any, PR interface {
	*R
	metav1.ObjectMetaAccessor
}](t *translator, w *routeWalk[R], memoKind string, routes []*R, v *routeVisit[R]) ([]RouteStatus, bool) {
	p := t.memo
	c := &w.carry
	if p == nil || memoKind == "" || !c.ok || c.gen == 0 || c.gen+1 != p.gen || !p.sameEnv || c.ords != len(t.byOrd) || len(t.states) != c.ords || !c.lastListsHold(p.lastRoutes) {
		return nil, false
	}
	if !c.diff(routes) {
		clear(c.addedIn) // keeping no route alive
		clear(c.removedIn)
		return nil, false
	}
	added, removed, ok := carryChanges[R, PR](p, c, memoKind)
	clear(c.addedIn)
	clear(c.removedIn)
	c.addedIn, c.removedIn = c.addedIn[:0], c.removedIn[:0]
	defer func() { // keeping no route alive
		clear(added)
		clear(removed)
		c.added, c.removed = added[:0], removed[:0]
	}()
	if !ok {
		return nil, false
	}
	// The endpoint sets of the routes carried: each made once, as the
	// walk's first route that makes it would. A set a translation made
	// already is not made again, so giving up after this changes nothing
	// a walk would do.
	if c.setAt == nil {
		c.listSets()
	}
	for _, n := range removed {
		if n.kept != nil {
			c.countSets(n.kept.sets, -1)
		}
	}
	plain, first := t.plainSets(), len(t.endpointSets) == 0 && len(t.scratch.remade) == 0
	for i := range c.setList {
		s := &c.setList[i]
		if s.n == 0 {
			continue
		}
		if plain && t.remakeSet(&s.call[0], first) {
			continue
		}
		if !t.replaySets(s.call[:]) {
			c.ok = false
			return nil, false
		}
	}

	// From here on, nothing gives up. Each listener's route list: the
	// carry's part, less the removed routes.
	c.mark(t)
	drop := sized(c.drop, len(t.states))
	clear(drop)
	c.drop = drop
	for _, n := range removed {
		if e := n.kept; e != nil {
			for i, a := range e.atts {
				if !slices.ContainsFunc(e.atts[:i], func(b memoAtt) bool { return b.ord == a.ord }) {
					drop[a.ord-1]++
				}
			}
		}
	}
	mid := sized(c.mid, len(t.states))
	c.mid = mid
	for i := range t.states {
		st := &t.states[i]
		s := c.seg[i]
		part := p.lastRoutes[i][s.from:s.to]
		if drop[i] == 0 {
			st.routes = append(st.routes, part...)
		} else {
			for _, a := range part {
				if !isRemoved(removed, a.cr.meta) {
					st.routes = append(st.routes, a)
				}
			}
		}
		st.attached += s.attached - drop[i]
		mid[i] = len(st.routes)
	}

	// The routes in order: the carry's, less the removed, with the added,
	// copied in runs between the places found by binary search (a
	// comparison with each of 10,000 routes, their names scattered over
	// the heap, was most of a carried walk).
	gone := c.gone[:0]
	for _, n := range removed {
		i, _ := c.find(n.meta)
		gone = append(gone, i)
	}
	places := c.places[:0]
	for _, n := range added {
		i, _ := c.find(n.meta)
		places = append(places, i)
	}
	c.gone, c.places = gone, places
	all, at := mergeRuns(w.list(len(c.all)+len(added)), c.all, gone, added, places, c.at[:0])
	c.at = at

	// The added routes visited, in order, their attachments appended to
	// the lists, then moved into place.
	fresh := c.fresh[:0]
	entries, carried := 0, c.entries
	okNext := true
	for _, i := range at {
		n := &all[i]
		k, gen := n.kept.nameOf(n.meta)
		s, used, ours := v.visit(n, i, k, gen)
		n.kept = used
		if used != nil {
			entries++
		}
		if ours && (used == nil || !used.attached) {
			okNext = false
		}
		if s != nil {
			fresh = append(fresh, RouteStatus{s})
		}
	}
	for i := range t.states {
		if st := &t.states[i]; mid[i] < len(st.routes) {
			mergeTail(st.routes, c.from[i], mid[i])
		}
	}
	out := mergeStatuses(c.out, removed, fresh)
	clear(fresh)
	c.fresh = fresh[:0]

	// The Memo's entries: the removed routes' are dropped (unless an
	// added route took one again), the carried ones count as reused.
	for _, n := range removed {
		e := n.kept
		if e == nil {
			continue
		}
		carried--
		if e.gen != p.gen {
			if k := (memoKey{memoKind, e.name.Namespace, e.name.Name}); p.routes[k] == e {
				delete(p.routes, k)
			}
			p.forgetObject(e)
		}
	}
	for _, i := range at {
		if e := all[i].kept; e != nil {
			c.countSets(e.sets, 1)
		}
	}
	p.current += carried
	p.hits += carried
	p.walked = append(p.walked, memoKind)
	p.routesCarried += carried
	w.sorted = c.keep(t, routes, all, out)
	c.entries, c.ok = carried+entries, okNext
	return out, true
}

// lastListsHold reports whether the last translation's route lists
// (nil: none) hold every listener's part the carry names.
func (c *walkCarry[R]) lastListsHold(last [][]attachment) bool {
	if len(c.seg) != c.ords || len(last) < c.ords {
		return false
	}
	for i, s := range c.seg {
		if s.from < 0 || s.from > s.to || s.to > len(last[i]) {
			return false
		}
	}
	return true
}

// diff lists into addedIn the objects of routes that are not in the
// carry's input, and into removedIn those of its input that are not in
// routes; it reports false when they are more than maxCarried. It
// compares the two lists in step, looking ahead a little for an object
// of one in the other; an object found in neither place counts as removed
// and added again, which a carried walk handles as it would a change.
func (c *walkCarry[R]) diff(routes []*R) bool {
	old := c.in
	added, removed := c.addedIn[:0], c.removedIn[:0]
	i, j := 0, 0
	for i < len(routes) || j < len(old) {
		if i < len(routes) && j < len(old) && routes[i] == old[j] {
			i, j = i+1, j+1
			continue
		}
		if len(added)+len(removed) > maxCarried {
			break
		}
		switch {
		case i == len(routes):
			removed = append(removed, old[j])
			j++
		case j == len(old):
			added = append(added, routes[i])
			i++
		default:
			if k := slices.Index(old[j+1:min(len(old), j+1+carryLookahead)], routes[i]); k >= 0 {
				removed = append(removed, old[j:j+1+k]...)
				j += 1 + k
			} else if k := slices.Index(routes[i+1:min(len(routes), i+1+carryLookahead)], old[j]); k >= 0 {
				added = append(added, routes[i:i+1+k]...)
				i += 1 + k
			} else {
				added, removed = append(added, routes[i]), append(removed, old[j])
				i, j = i+1, j+1
			}
		}
	}
	c.addedIn, c.removedIn = added, removed
	return len(added)+len(removed) <= maxCarried
}

// carryChanges turns the carry's added and removed objects into routes in
// compareNamed order: the added with their Memo entries (as a walk finds
// them), the removed as the carry has them. It reports false when a walk
// must decide: an added route's name is another route's, or a removed one
// is not the carry's.
func carryChanges[R any, PR interface {
	*R
	metav1.ObjectMetaAccessor
}](p *memoPass, c *walkCarry[R], memoKind string) (added, removed []namedRoute[R], ok bool) {
	added, removed = c.added[:0], c.removed[:0]
	for _, meta := range namedMetas[R, PR](c.removedIn) {
		i, found := c.find(meta)
		if !found || c.all[i].meta != meta {
			return added, removed, false
		}
		if e := c.all[i].kept; e != nil {
			for _, a := range e.atts {
				if a.ord < 1 || a.ord > c.ords {
					return added, removed, false
				}
			}
		}
		removed = append(removed, c.all[i])
	}
	for r, meta := range namedMetas[R, PR](c.addedIn) {
		if i, found := c.find(meta); found && !isRemoved(removed, c.all[i].meta) {
			return added, removed, false // a name twice
		}
		kept := p.keptObject(memoKind, meta)
		if kept == nil {
			kept = p.kept(memoKind, meta)
		}
		added = append(added, namedRoute[R]{meta: meta, r: r, kept: kept})
	}
	byName := func(a, b namedRoute[R]) int { return compareNames(a.meta, b.meta) }
	slices.SortFunc(removed, byName)
	slices.SortFunc(added, byName)
	for i := 1; i < len(added); i++ {
		if compareNames(added[i-1].meta, added[i].meta) == 0 {
			return added, removed, false
		}
	}
	for i := 1; i < len(removed); i++ {
		if removed[i-1].meta == removed[i].meta {
			return added, removed, false // an object listed twice
		}
	}
	return added, removed, true
}

// namedMetas yields each route of routes with a name, and its metadata,
// as a walk takes them (nil and unnamed routes are skipped).
func namedMetas[R any, PR interface {
	*R
	metav1.ObjectMetaAccessor
}](routes []*R) iter.Seq2[*R, *metav1.ObjectMeta] {
	return func(yield func(*R, *metav1.ObjectMeta) bool) {
		for _, r := range routes {
			if r == nil {
				continue
			}
			if meta := PR(r).GetObjectMeta().(*metav1.ObjectMeta); named(meta) && !yield(r, meta) {
				return
			}
		}
	}
}

// find is where the route named as meta is, or would be, in the carry's
// routes, and whether it is there.
func (c *walkCarry[R]) find(meta *metav1.ObjectMeta) (int, bool) {
	return slices.BinarySearchFunc(c.all, meta, func(n namedRoute[R], m *metav1.ObjectMeta) int { return compareNames(n.meta, m) })
}

// listSets counts the endpointSet calls of the carry's routes.
func (c *walkCarry[R]) listSets() {
	clear(c.setList)
	c.setList, c.setAt, c.unused = c.setList[:0], map[string]int{}, 0
	for i := range c.all {
		if e := c.all[i].kept; e != nil {
			c.countSets(e.sets, 1)
		}
	}
}

// countSets adds d to the count of each set calls make; the sets none
// makes any more are dropped once they are many.
func (c *walkCarry[R]) countSets(calls []setCall, d int) {
	for _, call := range calls {
		i, ok := c.setAt[call.name]
		if !ok {
			i = len(c.setList)
			c.setList = append(c.setList, carriedSet{call: [1]setCall{call}})
			c.setAt[call.name] = i
		}
		s := &c.setList[i]
		was := s.n
		s.n = max(s.n+d, 0)
		switch {
		case was > 0 && s.n == 0:
			c.unused++
		case was == 0 && s.n > 0 && ok:
			c.unused--
		}
	}
	if c.unused > len(c.setList)/2+64 {
		kept := c.setList[:0]
		for _, s := range c.setList {
			if s.n > 0 {
				c.setAt[s.call[0].name] = len(kept)
				kept = append(kept, s)
			} else {
				delete(c.setAt, s.call[0].name)
			}
		}
		clear(c.setList[len(kept):])
		c.setList, c.unused = kept, 0
	}
}

// isRemoved reports whether meta is of a route in removed.
func isRemoved[R any](removed []namedRoute[R], meta *metav1.ObjectMeta) bool {
	for i := range removed {
		if removed[i].meta == meta {
			return true
		}
	}
	return false
}

// mergeTail moves each attachment of list[mid:] (in name order, few) into
// its place among list[from:mid] (in name order): one listener's route
// list after a carried walk appended the added routes' attachments.
func mergeTail(list []attachment, from, mid int) {
	for k := mid; k < len(list); k++ {
		a := list[k]
		n, _ := slices.BinarySearchFunc(list[from:k], a.cr.meta, func(b attachment, m *metav1.ObjectMeta) int { return compareNames(b.cr.meta, m) })
		copy(list[from+n+1:k+1], list[from+n:k])
		list[from+n] = a
		from += n + 1
	}
}

// mergeRuns appends to out the elements of last (in order) but those at
// the indices gone (ascending), with each element of added (in order)
// inserted before last[places[i]] (ascending; before a gone element of
// the same place), and returns out and, appended to at, where the added
// went.
func mergeRuns[E any](out, last []E, gone []int, added []E, places []int, at []int) ([]E, []int) {
	next, gi, ai := 0, 0, 0
	for gi < len(gone) || ai < len(added) {
		if ai < len(added) && (gi == len(gone) || places[ai] <= gone[gi]) {
			out = append(out, last[next:places[ai]]...)
			next = places[ai]
			at = append(at, len(out))
			out = append(out, added[ai])
			ai++
			continue
		}
		out = append(out, last[next:gone[gi]]...)
		next = gone[gi] + 1
		gi++
	}
	return append(out, last[next:]...), at
}

// mergeStatuses is last's statuses (in name order) less those of the
// removed routes (in name order), with fresh (in name order) in place;
// nil when none. Places are found by binary search.
func mergeStatuses[R any](last []RouteStatus, removed []namedRoute[R], fresh []RouteStatus) []RouteStatus {
	if len(last)+len(fresh) == 0 {
		return nil
	}
	find := func(k nn) (int, bool) {
		return slices.BinarySearchFunc(last, k, func(s RouteStatus, k nn) int { return compareNN(s.NamespacedName, k) })
	}
	var gone, places []int
	for _, n := range removed {
		if i, found := find(key(n.meta)); found {
			gone = append(gone, i)
		}
	}
	for _, s := range fresh {
		i, _ := find(s.NamespacedName)
		places = append(places, i)
	}
	out, _ := mergeRuns(make([]RouteStatus, 0, len(last)+len(fresh)), last, gone, fresh, places, nil)
	if len(out) == 0 {
		return nil
	}
	return out
}
