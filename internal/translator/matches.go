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

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

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

func grpcMatch(cr *compiledRoute, m *gwv1.GRPCRouteMatch) (snapshot.Match, bool) {
	var out snapshot.Match
	if mm := m.Method; mm != nil {
		typ := gwv1.GRPCMethodMatchExact
		if mm.Type != nil {
			typ = *mm.Type
		}
		svc, meth := "", ""
		if mm.Service != nil {
			svc = *mm.Service
		}
		if mm.Method != nil {
			meth = *mm.Method
		}
		switch typ {
		case gwv1.GRPCMethodMatchExact:
			if strings.Contains(svc, "/") || strings.Contains(meth, "/") {
				cr.fail("gRPC service %q or method %q contains /", svc, meth)
				return out, false
			}
			switch {
			case svc != "" && meth != "":
				out.Path = &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/" + svc + "/" + meth}
			case svc != "":
				out.Path = &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/" + svc}
			case meth != "":
				out.Path = &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/[^/]+/" + regexp.QuoteMeta(meth)}
			}
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
					return out, false
				}
			}
			out.Path = &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/(?:" + svc + ")/(?:" + meth + ")"}
		default:
			cr.fail("gRPC method match type %q is not supported", typ)
			return out, false
		}
	}
	seen := map[string]bool{}
	for _, h := range m.Headers {
		typ := gwv1.GRPCHeaderMatchExact
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
	return out, true
}
