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

package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// corsPolicy is a compiled CORS filter.
type corsPolicy struct {
	anyOrigin   bool
	origins     map[string]bool
	patterns    [][2]string // prefix, suffix around one "*"
	credentials bool
	methods     string
	anyMethod   bool
	headers     string
	anyHeader   bool
	expose      string
	maxAge      string
}

func compileCORS(c *snapshot.CORS) *corsPolicy {
	if c == nil {
		return nil
	}
	p := &corsPolicy{origins: map[string]bool{}, credentials: c.AllowCredentials}
	for _, o := range c.AllowOrigins {
		switch {
		case o == "*":
			p.anyOrigin = true
		case strings.Contains(o, "*"):
			pre, suf, _ := strings.Cut(o, "*")
			p.patterns = append(p.patterns, [2]string{strings.ToLower(pre), strings.ToLower(suf)})
		default:
			p.origins[strings.ToLower(o)] = true
		}
	}
	for _, m := range c.AllowMethods {
		if m == "*" {
			p.anyMethod = true
		}
	}
	for _, h := range c.AllowHeaders {
		if h == "*" {
			p.anyHeader = true
		}
	}
	p.methods = strings.Join(c.AllowMethods, ", ")
	p.headers = strings.Join(c.AllowHeaders, ", ")
	p.expose = strings.Join(c.ExposeHeaders, ", ")
	if c.MaxAge > 0 {
		p.maxAge = strconv.Itoa(int(c.MaxAge))
	}
	return p
}

func (p *corsPolicy) allows(origin string) bool {
	if p.anyOrigin {
		return true
	}
	o := strings.ToLower(origin)
	if p.origins[o] {
		return true
	}
	for _, pat := range p.patterns {
		if len(o) > len(pat[0])+len(pat[1]) && strings.HasPrefix(o, pat[0]) && strings.HasSuffix(o, pat[1]) {
			return true
		}
	}
	return false
}

func (p *corsPolicy) origin(origin string) string {
	if p.anyOrigin && !p.credentials {
		return "*"
	}
	return origin
}

func (p *corsPolicy) preflight(h http.Header, origin string, r *http.Request) {
	h["Access-Control-Allow-Origin"] = []string{p.origin(origin)}
	h["Vary"] = []string{"Origin"}
	if p.credentials {
		h["Access-Control-Allow-Credentials"] = []string{"true"}
	}
	methods := p.methods
	if p.anyMethod {
		methods = r.Header.Get("Access-Control-Request-Method")
	}
	if methods != "" {
		h["Access-Control-Allow-Methods"] = []string{methods}
	}
	headers := p.headers
	if p.anyHeader {
		headers = r.Header.Get("Access-Control-Request-Headers")
	}
	if headers != "" {
		h["Access-Control-Allow-Headers"] = []string{headers}
	}
	if p.maxAge != "" {
		h["Access-Control-Max-Age"] = []string{p.maxAge}
	}
	// Gateway API expects exposeHeaders on the preflight answer too
	// (conformance HTTPRouteCORS).
	if p.expose != "" {
		h["Access-Control-Expose-Headers"] = []string{p.expose}
	}
}

func (p *corsPolicy) actual(h http.Header, origin string) {
	h["Access-Control-Allow-Origin"] = []string{p.origin(origin)}
	h["Vary"] = append(h["Vary"][:len(h["Vary"]):len(h["Vary"])], "Origin")
	if p.credentials {
		h["Access-Control-Allow-Credentials"] = []string{"true"}
	}
	if p.expose != "" {
		h["Access-Control-Expose-Headers"] = []string{p.expose}
	}
}

// corsVerdict is what the request half of CORS made of a request.
type corsVerdict uint8

const (
	// corsNotApplied: no policy, no Origin, or an origin not allowed.
	corsNotApplied corsVerdict = iota
	// corsAllowed: a request from an allowed origin; the response half
	// adds the CORS headers to the upstream's answer.
	corsAllowed
	// corsPreflightAnswered: a preflight, answered 204 (with the allow
	// headers when its origin is allowed).
	corsPreflightAnswered
)

// check is the request half of the CORS filter (step 5 of the request
// path, serve.go). A nil policy applies nothing.
func (p *corsPolicy) check(w http.ResponseWriter, r *http.Request) corsVerdict {
	if p == nil {
		return corsNotApplied
	}
	origin := r.Header["Origin"]
	if len(origin) == 0 {
		return corsNotApplied
	}
	allowed := p.allows(origin[0])
	if r.Method == http.MethodOptions && len(r.Header["Access-Control-Request-Method"]) > 0 {
		if allowed {
			p.preflight(w.Header(), origin[0], r)
		}
		w.WriteHeader(http.StatusNoContent)
		return corsPreflightAnswered
	}
	if allowed {
		return corsAllowed
	}
	return corsNotApplied
}
