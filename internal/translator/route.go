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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
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

func (t *translator) parentGateway(routeNS string, ref *gwv1.ParentReference) *gatewayInfo {
	if ref.Group != nil && string(*ref.Group) != gatewayGroup {
		return nil
	}
	if ref.Kind != nil && string(*ref.Kind) != kindGateway {
		return nil
	}
	ns := routeNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return t.gateways[nn{Namespace: ns, Name: string(ref.Name)}]
}

func (t *translator) hasOurParent(ns string, refs []gwv1.ParentReference) bool {
	for i := range refs {
		if t.parentGateway(ns, &refs[i]) != nil {
			return true
		}
	}
	return false
}

// attach binds a compiled route to the listeners its parentRefs select and
// returns the route's status for the parents this controller owns.
func (t *translator) attach(cr *compiledRoute, refs []gwv1.ParentReference) []gwv1.RouteParentStatus {
	gen := cr.meta.Generation
	var out []gwv1.RouteParentStatus
	var seen map[string]bool
	for i := range refs {
		ref := &refs[i]
		gi := t.parentGateway(cr.meta.Namespace, ref)
		if gi == nil {
			continue
		}
		if len(refs) > 1 {
			rk := parentRefKey(ref)
			if seen[rk] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[rk] = true
		}
		var acc metav1.Condition
		switch {
		case !gi.served:
			acc = status.Accepted(false, status.ReasonNoMatchingParent, "parent Gateway is not accepted: "+gi.refusal(), gen)
		default:
			acc = t.attachToGateway(cr, gi, ref)
		}
		res := status.ResolvedRefs(true, status.ReasonResolvedRefs, "all references resolved", gen)
		if cr.resolvedReason != "" {
			res = status.ResolvedRefs(false, cr.resolvedReason, cr.resolvedMsg, gen)
		}
		conds := []metav1.Condition{acc, res}
		sortConds(conds)
		out = append(out, gwv1.RouteParentStatus{
			ParentRef:      *ref.DeepCopy(),
			ControllerName: gwv1.GatewayController(names.ControllerName),
			Conditions:     conds,
		})
	}
	return out
}

func parentRefKey(ref *gwv1.ParentReference) string {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var g, k, ns, sec string
	if ref.Group != nil {
		g = string(*ref.Group)
	}
	if ref.Kind != nil {
		k = string(*ref.Kind)
	}
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ref.SectionName != nil {
		sec = string(*ref.SectionName)
	}
	port := ""
	if ref.Port != nil {
		port = fmt.Sprint(*ref.Port)
	}
	_ = s
	return g + "|" + k + "|" + ns + "|" + string(ref.Name) + "|" + sec + "|" + port
}

func (t *translator) attachToGateway(cr *compiledRoute, gi *gatewayInfo, ref *gwv1.ParentReference) metav1.Condition {
	gen := cr.meta.Generation
	candidates := 0
	allowed := 0
	matched := 0
	for _, li := range gi.listeners {
		if ref.SectionName != nil && *ref.SectionName != li.spec.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != li.spec.Port {
			continue
		}
		candidates++
		if !li.allowsKind(cr.kind) || !t.allowsNamespace(gi.gw, li.spec, cr.meta.Namespace) {
			continue
		}
		allowed++
		hosts := intersect(li.hostname, cr.hostnames)
		if len(hosts) == 0 {
			continue
		}
		matched++
		if li.lastCounted != cr {
			li.lastCounted = cr
			li.attached++
		}
		if cr.err == "" && li.servable {
			if n := len(li.routes); n > 0 && li.routes[n-1].cr == cr {
				continue // a second parentRef selecting the same listener
			}
			li.routes = append(li.routes, attachment{cr: cr, hosts: hosts})
		}
	}
	switch {
	case candidates == 0:
		return status.Accepted(false, status.ReasonNoMatchingParent, "no listener matches the parentRef's sectionName and port", gen)
	case allowed == 0:
		return status.Accepted(false, status.ReasonNotAllowedByListeners, "no matching listener allows this route's kind and namespace", gen)
	case matched == 0:
		return status.Accepted(false, status.ReasonNoMatchingListenerHostname, "no hostname of the route intersects a listener hostname", gen)
	case cr.err != "":
		return status.Accepted(false, status.ReasonUnsupportedValue, cr.err, gen)
	}
	return status.Accepted(true, status.ReasonAccepted, "route is accepted", gen)
}

// --- HTTPRoute -------------------------------------------------------------

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

func httpMatch(cr *compiledRoute, m *gwv1.HTTPRouteMatch) (snapshot.Match, bool) {
	var out snapshot.Match
	typ, val := gwv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if m.Path.Value != nil {
			val = *m.Path.Value
		}
	}
	switch typ {
	case gwv1.PathMatchExact:
		if !strings.HasPrefix(val, "/") {
			cr.fail("path %q must start with /", val)
			return out, false
		}
		out.Path = &snapshot.PathMatch{Type: snapshot.PathExact, Value: val}
	case gwv1.PathMatchPathPrefix:
		if !strings.HasPrefix(val, "/") {
			cr.fail("path %q must start with /", val)
			return out, false
		}
		if len(val) > 1 {
			val = strings.TrimRight(val, "/")
			if val == "" {
				val = "/"
			}
		}
		out.Path = &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: val}
	case gwv1.PathMatchRegularExpression:
		if _, err := regexp.Compile(val); err != nil {
			cr.fail("path regular expression %q is invalid: %v", val, err)
			return out, false
		}
		out.Path = &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: val}
	default:
		cr.fail("path match type %q is not supported", typ)
		return out, false
	}
	if m.Method != nil {
		if !snapshot.ValidToken(string(*m.Method)) {
			cr.fail("method %q is invalid", *m.Method)
			return out, false
		}
		out.Method = string(*m.Method)
	}
	seen := map[string]bool{}
	for _, h := range m.Headers {
		typ := gwv1.HeaderMatchExact
		if h.Type != nil {
			typ = *h.Type
		}
		sm, ok := stringMatch(cr, "header", string(h.Name), string(typ), h.Value)
		if !ok {
			return out, false
		}
		if k := strings.ToLower(sm.Name); !seen[k] {
			seen[k] = true
			out.Headers = append(out.Headers, sm)
		}
	}
	seenQ := map[string]bool{}
	for _, q := range m.QueryParams {
		typ := gwv1.QueryParamMatchExact
		if q.Type != nil {
			typ = *q.Type
		}
		sm, ok := stringMatch(cr, "query parameter", string(q.Name), string(typ), q.Value)
		if !ok {
			return out, false
		}
		if !seenQ[sm.Name] {
			seenQ[sm.Name] = true
			out.QueryParams = append(out.QueryParams, sm)
		}
	}
	return out, true
}

func stringMatch(cr *compiledRoute, what, name, typ, value string) (snapshot.StringMatch, bool) {
	sm := snapshot.StringMatch{Name: name, Value: value}
	if name == "" || (what == "header" && !snapshot.ValidToken(name)) {
		cr.fail("%s match name %q is invalid", what, name)
		return sm, false
	}
	switch typ {
	case "Exact":
		sm.Type = snapshot.MatchExact
	case "RegularExpression":
		if _, err := regexp.Compile(value); err != nil {
			cr.fail("%s %q regular expression %q is invalid: %v", what, name, value, err)
			return sm, false
		}
		sm.Type = snapshot.MatchRegularExpression
	default:
		cr.fail("%s %q match type %q is not supported", what, name, typ)
		return sm, false
	}
	return sm, true
}

func headerModifier(cr *compiledRoute, f *gwv1.HTTPHeaderFilter) *snapshot.HeaderModifier {
	if f == nil {
		cr.fail("header modifier filter without a body")
		return nil
	}
	hm := &snapshot.HeaderModifier{}
	for _, h := range f.Set {
		if !validHeader(string(h.Name), h.Value) {
			cr.fail("header %q is invalid", h.Name)
			continue
		}
		hm.Set = append(hm.Set, snapshot.Header{Name: string(h.Name), Value: h.Value})
	}
	for _, h := range f.Add {
		if !validHeader(string(h.Name), h.Value) {
			cr.fail("header %q is invalid", h.Name)
			continue
		}
		hm.Add = append(hm.Add, snapshot.Header{Name: string(h.Name), Value: h.Value})
	}
	for _, n := range f.Remove {
		if !snapshot.ValidToken(n) {
			cr.fail("header name %q is invalid", n)
			continue
		}
		hm.Remove = append(hm.Remove, n)
	}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		return nil
	}
	return hm
}

func validHeader(name, value string) bool {
	return snapshot.ValidToken(name) && !strings.ContainsAny(value, "\r\n\x00")
}

// applyFilters converts rule-level filters onto base.
func (t *translator) applyFilters(cr *compiledRoute, base *snapshot.Route, filters []gwv1.HTTPRouteFilter, routeKind string) {
	for fi := range filters {
		f := &filters[fi]
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			base.RequestHeaders = headerModifier(cr, f.RequestHeaderModifier)
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			base.ResponseHeaders = headerModifier(cr, f.ResponseHeaderModifier)
		case gwv1.HTTPRouteFilterRequestRedirect:
			base.Redirect = redirect(cr, f.RequestRedirect)
		case gwv1.HTTPRouteFilterURLRewrite:
			base.Rewrite = rewrite(cr, f.URLRewrite)
		case gwv1.HTTPRouteFilterRequestMirror:
			if m, ok := t.mirror(cr, f.RequestMirror, routeKind); ok {
				base.Mirrors = append(base.Mirrors, m)
			}
		case gwv1.HTTPRouteFilterCORS:
			base.CORS = cors(f.CORS)
		default:
			cr.fail("filter type %q is not supported", f.Type)
		}
	}
	if base.Redirect != nil && base.Rewrite != nil {
		cr.fail("RequestRedirect and URLRewrite cannot be combined")
	}
}

func pathModifier(cr *compiledRoute, p *gwv1.HTTPPathModifier) *snapshot.PathModifier {
	if p == nil {
		return nil
	}
	switch p.Type {
	case gwv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil {
			cr.fail("replaceFullPath is required")
			return nil
		}
		return &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: *p.ReplaceFullPath}
	case gwv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil {
			cr.fail("replacePrefixMatch is required")
			return nil
		}
		return &snapshot.PathModifier{Type: snapshot.ReplacePrefixMatch, Value: *p.ReplacePrefixMatch}
	}
	cr.fail("path modifier type %q is not supported", p.Type)
	return nil
}

func redirect(cr *compiledRoute, f *gwv1.HTTPRequestRedirectFilter) *snapshot.Redirect {
	if f == nil {
		cr.fail("requestRedirect filter without a body")
		return nil
	}
	rd := &snapshot.Redirect{StatusCode: 302}
	if f.Scheme != nil {
		s := strings.ToLower(*f.Scheme)
		if s != "http" && s != "https" {
			cr.fail("redirect scheme %q is not supported", *f.Scheme)
			return nil
		}
		rd.Scheme = s
	}
	if f.Hostname != nil {
		h := strings.ToLower(string(*f.Hostname))
		if !validHostname(h) || strings.HasPrefix(h, "*") {
			cr.fail("redirect hostname %q is invalid", *f.Hostname)
			return nil
		}
		rd.Hostname = h
	}
	if f.Port != nil {
		if *f.Port < 1 || *f.Port > 65535 {
			cr.fail("redirect port %d is out of range", *f.Port)
			return nil
		}
		rd.Port = int32(*f.Port)
	}
	if f.StatusCode != nil {
		switch *f.StatusCode {
		case 301, 302, 303, 307, 308:
			rd.StatusCode = *f.StatusCode
		default:
			cr.fail("redirect statusCode %d is not supported", *f.StatusCode)
			return nil
		}
	}
	rd.Path = pathModifier(cr, f.Path)
	return rd
}

func rewrite(cr *compiledRoute, f *gwv1.HTTPURLRewriteFilter) *snapshot.URLRewrite {
	if f == nil {
		cr.fail("urlRewrite filter without a body")
		return nil
	}
	rw := &snapshot.URLRewrite{}
	if f.Hostname != nil {
		h := strings.ToLower(string(*f.Hostname))
		if !validHostname(h) || strings.HasPrefix(h, "*") {
			cr.fail("rewrite hostname %q is invalid", *f.Hostname)
			return nil
		}
		rw.Hostname = h
	}
	rw.Path = pathModifier(cr, f.Path)
	if rw.Hostname == "" && rw.Path == nil {
		return nil
	}
	return rw
}

func cors(f *gwv1.HTTPCORSFilter) *snapshot.CORS {
	if f == nil {
		return nil
	}
	c := &snapshot.CORS{MaxAge: f.MaxAge}
	if f.AllowCredentials != nil {
		c.AllowCredentials = *f.AllowCredentials
	}
	for _, o := range f.AllowOrigins {
		c.AllowOrigins = append(c.AllowOrigins, string(o))
	}
	for _, m := range f.AllowMethods {
		c.AllowMethods = append(c.AllowMethods, string(m))
	}
	for _, h := range f.AllowHeaders {
		c.AllowHeaders = append(c.AllowHeaders, string(h))
	}
	for _, h := range f.ExposeHeaders {
		c.ExposeHeaders = append(c.ExposeHeaders, string(h))
	}
	return c
}

func (t *translator) mirror(cr *compiledRoute, f *gwv1.HTTPRequestMirrorFilter, routeKind string) (snapshot.Mirror, bool) {
	var m snapshot.Mirror
	if f == nil {
		cr.fail("requestMirror filter without a body")
		return m, false
	}
	b := t.resolveBackend(cr.meta.Namespace, routeKind, f.BackendRef, routeKind == kindGRPCRoute)
	if b.reason != "" {
		cr.unresolved(b.reason, "mirror: "+b.msg)
		return m, false
	}
	m.EndpointSet = b.set
	switch {
	case f.Percent != nil:
		p := *f.Percent
		if p <= 0 {
			return m, false
		}
		if p < 100 {
			m.Numerator, m.Denominator = p, 100
		}
	case f.Fraction != nil:
		num, den := f.Fraction.Numerator, int32(100)
		if f.Fraction.Denominator != nil {
			den = *f.Fraction.Denominator
		}
		if den <= 0 || num < 0 || num > den {
			cr.fail("mirror fraction %d/%d is invalid", num, den)
			return m, false
		}
		if num == 0 {
			return m, false
		}
		if num < den {
			m.Numerator, m.Denominator = num, den
		}
	}
	return m, true
}

// backendSpec is one backendRef with its per-backend filters.
type backendSpec struct {
	ref       gwv1.BackendObjectReference
	weight    *int32
	req, resp *snapshot.HeaderModifier
}

// applyBackends resolves backendRefs into weighted backends; a rule with
// nothing to send to answers 500.
func (t *translator) applyBackends(cr *compiledRoute, base *snapshot.Route, routeKind string, refs []backendSpec, grpc bool) {
	valid := 0
	if len(refs) > 0 {
		base.Backends = make([]snapshot.Backend, 0, len(refs))
	}
	for _, bs := range refs {
		w := int32(1)
		if bs.weight != nil {
			w = *bs.weight
		}
		if w < 0 {
			cr.fail("backend weight %d is negative", w)
			continue
		}
		b := t.resolveBackend(cr.meta.Namespace, routeKind, bs.ref, grpc)
		if b.reason != "" {
			cr.unresolved(b.reason, b.msg)
			if w > 0 {
				base.Backends = append(base.Backends, snapshot.Backend{Weight: w, Invalid: true})
			}
			continue
		}
		if w == 0 {
			continue
		}
		valid++
		base.Backends = append(base.Backends, snapshot.Backend{EndpointSet: b.set, Weight: w, RequestHeaders: bs.req, ResponseHeaders: bs.resp})
	}
	if valid == 0 {
		base.Backends = nil
		base.DirectResponse = &snapshot.DirectResponse{StatusCode: 500}
	}
}
