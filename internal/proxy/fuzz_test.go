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
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// FuzzSnapshotDecodeCompile: any bytes either fail to decode or decode to
// a snapshot that compiles (or is rejected) without panicking, and the
// compiled router answers lookups without panicking.
func FuzzSnapshotDecodeCompile(f *testing.F) {
	for _, path := range []string{"../../config/samples/proxy-snapshot.yaml", "testdata/precedence.in.yaml"} {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"scope":{"kind":"SharedPool"},"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[{"hostname":"*","routes":[{"id":"r","match":{"path":{"type":"RegularExpression","value":"/(a+)"}},"rewrite":{"path":{"type":"ReplaceRegex","value":"/$1$1"}},"backends":[{"weight":1,"invalid":true}]}]}]}]}`))
	f.Add([]byte(`{"scope":{"kind":"SharedPool"},"endpointSets":[{"name":"s","endpoints":[{"address":"127.0.0.1","port":1}]}],"listeners":[{"name":"l","port":443,"protocol":"TLS","streamRoutes":[{"id":"r","hostname":"*.example.com","backends":[{"endpointSet":"s","weight":1}]},{"id":"any","hostname":"*","backends":[{"weight":1,"invalid":true}]}]},{"name":"u","port":443,"protocol":"UDP","streamRoutes":[{"id":"u","backends":[{"endpointSet":"s","weight":1}]}]}]}`))
	f.Add([]byte(`{"scope":{"kind":"SharedPool"},"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[null,{"hostname":"*"}]}]}`))
	f.Add([]byte(`{"scope":{"kind":"SharedPool"},"endpointSets":[null,{"name":"ns/a:80"}],"listeners":[{"name":"l","port":80,"protocol":"HTTP","virtualHosts":[{"hostname":"*","routes":[{"id":"r","match":{},"backends":[{"endpointSet":"ns/a:80","weight":1}]}]}]}]}`))
	f.Add([]byte(`scope: {kind: Gateway, namespace: a, name: b}`))
	f.Add([]byte(`{}`))
	m := newMetrics(nil)
	reqs := []*http.Request{
		{Method: "GET", Host: "a.example.com", URL: &url.URL{Path: "/a/b"}, Header: http.Header{}},
		{Method: "POST", Host: "X.Y.Example.COM:80", URL: &url.URL{Path: "/", RawQuery: "a=1&b=%zz"}, Header: http.Header{"X-A": {"1"}}},
		{Method: "GET", Host: "", URL: &url.URL{Path: ""}, Header: http.Header{}},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := snapshot.Decode(data)
		if err != nil {
			return
		}
		st, err := compile(s, nil, m)
		if err != nil {
			return
		}
		for _, sl := range st.streams {
			for _, sni := range []string{"a.example.com", "X.Y.Example.COM", ""} {
				if r := sl.route(sni); r != nil {
					_ = r.pickStream()
				}
			}
		}
		for port := range st.router.ports {
			for _, r := range reqs {
				if rt := st.router.lookup(port, r); rt != nil {
					if rt.redirect != nil {
						_ = redirectLocation(rt.redirect, rt, r, rt.tls)
					}
					if rt.rewrite != nil && rt.rewrite.Path != nil {
						_ = rewritePath(rt.rewrite.Path, rt, r.URL.Path)
					}
				}
			}
		}
	})
}

// FuzzPathMatch: for any route path match and request path, the indexed
// router picks exactly what a linear scan of the routes in order picks.
func FuzzPathMatch(f *testing.F) {
	f.Add(uint8(1), "/foo", "/foo/bar")
	f.Add(uint8(1), "/foo/", "/foo")
	f.Add(uint8(0), "/foo", "/foo")
	f.Add(uint8(2), "/v[0-9]+/.*", "/v1/x")
	f.Add(uint8(1), "/", "//")
	f.Add(uint8(1), "/a//", "/a//b")
	f.Fuzz(func(t *testing.T, kind uint8, value, path string) {
		types := []snapshot.PathMatchType{snapshot.PathExact, snapshot.PathPrefix, snapshot.PathRegularExpression}
		pm := &snapshot.PathMatch{Type: types[int(kind)%3], Value: value}
		routes := []snapshot.Route{
			{ID: "fuzzed", Match: snapshot.Match{Path: pm}, DirectResponse: &snapshot.DirectResponse{StatusCode: 200}},
			{ID: "fixed-prefix", Match: prefix("/foo"), DirectResponse: &snapshot.DirectResponse{StatusCode: 200}},
			{ID: "fixed-exact", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/foo/bar"}}, DirectResponse: &snapshot.DirectResponse{StatusCode: 200}},
			{ID: "fixed-regex", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/[a-z]+"}}, DirectResponse: &snapshot.DirectResponse{StatusCode: 200}},
		}
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{httpListener(80, snapshot.VirtualHost{Hostname: "*", Routes: routes})}}
		if snapshot.Validate(s) != nil {
			return
		}
		st, err := compile(s, nil, newMetrics(nil))
		if err != nil {
			return
		}
		r := &http.Request{Method: "GET", Host: "h", URL: &url.URL{Path: path}, Header: http.Header{}}
		got := ""
		if rt := st.router.lookup(80, r); rt != nil {
			got = rt.id
		}
		if want := linearLookup(st, 80, r); got != want {
			t.Fatalf("path %q with %s %q: router chose %q, linear scan %q", path, pm.Type, value, got, want)
		}
		if strings.HasPrefix(path, "/") && pm.Type == snapshot.PathPrefix {
			fuzzed := st.router.ports[80].any.routes[0]
			p := normalizePrefix(value)
			want := p == "" || path == p || strings.HasPrefix(path, p+"/")
			if pathMatches(pm, fuzzed.pathRE, path) != want {
				t.Fatalf("prefix %q on %q: pathMatches disagrees with the segment rule", value, path)
			}
		}
	})
}
