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
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// routingCase is the input of a routing golden file: a snapshot and the
// requests to route through it.
type routingCase struct {
	Snapshot json_raw        `json:"snapshot"`
	Requests []goldenRequest `json:"requests"`
}

type json_raw = map[string]any

type goldenRequest struct {
	Port    int32             `json:"port"`
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

type goldenResult struct {
	Request string `json:"request"`
	Route   string `json:"route"`
}

func mustCompile(t testing.TB, s *snapshot.Snapshot) *state {
	t.Helper()
	st, err := compile(s, nil, newMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newRequest(t testing.TB, method, rawURL string, headers map[string]string) *http.Request {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if method == "" {
		method = http.MethodGet
	}
	r := &http.Request{Method: method, URL: u, Host: u.Host, Header: http.Header{}}
	for k, v := range headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			r.Host = v // as net/http parses it: Host is not in r.Header
			continue
		}
		r.Header.Set(k, v)
	}
	return r
}

// TestRoutingGolden routes the requests of every testdata/*.in.yaml
// through its snapshot and compares the chosen route IDs ("" is 404) with
// the matching .out.yaml. Regenerate with -update.
func TestRoutingGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var c routingCase
			if err := yaml.UnmarshalStrict(data, &c); err != nil {
				t.Fatal(err)
			}
			sj, err := yaml.Marshal(c.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			s, err := snapshot.Decode(sj)
			if err != nil {
				t.Fatal(err)
			}
			st := mustCompile(t, s)
			var results []goldenResult
			for _, gr := range c.Requests {
				r := newRequest(t, gr.Method, gr.URL, gr.Headers)
				id := ""
				if rt := st.router.lookup(gr.Port, r); rt != nil {
					id = rt.id
				}
				desc := strings.TrimSpace(gr.Method + " " + gr.URL)
				if gr.Port != 80 {
					desc = "port " + strconv.Itoa(int(gr.Port)) + ": " + desc
				}
				if ref := linearLookup(st, gr.Port, r); ref != id {
					t.Errorf("%s: indexed lookup chose %q, a linear scan chooses %q", desc, id, ref)
				}
				if len(gr.Headers) > 0 {
					hs, _ := yaml.Marshal(gr.Headers)
					desc += " " + strings.ReplaceAll(strings.TrimSpace(string(hs)), "\n", ", ")
				}
				results = append(results, goldenResult{Request: desc, Route: id})
			}
			got, err := yaml.Marshal(results)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Golden(t, strings.TrimSuffix(in, ".in.yaml")+".out.yaml", got)
		})
	}
}

func TestPathMatches(t *testing.T) {
	tests := []struct {
		typ   snapshot.PathMatchType
		value string
		path  string
		want  bool
	}{
		{snapshot.PathExact, "/foo", "/foo", true},
		{snapshot.PathExact, "/foo", "/foo/", false},
		{snapshot.PathExact, "/foo", "/FOO", false},
		{snapshot.PathPrefix, "/", "/anything", true},
		{snapshot.PathPrefix, "/foo", "/foo", true},
		{snapshot.PathPrefix, "/foo", "/foo/", true},
		{snapshot.PathPrefix, "/foo", "/foo/bar", true},
		{snapshot.PathPrefix, "/foo", "/foobar", false},
		{snapshot.PathPrefix, "/foo/", "/foo", true},
		{snapshot.PathPrefix, "/foo/", "/foo/bar", true},
		{snapshot.PathPrefix, "/foo/", "/foobar", false},
		{snapshot.PathPrefix, "/a/b", "/a", false},
		{snapshot.PathRegularExpression, "/v[0-9]+/.*", "/v12/x", true},
		{snapshot.PathRegularExpression, "/v[0-9]+", "/v12/x", false}, // anchored
		{snapshot.PathRegularExpression, "/v[0-9]+", "/x/v12", false},
	}
	for _, tt := range tests {
		pm := &snapshot.PathMatch{Type: tt.typ, Value: tt.value}
		s := &snapshot.Snapshot{
			Scope: snapshot.SharedPool(),
			Listeners: []snapshot.Listener{{Name: "l", Port: 80, Protocol: snapshot.ProtocolHTTP, VirtualHosts: []*snapshot.VirtualHost{{
				Hostname: "*",
				Routes:   []snapshot.Route{{ID: "r", Match: snapshot.Match{Path: pm}, DirectResponse: &snapshot.DirectResponse{StatusCode: 200}}},
			}}}},
		}
		st := mustCompile(t, s)
		rt := st.router.ports[80].any.routes[0]
		if got := pathMatches(pm, rt.pathRE, tt.path); got != tt.want {
			t.Errorf("pathMatches(%s %q, %q) = %v, want %v", tt.typ, tt.value, tt.path, got, tt.want)
		}
		got := st.router.lookup(80, newRequest(t, "GET", "http://h"+tt.path, nil)) != nil
		if got != tt.want {
			t.Errorf("router %s %q on %q matched = %v, want %v", tt.typ, tt.value, tt.path, got, tt.want)
		}
	}
}

func TestReplacePrefix(t *testing.T) {
	tests := []struct{ path, prefix, value, want string }{
		{"/foo/bar", "/foo", "/baz", "/baz/bar"},
		{"/foo/bar", "/foo", "/", "/bar"},
		{"/foo", "/foo", "/", "/"},
		{"/foo", "/foo", "/baz", "/baz"},
		{"/foo/", "/foo", "/baz", "/baz/"},
		{"/foo/bar", "/foo", "/baz/", "/baz/bar"},
		{"/foo/bar", "", "/prefix", "/prefix/foo/bar"},
		{"/foo/bar", "/foo", "", "/bar"},
	}
	for _, tt := range tests {
		if got := replacePrefix(tt.path, tt.prefix, tt.value); got != tt.want {
			t.Errorf("replacePrefix(%q, %q, %q) = %q, want %q", tt.path, tt.prefix, tt.value, got, tt.want)
		}
	}
}

func TestRedirectLocation(t *testing.T) {
	prefix := &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/old"}
	tests := []struct {
		name    string
		rd      snapshot.Redirect
		match   *snapshot.PathMatch
		tls     bool
		extPort int32
		url     string
		want    string
	}{
		{"scheme to https drops the port", snapshot.Redirect{Scheme: "https", StatusCode: 301}, nil, false, 80, "http://a.example/x?q=1", "https://a.example/x?q=1"},
		{"scheme set uses its well-known port, not the listener's", snapshot.Redirect{Scheme: "https", StatusCode: 301}, nil, false, 8080, "http://a.example:8080/x", "https://a.example/x"},
		{"no scheme keeps the listener external port", snapshot.Redirect{Hostname: "b.example", StatusCode: 302}, nil, false, 8080, "http://a.example:31000/x", "http://b.example:8080/x"},
		{"no scheme on 80 omits it", snapshot.Redirect{Hostname: "b.example", StatusCode: 302}, nil, false, 80, "http://a.example/x", "http://b.example/x"},
		{"https listener 443 omitted", snapshot.Redirect{Hostname: "b.example", StatusCode: 302}, nil, true, 443, "https://a.example/x", "https://b.example/x"},
		{"explicit port", snapshot.Redirect{Port: 8443, Scheme: "https", StatusCode: 302}, nil, false, 80, "http://a.example/x", "https://a.example:8443/x"},
		{"explicit well-known port omitted", snapshot.Redirect{Port: 443, Scheme: "https", StatusCode: 302}, nil, false, 80, "http://a.example/x", "https://a.example/x"},
		{"full path", snapshot.Redirect{Path: &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: "/new"}, StatusCode: 307}, nil, false, 80, "http://a.example/x/y", "http://a.example/new"},
		{"prefix", snapshot.Redirect{Path: &snapshot.PathModifier{Type: snapshot.ReplacePrefixMatch, Value: "/new"}, StatusCode: 308}, prefix, false, 80, "http://a.example/old/y", "http://a.example/new/y"},
		{"regex", snapshot.Redirect{Path: &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Value: "/v2/$1"}, StatusCode: 301},
			&snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/v1/(.*)"}, false, 80, "http://a.example/v1/users/7", "http://a.example/v2/users/7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proto := snapshot.ProtocolHTTP
			var ltls *snapshot.ListenerTLS
			var certs []snapshot.Certificate
			if tt.tls {
				proto = snapshot.ProtocolHTTPS
				c := testCert(t, "a.example")
				certs = []snapshot.Certificate{c}
				ltls = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: c.Name}}}
			}
			rd := tt.rd
			s := &snapshot.Snapshot{
				Scope:        snapshot.SharedPool(),
				Certificates: certs,
				Listeners: []snapshot.Listener{{Name: "l", Port: 31000, ExternalPort: tt.extPort, Protocol: proto, TLS: ltls, VirtualHosts: []*snapshot.VirtualHost{{
					Hostname: "*",
					Routes:   []snapshot.Route{{ID: "r", Match: snapshot.Match{Path: tt.match}, Redirect: &rd}},
				}}}},
			}
			st := mustCompile(t, s)
			r := newRequest(t, "GET", tt.url, nil)
			rt := st.router.lookup(31000, r)
			if rt == nil {
				t.Fatal("no route")
			}
			if got := redirectLocation(rt.redirect, rt, r, tt.tls); got != tt.want {
				t.Errorf("Location = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostSelection(t *testing.T) {
	vh := func(h string) *snapshot.VirtualHost {
		return &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{ID: h, DirectResponse: &snapshot.DirectResponse{StatusCode: 200}}}}
	}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{{Name: "l", Port: 80, Protocol: snapshot.ProtocolHTTP,
		VirtualHosts: []*snapshot.VirtualHost{vh("*"), vh("*.b.example.com"), vh("*.example.com"), vh("a.example.com"), {Hostname: "empty.example.com"},
			{Hostname: "*.single.example.org", SingleLabelWildcard: true, Routes: []snapshot.Route{{ID: "single", DirectResponse: &snapshot.DirectResponse{StatusCode: 200}}}}}}}}
	st := mustCompile(t, s)
	for host, want := range map[string]string{
		"a.example.com":          "a.example.com",
		"A.Example.COM:8080":     "a.example.com",
		"a.example.com.":         "a.example.com",
		"x.example.com":          "*.example.com",
		"x.y.example.com":        "*.example.com", // one or more labels
		"b.example.com":          "*.example.com",
		"x.b.example.com":        "*.b.example.com",
		"X.Y.B.EXAMPLE.COM":      "*.b.example.com",
		"example.com":            "*",
		"other.org":              "*",
		"[::1]:80":               "*",
		"empty.example.com":      "", // claims its name: 404
		"":                       "*",
		"a.single.example.org":   "single",
		"A.SINGLE.example.org":   "single",
		"a.b.single.example.org": "*", // one label only
		"single.example.org":     "*",
	} {
		r := newRequest(t, "GET", "http://placeholder/", nil)
		r.Host = host
		got := ""
		if rt := st.router.lookup(80, r); rt != nil {
			got = rt.id
		}
		if got != want {
			t.Errorf("host %q → %q, want %q", host, got, want)
		}
	}
	if st.router.lookup(81, newRequest(t, "GET", "http://a.example.com/", nil)) != nil {
		t.Error("a port without a listener must not route")
	}
}

// linearLookup is the reference semantics: the first route of the chosen
// virtual host, in list order, whose every condition matches.
func linearLookup(st *state, port int32, r *http.Request) string {
	lr := st.router.ports[port]
	if lr == nil {
		return ""
	}
	vh := lr.host(r.Host)
	if vh == nil {
		return ""
	}
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	for _, rt := range vh.routes {
		if pathMatches(rt.path, rt.pathRE, path) && rt.matchRest(r) {
			return rt.id
		}
	}
	return ""
}
