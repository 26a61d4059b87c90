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
	"crypto/tls"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// router is the compiled, immutable routing table of one snapshot: per
// listener port, virtual hosts, and per host the routes in snapshot order.
// It is never mutated after compile, so requests read it without locks.
type router struct {
	ports map[int32]*listenerRouter
}

// listenerRouter selects the virtual host of one listener.
type listenerRouter struct {
	name         string
	port         int32
	externalPort int32
	tls          bool
	// clientTraffic is the port's ClientTraffic (clienttraffic.go),
	// compiled from clientTrafficSrc (previousListener).
	clientTraffic    *clientTrafficPolicy
	clientTrafficSrc *snapshot.ClientTraffic
	exact            hostTable
	// wild is keyed by the suffix of "*.<suffix>"; a host matches the
	// longest suffix that follows at least one label.
	wild hostTable
	any  *vhost
	// users indexes vhosts by the endpoint sets they look up
	// (setUsers, reuse.go); made when a compile first needs it.
	users atomic.Pointer[setUsers]
	// certs selects the certificate of an HTTPS listener by SNI.
	certs *certSet
	// clientTLS is the server config of an HTTPS port that validates
	// client certificates (clientauth.go), nil for one that does not.
	clientTLS *tls.Config
	// sniClientTLS are the server configs of the SNI entries that
	// validate client certificates when the port as a whole does not
	// (clientauth.go); nil for none.
	sniClientTLS *sniConfigs
	// hosts tells the listeners of an HTTPS port apart by hostname, for
	// the misdirected request check (misdirected.go); nil when there is
	// one.
	hosts *listenerHosts
	// notFound carries the metrics of requests that match no route.
	notFound *route
	// src is the snapshot's list of virtual hosts compiled (by hostname,
	// nil when it was not in order) and vhosts the compiled host of each,
	// by index: the next compile walks them alongside its own list to
	// find what changed (patchListener).
	src    []*snapshot.VirtualHost
	vhosts []*vhost
}

// vhost holds the routes of one hostname, indexed by path match kind. Every
// index lists route positions in ascending order, so the first full match
// of each index is its best, and the smallest of those wins: the snapshot's
// order is the precedence.
type vhost struct {
	hostname string
	// singleLabel narrows a wildcard to exactly one label (Ingress).
	singleLabel bool
	routes      []*route
	exact       pathIndex
	prefix      pathIndex
	// maxPrefix is the length of the longest prefix, so deep paths stop
	// probing early.
	maxPrefix int
	regex     []int
	// src is the input it was compiled from and sets the endpoint sets
	// its routes looked up: a later compile takes the vhost over while
	// both are the same (reusableVHost). Requests never read them.
	src  *snapshot.VirtualHost
	sets []setLookup
}

type headerMatch struct {
	name  string // canonical header key
	exact string
	re    *regexp.Regexp
}

type queryMatch struct {
	name  string
	exact string
	re    *regexp.Regexp
}

// compileMatch compiles the path, header and query parts of a route's
// match (the method and path match are set by compileRoute).
func (rt *route) compileMatch(in *snapshot.Match) error {
	if p := in.Path; p != nil {
		switch p.Type {
		case snapshot.PathPrefix:
			rt.prefix = normalizePrefix(p.Value)
		case snapshot.PathRegularExpression:
			re, err := regexp.Compile("^(?:" + p.Value + ")$")
			if err != nil {
				return err
			}
			rt.pathRE = re
		}
	}
	for _, h := range in.Headers {
		re, err := compileValueRegexp(h)
		if err != nil {
			return err
		}
		rt.headers = append(rt.headers, headerMatch{name: http.CanonicalHeaderKey(h.Name), exact: h.Value, re: re})
	}
	for _, q := range in.QueryParams {
		re, err := compileValueRegexp(q)
		if err != nil {
			return err
		}
		rt.query = append(rt.query, queryMatch{name: q.Name, exact: q.Value, re: re})
	}
	return nil
}

// compileValueRegexp compiles the regexp of a RegularExpression header or
// query match; an Exact match has none (nil).
func compileValueRegexp(m snapshot.StringMatch) (*regexp.Regexp, error) {
	if m.Type != snapshot.MatchRegularExpression {
		return nil, nil
	}
	return regexp.Compile(m.Value)
}

// lookup finds the route for a request on a listener port. It returns nil
// when no virtual host or no route matches (404). It allocates nothing.
func (rt *router) lookup(port int32, r *http.Request) *route {
	return rt.ports[port].lookup(r)
}

// lookup finds the route for a request on this listener (nil for no
// listener, no virtual host or no route).
func (lr *listenerRouter) lookup(r *http.Request) *route {
	if lr == nil {
		return nil
	}
	vh := lr.host(r.Host)
	if vh == nil {
		return nil
	}
	return vh.match(r.URL.Path, r)
}

// host selects the virtual host: exact name, else the longest wildcard
// suffix, else "*". Upper-case hosts are lowered into a stack buffer and
// looked up with in-place conversions, so it never allocates.
func (lr *listenerRouter) host(hostport string) *vhost {
	h := trimHost(hostport)
	var buf [256]byte
	if hasUpper(h) && len(h) <= len(buf) {
		n := copy(buf[:], h)
		for i := 0; i < n; i++ {
			if c := buf[i]; 'A' <= c && c <= 'Z' {
				buf[i] = c + 'a' - 'A'
			}
		}
		if v, ok := lr.exact.getBytes(buf[:n]); ok {
			return v
		}
		if lr.wild.n > 0 {
			first := true
			for i := 1; i < n; i++ {
				if buf[i] == '.' {
					if v, ok := lr.wild.getBytes(buf[i+1 : n]); ok && (first || !v.singleLabel) {
						return v
					}
					first = false
				}
			}
		}
		return lr.any
	}
	if v, ok := lr.exact.get(h); ok {
		return v
	}
	if lr.wild.n > 0 {
		first := true
		for i := 1; i < len(h); i++ {
			if h[i] == '.' {
				if v, ok := lr.wild.get(h[i+1:]); ok && (first || !v.singleLabel) {
					return v
				}
				first = false
			}
		}
	}
	return lr.any
}

// trimHost strips a port and a trailing dot.
func trimHost(hostport string) string {
	h := hostport
	if len(h) > 0 && h[0] == '[' {
		if i := strings.IndexByte(h, ']'); i > 0 {
			return h[:i+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if n := len(h); n > 0 && h[n-1] == '.' {
		h = h[:n-1]
	}
	return h
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// match returns the first route, in snapshot order, whose path, method,
// headers and query all match.
func (v *vhost) match(path string, r *http.Request) *route {
	if path == "" {
		path = "/"
	}
	best := len(v.routes)
	if !v.exact.empty() {
		if l, ok := v.exact.get(path); ok {
			best = v.first(l, best, r)
		}
	}
	if !v.prefix.empty() {
		if l, ok := v.prefix.get(""); ok {
			best = v.first(l, best, r)
		}
		n := len(path)
		if n > v.maxPrefix+1 {
			n = v.maxPrefix + 1
		}
		for i := 1; i < n; i++ {
			if path[i] == '/' {
				if l, ok := v.prefix.get(path[:i]); ok {
					best = v.first(l, best, r)
				}
			}
		}
		if len(path) <= v.maxPrefix && path[len(path)-1] != '/' {
			if l, ok := v.prefix.get(path); ok {
				best = v.first(l, best, r)
			}
		}
	}
	for _, i := range v.regex {
		if i >= best {
			break
		}
		rt := v.routes[i]
		if rt.pathRE.MatchString(path) && rt.matchRest(r) {
			best = i
			break
		}
	}
	if best < len(v.routes) {
		return v.routes[best]
	}
	return nil
}

// first returns the first index in l below best whose route matches the
// non-path conditions, else best.
func (v *vhost) first(l []int, best int, r *http.Request) int {
	for _, i := range l {
		if i >= best {
			return best
		}
		if v.routes[i].matchRest(r) {
			return i
		}
	}
	return best
}

// matchRest checks method, headers and query parameters.
func (rt *route) matchRest(r *http.Request) bool {
	if rt.method != "" && r.Method != rt.method {
		return false
	}
	for i := range rt.headers {
		if !rt.headers[i].matchRequest(r) {
			return false
		}
	}
	for i := range rt.query {
		if !rt.query[i].match(r.URL.RawQuery) {
			return false
		}
	}
	return true
}

// matchRequest matches the request's header values. net/http (and the
// fast path) move the Host header, and HTTP/2's :authority, out of
// r.Header into r.Host, so a match on Host looks there.
func (m *headerMatch) matchRequest(r *http.Request) bool {
	if m.name == "Host" {
		return r.Host != "" && m.matchValue(r.Host)
	}
	for _, v := range r.Header[m.name] {
		if m.matchValue(v) {
			return true
		}
	}
	return false
}

func (m *headerMatch) matchValue(v string) bool {
	if m.re != nil {
		return m.re.MatchString(v)
	}
	return v == m.exact
}

// match looks at the first value of the parameter, as Gateway API
// recommends; it scans the raw query so it does not allocate unless the
// parameter is escaped.
func (m *queryMatch) match(raw string) bool {
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, "%+") {
			uk, err := url.QueryUnescape(k)
			if err != nil {
				continue
			}
			k = uk
		}
		if k != m.name {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			uv, err := url.QueryUnescape(v)
			if err != nil {
				return false
			}
			v = uv
		}
		if m.re != nil {
			return m.re.MatchString(v)
		}
		return v == m.exact
	}
	return false
}

// pathMatches reports whether a single path match accepts path; the
// fuzz test and the compiled indexes must agree with it.
func pathMatches(pm *snapshot.PathMatch, re *regexp.Regexp, path string) bool {
	if pm == nil {
		return true
	}
	switch pm.Type {
	case snapshot.PathExact:
		return path == pm.Value
	case snapshot.PathPrefix:
		p := normalizePrefix(pm.Value)
		if p == "" {
			return true
		}
		return path == p || (strings.HasPrefix(path, p) && path[len(p)] == '/')
	case snapshot.PathRegularExpression:
		return re != nil && re.MatchString(path)
	}
	return false
}

// normalizePrefix drops trailing slashes: "/foo/" and "/foo" both match
// "/foo" and "/foo/bar"; "/" becomes "" (everything).
func normalizePrefix(p string) string {
	return strings.TrimRight(p, "/")
}
