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
	"slices"
	"strconv"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileHTTPRoute compiles every rule and match of an HTTPRoute.
func (t *translator) compileHTTPRoute(r *gwv1.HTTPRoute) *compiledRoute {
	cr := newCompiledRoute(kindHTTPRoute, &r.ObjectMeta, r.Spec.Hostnames)
	n := 0
	for ri := range r.Spec.Rules {
		cr.ruleNames = append(cr.ruleNames, sectionName(r.Spec.Rules[ri].Name))
		n += max(len(r.Spec.Rules[ri].Matches), 1)
	}
	cr.reserve(n)
	for ri := range r.Spec.Rules {
		t.compileHTTPRule(cr, ri, &r.Spec.Rules[ri])
	}
	cr.sortEntries()
	return cr
}

func (t *translator) compileHTTPRule(cr *compiledRoute, ri int, rule *gwv1.HTTPRouteRule) {
	base := snapshot.Route{ID: "httproute/" + cr.meta.Namespace + "/" + cr.meta.Name + ":" + strconv.Itoa(ri)}
	t.httpRuleFilters(cr, &base, ri, rule.Filters)
	base.Timeouts = ruleTimeouts(cr, rule.Timeouts)
	base.Retry = ruleRetry(cr, ri, rule.Retry)
	if base.Redirect == nil {
		t.applyBackends(cr, &base, httpBackendSpecs(cr, ri, rule.BackendRefs))
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

// httpBackendSpecs reads an HTTPRoute rule's backendRefs and their filters.
func httpBackendSpecs(cr *compiledRoute, ri int, refs []gwv1.HTTPBackendRef) []backendSpec {
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

// ruleTimeouts compiles a rule's timeouts; nil when it sets none.
func ruleTimeouts(cr *compiledRoute, tm *gwv1.HTTPRouteTimeouts) *snapshot.Timeouts {
	if tm == nil {
		return nil
	}
	var to snapshot.Timeouts
	if tm.Request != nil {
		to.Request = parseGWDuration(cr, "timeouts.request", *tm.Request)
	}
	if tm.BackendRequest != nil {
		to.Backend = parseGWDuration(cr, "timeouts.backendRequest", *tm.BackendRequest)
	}
	if to == (snapshot.Timeouts{}) {
		return nil
	}
	return &to
}

// defaultRetryAttempts is how many times a rule with a retry stanza that
// sets no attempts retries.
const defaultRetryAttempts = 1

// ruleRetry compiles a rule's retry stanza; nil when it has none. A
// configured retry also retries connection errors and backend timeouts,
// as the spec recommends.
func ruleRetry(cr *compiledRoute, ri int, rt *gwv1.HTTPRouteRetry) *snapshot.Retry {
	if rt == nil {
		return nil
	}
	out := &snapshot.Retry{Attempts: defaultRetryAttempts, ConnectionErrors: true, BackendTimeouts: true}
	if rt.Attempts != nil {
		if *rt.Attempts < 1 || *rt.Attempts > snapshot.MaxRetryAttempts {
			cr.fail("rule %d: retry.attempts %d is not in 1-%d", ri, *rt.Attempts, snapshot.MaxRetryAttempts)
			return nil
		}
		out.Attempts = int32(*rt.Attempts)
	}
	if rt.Backoff != nil {
		out.Backoff = parseGWDuration(cr, "retry.backoff", *rt.Backoff)
	}
	for _, c := range rt.Codes {
		if c < 400 || c > 599 {
			cr.fail("rule %d: retry code %d is not in 400-599", ri, c)
			return nil
		}
		out.Codes = append(out.Codes, int32(c))
	}
	slices.Sort(out.Codes)
	out.Codes = slices.Compact(out.Codes)
	return out
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
