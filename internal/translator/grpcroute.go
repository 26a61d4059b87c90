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

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileGRPCRoute maps gRPC service/method matches onto path matches:
// service+method → Exact "/svc/method"; service only → PathPrefix "/svc";
// method only → RegularExpression "/[^/]+/method"; RegularExpression type
// → "/<service>/<method>" with "[^/]+" for an omitted part. Backends are
// h2c.
func (t *translator) compileGRPCRoute(r *gwv1.GRPCRoute) *compiledRoute {
	cr := &compiledRoute{kind: kindGRPCRoute, meta: &r.ObjectMeta}
	var bad []string
	cr.hostnames, bad = routeHostnames(r.Spec.Hostnames)
	if len(bad) > 0 {
		cr.fail("invalid hostnames %v", bad)
	}
	for ri := range r.Spec.Rules {
		rule := &r.Spec.Rules[ri]
		base := snapshot.Route{ID: fmt.Sprintf("grpcroute/%s/%s:%d", r.Namespace, r.Name, ri)}
		httpFilters := make([]gwv1.HTTPRouteFilter, 0, len(rule.Filters))
		for _, f := range rule.Filters {
			hf := gwv1.HTTPRouteFilter{
				RequestHeaderModifier:  f.RequestHeaderModifier,
				ResponseHeaderModifier: f.ResponseHeaderModifier,
				RequestMirror:          f.RequestMirror,
			}
			switch f.Type {
			case gwv1.GRPCRouteFilterRequestHeaderModifier:
				hf.Type = gwv1.HTTPRouteFilterRequestHeaderModifier
			case gwv1.GRPCRouteFilterResponseHeaderModifier:
				hf.Type = gwv1.HTTPRouteFilterResponseHeaderModifier
			case gwv1.GRPCRouteFilterRequestMirror:
				hf.Type = gwv1.HTTPRouteFilterRequestMirror
			default:
				cr.fail("rule %d: filter type %q is not supported", ri, f.Type)
				continue
			}
			httpFilters = append(httpFilters, hf)
		}
		t.applyFilters(cr, &base, httpFilters, kindGRPCRoute)
		refs := make([]backendSpec, 0, len(rule.BackendRefs))
		for bi := range rule.BackendRefs {
			b := &rule.BackendRefs[bi]
			bs := backendSpec{ref: b.BackendObjectReference, weight: b.Weight}
			for _, f := range b.Filters {
				switch f.Type {
				case gwv1.GRPCRouteFilterRequestHeaderModifier:
					bs.req = headerModifier(cr, f.RequestHeaderModifier)
				case gwv1.GRPCRouteFilterResponseHeaderModifier:
					bs.resp = headerModifier(cr, f.ResponseHeaderModifier)
				default:
					cr.fail("rule %d backendRef %d: filter type %q is not supported on backends", ri, bi, f.Type)
				}
			}
			refs = append(refs, bs)
		}
		t.applyBackends(cr, &base, kindGRPCRoute, refs, true)
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.GRPCRouteMatch{{}}
		}
		for mi := range matches {
			m, ok := grpcMatch(cr, &matches[mi])
			if !ok {
				continue
			}
			route := base
			route.Match = m
			cr.addEntry(route, ri, mi)
		}
	}
	return cr
}
