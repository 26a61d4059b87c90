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
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The filters of HTTPRoute and GRPCRoute compile through one set of
// functions: the filter types both kinds have (the header modifiers and
// RequestMirror) carry the same Gateway API body types, so each kind's
// dispatcher hands them to sharedFilter (and backendRef filters to
// backendFilter); only RequestRedirect, URLRewrite and CORS are
// HTTPRoute's own. Nothing is converted from one kind to the other.

// httpRuleFilters compiles an HTTPRoute rule's filters onto base.
func (t *translator) httpRuleFilters(cr *compiledRoute, base *snapshot.Route, ri int, filters []gwv1.HTTPRouteFilter) {
	for fi := range filters {
		f := &filters[fi]
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestRedirect:
			base.Redirect = redirect(cr, f.RequestRedirect)
		case gwv1.HTTPRouteFilterURLRewrite:
			base.Rewrite = rewrite(cr, f.URLRewrite)
		case gwv1.HTTPRouteFilterCORS:
			base.CORS = cors(f.CORS)
		case gwv1.HTTPRouteFilterExtensionRef:
			t.extensionRef(cr, base, ri, f.ExtensionRef)
		default:
			if !t.sharedFilter(cr, base, string(f.Type), f.RequestHeaderModifier, f.ResponseHeaderModifier, f.RequestMirror) {
				cr.fail("filter type %q is not supported", f.Type)
			}
		}
	}
	if base.Redirect != nil && base.Rewrite != nil {
		cr.fail("RequestRedirect and URLRewrite cannot be combined")
	}
}

// grpcRuleFilters compiles a GRPCRoute rule's filters onto base. An
// unsupported filter type is reported before any filter body is compiled,
// so it is the failure the route's status names (the first one wins).
func (t *translator) grpcRuleFilters(cr *compiledRoute, base *snapshot.Route, ri int, filters []gwv1.GRPCRouteFilter) {
	for fi := range filters {
		if typ := filters[fi].Type; !sharedFilterType(string(typ)) && typ != gwv1.GRPCRouteFilterExtensionRef {
			cr.fail("rule %d: filter type %q is not supported", ri, typ)
		}
	}
	for fi := range filters {
		f := &filters[fi]
		if f.Type == gwv1.GRPCRouteFilterExtensionRef {
			t.extensionRef(cr, base, ri, f.ExtensionRef)
			continue
		}
		t.sharedFilter(cr, base, string(f.Type), f.RequestHeaderModifier, f.ResponseHeaderModifier, f.RequestMirror)
	}
}

// sharedFilterType reports whether both route kinds have filter type typ
// (under the same name): the header modifiers and RequestMirror.
func sharedFilterType(typ string) bool {
	switch gwv1.HTTPRouteFilterType(typ) {
	case gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier, gwv1.HTTPRouteFilterRequestMirror:
		return true
	}
	return false
}

// sharedFilter compiles a rule filter of a type both route kinds have onto
// base, given the bodies its filter carries; false when typ is not one
// (sharedFilterType).
func (t *translator) sharedFilter(cr *compiledRoute, base *snapshot.Route, typ string, req, resp *gwv1.HTTPHeaderFilter, mirror *gwv1.HTTPRequestMirrorFilter) bool {
	switch gwv1.HTTPRouteFilterType(typ) {
	case gwv1.HTTPRouteFilterRequestHeaderModifier:
		base.RequestHeaders = headerModifier(cr, req)
	case gwv1.HTTPRouteFilterResponseHeaderModifier:
		base.ResponseHeaders = headerModifier(cr, resp)
	case gwv1.HTTPRouteFilterRequestMirror:
		t.addMirror(cr, base, mirror)
	default:
		return false
	}
	return true
}

// backendFilter compiles one backendRef filter of either route kind onto
// bs: both allow only the header modifiers there, under the same type
// names.
func backendFilter(cr *compiledRoute, bs *backendSpec, ri, bi int, typ string, req, resp *gwv1.HTTPHeaderFilter) {
	switch gwv1.HTTPRouteFilterType(typ) {
	case gwv1.HTTPRouteFilterRequestHeaderModifier:
		bs.req = headerModifier(cr, req)
	case gwv1.HTTPRouteFilterResponseHeaderModifier:
		bs.resp = headerModifier(cr, resp)
	default:
		cr.fail("rule %d backendRef %d: filter type %q is not supported on backends", ri, bi, typ)
	}
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

// addMirror adds a RequestMirror filter's mirror to base, unless it never
// mirrors or its backend does not resolve.
func (t *translator) addMirror(cr *compiledRoute, base *snapshot.Route, f *gwv1.HTTPRequestMirrorFilter) {
	if m, ok := t.mirror(cr, f); ok {
		base.Mirrors = append(base.Mirrors, m)
	}
}

func (t *translator) mirror(cr *compiledRoute, f *gwv1.HTTPRequestMirrorFilter) (snapshot.Mirror, bool) {
	var m snapshot.Mirror
	if f == nil {
		cr.fail("requestMirror filter without a body")
		return m, false
	}
	b := t.resolveBackend(cr.meta.Namespace, cr.kind, f.BackendRef, cr.kind == kindGRPCRoute)
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
