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
	cr := newCompiledRoute(kindGRPCRoute, &r.ObjectMeta, r.Spec.Hostnames)
	n := 0
	for ri := range r.Spec.Rules {
		cr.ruleNames = append(cr.ruleNames, sectionName(r.Spec.Rules[ri].Name))
		n += max(len(r.Spec.Rules[ri].Matches), 1)
	}
	cr.reserve(n)
	for ri := range r.Spec.Rules {
		t.compileGRPCRule(cr, ri, &r.Spec.Rules[ri])
	}
	cr.sortEntries()
	return cr
}

func (t *translator) compileGRPCRule(cr *compiledRoute, ri int, rule *gwv1.GRPCRouteRule) {
	base := snapshot.Route{ID: fmt.Sprintf("grpcroute/%s/%s:%d", cr.meta.Namespace, cr.meta.Name, ri)}
	t.grpcRuleFilters(cr, &base, ri, rule.Filters)
	t.applyBackends(cr, &base, grpcBackendSpecs(cr, ri, rule.BackendRefs))
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

// grpcBackendSpecs reads a GRPCRoute rule's backendRefs and their filters.
func grpcBackendSpecs(cr *compiledRoute, ri int, refs []gwv1.GRPCBackendRef) []backendSpec {
	out := make([]backendSpec, 0, len(refs))
	for bi := range refs {
		b := &refs[bi]
		bs := backendSpec{ref: b.BackendObjectReference, weight: b.Weight}
		for fi := range b.Filters {
			f := &b.Filters[fi]
			backendFilter(cr, &bs, ri, bi, string(f.Type), f.RequestHeaderModifier, f.ResponseHeaderModifier)
		}
		out = append(out, bs)
	}
	return out
}
