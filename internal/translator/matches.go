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
	"regexp"
	"strings"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// httpMatch compiles one HTTPRoute match; false means it failed the route.
func httpMatch(cr *compiledRoute, m *gwv1.HTTPRouteMatch) (snapshot.Match, bool) {
	var out snapshot.Match
	var ok bool
	if out.Path, ok = httpPathMatch(cr, m.Path); !ok {
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
		typ := ptr.Deref(h.Type, gwv1.HeaderMatchExact)
		if !addStringMatch(cr, &out.Headers, seen, "header", string(h.Name), string(typ), h.Value) {
			return out, false
		}
	}
	seen = map[string]bool{}
	for _, q := range m.QueryParams {
		typ := ptr.Deref(q.Type, gwv1.QueryParamMatchExact)
		if !addStringMatch(cr, &out.QueryParams, seen, "query parameter", string(q.Name), string(typ), q.Value) {
			return out, false
		}
	}
	return out, true
}

// httpPathMatch compiles an HTTPRoute path match; none is PathPrefix "/".
func httpPathMatch(cr *compiledRoute, p *gwv1.HTTPPathMatch) (*snapshot.PathMatch, bool) {
	typ, val := gwv1.PathMatchPathPrefix, "/"
	if p != nil {
		typ, val = ptr.Deref(p.Type, typ), ptr.Deref(p.Value, val)
	}
	switch typ {
	case gwv1.PathMatchExact:
		if !strings.HasPrefix(val, "/") {
			cr.fail("path %q must start with /", val)
			return nil, false
		}
		return &snapshot.PathMatch{Type: snapshot.PathExact, Value: val}, true
	case gwv1.PathMatchPathPrefix:
		if !strings.HasPrefix(val, "/") {
			cr.fail("path %q must start with /", val)
			return nil, false
		}
		return &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: trimPathPrefix(val)}, true
	case gwv1.PathMatchRegularExpression:
		if _, err := regexp.Compile(val); err != nil {
			cr.fail("path regular expression %q is invalid: %v", val, err)
			return nil, false
		}
		return &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: val}, true
	}
	cr.fail("path match type %q is not supported", typ)
	return nil, false
}

// trimPathPrefix drops the trailing slashes of a PathPrefix value ("/a/"
// matches what "/a" matches); "/" stays.
func trimPathPrefix(val string) string {
	if len(val) > 1 {
		val = strings.TrimRight(val, "/")
		if val == "" {
			val = "/"
		}
	}
	return val
}

// addStringMatch compiles one header or query parameter match onto *dst,
// keeping only the first match of a name (header names compare without
// case); false means it failed the route.
func addStringMatch(cr *compiledRoute, dst *[]snapshot.StringMatch, seen map[string]bool, what, name, typ, value string) bool {
	sm, ok := stringMatch(cr, what, name, typ, value)
	if !ok {
		return false
	}
	k := sm.Name
	if what == "header" {
		k = strings.ToLower(k)
	}
	if !seen[k] {
		seen[k] = true
		*dst = append(*dst, sm)
	}
	return true
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

// grpcMatch compiles one GRPCRoute match; false means it failed the route.
func grpcMatch(cr *compiledRoute, m *gwv1.GRPCRouteMatch) (snapshot.Match, bool) {
	var out snapshot.Match
	if m.Method != nil {
		var ok bool
		if out.Path, ok = grpcMethodPath(cr, m.Method); !ok {
			return out, false
		}
	}
	seen := map[string]bool{}
	for _, h := range m.Headers {
		typ := ptr.Deref(h.Type, gwv1.GRPCHeaderMatchExact)
		if !addStringMatch(cr, &out.Headers, seen, "header", string(h.Name), string(typ), h.Value) {
			return out, false
		}
	}
	return out, true
}

// grpcMethodPath maps a gRPC service/method match onto a path match (see
// compileGRPCRoute); an Exact match of neither is no path match at all.
func grpcMethodPath(cr *compiledRoute, mm *gwv1.GRPCMethodMatch) (*snapshot.PathMatch, bool) {
	typ := ptr.Deref(mm.Type, gwv1.GRPCMethodMatchExact)
	svc, meth := ptr.Deref(mm.Service, ""), ptr.Deref(mm.Method, "")
	switch typ {
	case gwv1.GRPCMethodMatchExact:
		if strings.Contains(svc, "/") || strings.Contains(meth, "/") {
			cr.fail("gRPC service %q or method %q contains /", svc, meth)
			return nil, false
		}
		switch {
		case svc != "" && meth != "":
			return &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/" + svc + "/" + meth}, true
		case svc != "":
			return &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/" + svc}, true
		case meth != "":
			return &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/[^/]+/" + regexp.QuoteMeta(meth)}, true
		}
		return nil, true
	case gwv1.GRPCMethodMatchRegularExpression:
		if svc == "" {
			svc = "[^/]+"
		}
		if meth == "" {
			meth = "[^/]+"
		}
		for _, p := range []string{svc, meth} {
			if _, err := regexp.Compile(p); err != nil {
				cr.fail("gRPC method regular expression %q is invalid: %v", p, err)
				return nil, false
			}
		}
		return &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/(?:" + svc + ")/(?:" + meth + ")"}, true
	}
	cr.fail("gRPC method match type %q is not supported", typ)
	return nil, false
}
