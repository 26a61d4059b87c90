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
	"sort"

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
	entries   []routeEntry
	// err makes the route Accepted=False UnsupportedValue on every parent.
	err string
	// resolved* is the ResolvedRefs condition (first failure wins).
	resolvedReason, resolvedMsg string
}

type routeEntry struct {
	route       snapshot.Route
	rule, match int
	key         precKey
}

// addEntry appends a compiled match with its precedence key.
func (cr *compiledRoute) addEntry(route snapshot.Route, rule, match int) {
	k := matchKey(&route.Match, cr.kind == kindGRPCRoute)
	k.created, k.namespace, k.name, k.kind = cr.meta.CreationTimestamp, cr.meta.Namespace, cr.meta.Name, cr.kind
	k.rule, k.match = rule, match
	k.finalize()
	cr.entries = append(cr.entries, routeEntry{route: route, rule: rule, match: match, key: k})
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

func (t *translator) processRoutes() {
	hrs := make([]*gwv1.HTTPRoute, 0, len(t.res.HTTPRoutes))
	for _, r := range t.res.HTTPRoutes {
		if r != nil && named(&r.ObjectMeta) {
			hrs = append(hrs, r)
		}
	}
	sort.SliceStable(hrs, func(i, j int) bool { return byName(&hrs[i].ObjectMeta, &hrs[j].ObjectMeta) })
	var last nn
	for i, r := range hrs {
		k := key(&r.ObjectMeta)
		if i > 0 && last == k {
			continue
		}
		last = k
		if !t.hasOurParent(r.Namespace, r.Spec.ParentRefs) {
			continue
		}
		cr := t.compileHTTPRoute(r)
		if parents := t.attach(cr, r.Spec.ParentRefs); len(parents) > 0 {
			t.out.HTTPRoutes = append(t.out.HTTPRoutes, RouteStatus{NamespacedName: k, Generation: r.Generation, Parents: parents})
		}
	}
	grs := make([]*gwv1.GRPCRoute, 0, len(t.res.GRPCRoutes))
	for _, r := range t.res.GRPCRoutes {
		if r != nil && named(&r.ObjectMeta) {
			grs = append(grs, r)
		}
	}
	sort.SliceStable(grs, func(i, j int) bool { return byName(&grs[i].ObjectMeta, &grs[j].ObjectMeta) })
	for i, r := range grs {
		k := key(&r.ObjectMeta)
		if i > 0 && last == k {
			continue
		}
		last = k
		if !t.hasOurParent(r.Namespace, r.Spec.ParentRefs) {
			continue
		}
		cr := t.compileGRPCRoute(r)
		if parents := t.attach(cr, r.Spec.ParentRefs); len(parents) > 0 {
			t.out.GRPCRoutes = append(t.out.GRPCRoutes, RouteStatus{NamespacedName: k, Generation: r.Generation, Parents: parents})
		}
	}
}

// --- HTTPRoute -------------------------------------------------------------
