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
	"strconv"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

func (t *translator) compileHTTPRoute(r *gwv1.HTTPRoute) *compiledRoute {
	cr := &compiledRoute{kind: kindHTTPRoute, meta: &r.ObjectMeta}
	var bad []string
	cr.hostnames, bad = routeHostnames(r.Spec.Hostnames)
	if len(bad) > 0 {
		cr.fail("invalid hostnames %v", bad)
	}
	for ri := range r.Spec.Rules {
		rule := &r.Spec.Rules[ri]
		base := snapshot.Route{ID: "httproute/" + r.Namespace + "/" + r.Name + ":" + strconv.Itoa(ri)}
		t.applyFilters(cr, &base, rule.Filters, kindHTTPRoute)
		if tm := rule.Timeouts; tm != nil {
			var to snapshot.Timeouts
			if tm.Request != nil {
				to.Request = parseGWDuration(cr, "timeouts.request", *tm.Request)
			}
			if tm.BackendRequest != nil {
				to.Backend = parseGWDuration(cr, "timeouts.backendRequest", *tm.BackendRequest)
			}
			if to != (snapshot.Timeouts{}) {
				base.Timeouts = &to
			}
		}
		if base.Redirect == nil {
			refs := make([]backendSpec, 0, len(rule.BackendRefs))
			for bi := range rule.BackendRefs {
				b := &rule.BackendRefs[bi]
				bs := backendSpec{ref: b.BackendObjectReference, weight: b.Weight}
				for fi := range b.Filters {
					f := &b.Filters[fi]
					switch f.Type {
					case gwv1.HTTPRouteFilterRequestHeaderModifier:
						bs.req = headerModifier(cr, f.RequestHeaderModifier)
					case gwv1.HTTPRouteFilterResponseHeaderModifier:
						bs.resp = headerModifier(cr, f.ResponseHeaderModifier)
					default:
						cr.fail("rule %d backendRef %d: filter type %q is not supported on backends", ri, bi, f.Type)
					}
				}
				refs = append(refs, bs)
			}
			t.applyBackends(cr, &base, kindHTTPRoute, refs, false)
		}
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{}}
		}
		for mi := range matches {
			m, ok := httpMatch(cr, &matches[mi])
			if !ok {
				continue
			}
			route := base
			route.Match = m
			if pathModifierNeedsPrefix(&route) && (m.Path == nil || m.Path.Type != snapshot.PathPrefix) {
				cr.fail("rule %d: ReplacePrefixMatch needs a PathPrefix match", ri)
				continue
			}
			cr.addEntry(route, ri, mi)
		}
	}
	return cr
}

func pathModifierNeedsPrefix(r *snapshot.Route) bool {
	if r.Redirect != nil && r.Redirect.Path != nil && r.Redirect.Path.Type == snapshot.ReplacePrefixMatch {
		return true
	}
	return r.Rewrite != nil && r.Rewrite.Path != nil && r.Rewrite.Path.Type == snapshot.ReplacePrefixMatch
}

func parseGWDuration(cr *compiledRoute, field string, d gwv1.Duration) snapshot.Duration {
	v, err := time.ParseDuration(string(d))
	if err != nil || v < 0 {
		cr.fail("%s %q is not a valid duration", field, d)
		return 0
	}
	return snapshot.Duration(v)
}
