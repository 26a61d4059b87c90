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
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compiledRoute is an HTTPRoute or GRPCRoute turned into snapshot routes,
// independent of the parent it attaches to.
type compiledRoute struct {
	kind      string
	meta      *metav1.ObjectMeta
	hostnames []string
	// keys are the precedence keys of the compiled matches, each of which
	// names its rule and match.
	keys []precKey
	// routes are the matches' compiled routes (routes[i] is keys[i]'s),
	// in a list of their own, both in precedence order once compiled
	// (sortEntries): a virtual host that one entry, or this route alone,
	// serves takes routes[i:i+1], or routes, as its route list (ownList)
	// instead of a copy.
	routes []snapshot.Route
	// err makes the route Accepted=False UnsupportedValue on every parent.
	err string
	// resolved* is the ResolvedRefs condition (first failure wins).
	resolvedReason, resolvedMsg string
	// stream is the compiled rule of a TLSRoute, TCPRoute or UDPRoute
	// (keys stay empty); its Hostname is filled in per listener.
	stream *snapshot.StreamRoute
	// ruleNames are the rules' names ("" for none), for policies that
	// target a rule by sectionName; ext are the policies each rule's
	// ExtensionRef filters applied (policies.go).
	ruleNames []string
	ext       map[int][]*policy
	// usedBy is the id of the scope builder every entry was last emitted
	// into as compiled (unchanged by policies or client certificates),
	// their endpoint sets recorded there (emitHTTPListeners); uses are
	// those sets, once listed (useCompiled).
	usedBy uint64
	uses   []setUse
}

// addEntry appends a compiled match with its precedence key.
func (cr *compiledRoute) addEntry(route snapshot.Route, rule, match int) {
	k := matchRank(&route.Match, cr.kind == kindGRPCRoute).key(cr.meta.CreationTimestamp, cr.meta.Namespace, cr.meta.Name, cr.kind, rule, match)
	cr.keys = append(cr.keys, k)
	cr.routes = append(cr.routes, route)
}

// entry is match i as a virtual host's entry, its route as is.
func (cr *compiledRoute) entry(i int) entry {
	return entry{route: &cr.routes[i], key: &cr.keys[i], of: cr, at: i}
}

// reserve makes room for n matches, those of every rule.
func (cr *compiledRoute) reserve(n int) {
	if n == 0 {
		return
	}
	cr.keys, cr.routes = make([]precKey, 0, n), make([]snapshot.Route, 0, n)
}

// sortEntries puts the keys, and their routes with them, in precedence
// order: the order a virtual host lists them in, so that a host this
// route alone serves takes its routes as they are (ownList). Keys within
// a route differ in their rule or match, so the order is total.
func (cr *compiledRoute) sortEntries() {
	if n := len(cr.keys); n <= 8 {
		// In place: most routes have a match or two.
		for i := 1; i < n; i++ {
			for j := i; j > 0 && cr.keys[j].compare(&cr.keys[j-1]) < 0; j-- {
				cr.keys[j], cr.keys[j-1] = cr.keys[j-1], cr.keys[j]
				cr.routes[j], cr.routes[j-1] = cr.routes[j-1], cr.routes[j]
			}
		}
		return
	}
	sorted := true
	for i := 1; i < len(cr.keys) && sorted; i++ {
		sorted = cr.keys[i-1].compare(&cr.keys[i]) < 0
	}
	if sorted {
		return
	}
	order := make([]int, len(cr.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cr.keys[a].compare(&cr.keys[b]) })
	keys, routes := make([]precKey, len(order)), make([]snapshot.Route, len(order))
	for i, j := range order {
		keys[i], routes[i] = cr.keys[j], cr.routes[j]
	}
	cr.keys, cr.routes = keys, routes
}

// newCompiledRoute starts compiling a route of kind: its hostnames, an
// invalid one failing the whole route.
func newCompiledRoute(kind string, meta *metav1.ObjectMeta, hostnames []gwv1.Hostname) *compiledRoute {
	cr := &compiledRoute{kind: kind, meta: meta}
	var bad []string
	cr.hostnames, bad = routeHostnames(hostnames)
	if len(bad) > 0 {
		cr.fail("invalid hostnames %v", bad)
	}
	return cr
}

func (cr *compiledRoute) fail(format string, args ...any) {
	if cr.err == "" {
		cr.err = fmt.Sprintf(format, args...)
	}
}

func (cr *compiledRoute) unresolved(reason, msg string) {
	if cr.resolvedReason == "" {
		cr.resolvedReason, cr.resolvedMsg = reason, msg
	}
}

// processRoutes compiles every route of each kind (HTTPRoute, GRPCRoute,
// then the stream kinds) with a parent Gateway of ours and attaches it to
// its listeners.
func (t *translator) processRoutes() {
	t.listenerStates()
	t.out.HTTPRoutes = processRouteKind(t, kindHTTPRoute, t.res.HTTPRoutes, httpRouteParts, memoizedCompile(t, kindHTTPRoute, httpRouteParts, t.compileHTTPRoute))
	t.out.GRPCRoutes = processRouteKind(t, kindGRPCRoute, t.res.GRPCRoutes, grpcRouteParts, memoizedCompile(t, kindGRPCRoute, grpcRouteParts, t.compileGRPCRoute))
	// Stream routes are compiled afresh every time (no memo kind).
	t.out.TLSRoutes = processRouteKind(t, "", t.res.TLSRoutes, tlsRouteParts, t.compileTLSRoute)
	t.out.TCPRoutes = processRouteKind(t, "", t.res.TCPRoutes, tcpRouteParts, t.compileTCPRoute)
	t.out.UDPRoutes = processRouteKind(t, "", t.res.UDPRoutes, udpRouteParts, t.compileUDPRoute)
	t.noteSizes()
}

func httpRouteParts(r *gwv1.HTTPRoute) (*metav1.ObjectMeta, []gwv1.ParentReference) {
	return &r.ObjectMeta, r.Spec.ParentRefs
}

func grpcRouteParts(r *gwv1.GRPCRoute) (*metav1.ObjectMeta, []gwv1.ParentReference) {
	return &r.ObjectMeta, r.Spec.ParentRefs
}

// processRouteKind compiles and attaches the routes of one kind, in
// namespace/name order (a repeated name once), and returns the status of
// those with a parent Gateway of ours. parts gives a route's metadata and
// parentRefs; memoKind, when set, is the kind a Memo keeps the routes'
// compilations and attachments under.
//
// A route that is the very object the Memo's entry was made from is not
// read at all: its name, generation and attachment are the entry's. At
// 10,000 routes with one changed, reading each route object (scattered
// over the heap) was a tenth of a translation.
func processRouteKind[R any, PR interface {
	*R
	metav1.ObjectMetaAccessor
}](t *translator, memoKind string, routes []*R, parts func(*R) (*metav1.ObjectMeta, []gwv1.ParentReference), compile func(*R) *compiledRoute) []RouteStatus {
	walk := walkOf[R](t.memo, memoKind)
	v := &routeVisit[R]{t: t, parts: parts, compile: compile}
	if out, ok := carryWalk[R, PR](t, walk, memoKind, routes, v); ok {
		return out
	}
	sorted := walk.list(len(routes))
	for i, r := range routes {
		if r == nil {
			continue
		}
		meta := PR(r).GetObjectMeta().(*metav1.ObjectMeta) // its address: nothing of r is read
		if kept := t.memo.keptObject(memoKind, meta); kept != nil {
			sorted = append(sorted, namedRoute[R]{meta: meta, r: r, at: i, kept: kept})
		} else if named(meta) {
			sorted = append(sorted, namedRoute[R]{meta: meta, r: r, at: i, kept: t.memo.kept(memoKind, meta)})
		}
	}
	sorted = walk.sort(sorted)
	carry := walk.carry.begin(t, memoKind)
	var out []RouteStatus // nil when none: the Result says null
	if t.memo == nil {
		v.states = make([]RouteState, 0, len(sorted))
	}
	var last nn
	for i := range sorted {
		n := &sorted[i]
		k, gen := n.kept.nameOf(n.meta)
		if i > 0 && !walk.unique && last == k {
			n.kept = nil
			carry.twice()
			continue
		}
		last = k
		s, used, ours := v.visit(n, i, k, gen)
		n.kept = used
		carry.visited(used, ours)
		if s != nil {
			if out == nil {
				out = make([]RouteStatus, 0, len(sorted)-i)
			}
			out = append(out, RouteStatus{s})
		}
	}
	walk.done(t, carry, routes, sorted, out)
	return out
}

// routeVisit is what a kind's route walk needs to visit one route.
type routeVisit[R any] struct {
	t       *translator
	parts   func(*R) (*metav1.ObjectMeta, []gwv1.ParentReference)
	compile func(*R) *compiledRoute
	// states holds the routes' states without a Memo (routeState).
	states []RouteState
}

// visit compiles and attaches route n, at position i of its kind's order,
// named k at generation gen (its attachment reused when the Memo's entry
// has it), and returns its state (nil: no parent of ours took a status),
// the Memo's entry that now holds its attachment (nil: none), and whether
// a parentRef names a Gateway or ListenerSet of ours.
func (v *routeVisit[R]) visit(n *namedRoute[R], i int, k nn, gen int64) (s *RouteState, used *memoRoute, ours bool) {
	t := v.t
	t.memo.ranking(i)
	parents, reused := t.memo.reattach(t, n.kept, n.meta)
	if !reused {
		_, refs := v.parts(n.r)
		if !t.hasOurParent(n.meta.Namespace, refs) {
			return nil, nil, false
		}
		parents = t.attachRoute(v.compile(n.r), refs)
	}
	if t.memo != nil {
		used = t.memo.stated
	}
	if len(parents) > 0 {
		s = t.memo.routeState(&v.states, k, gen, parents)
	}
	return s, used, true
}

// --- HTTPRoute -------------------------------------------------------------
