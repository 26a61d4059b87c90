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
	"strconv"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// regexRoute is a route matching the regular expression match whose
// rewrite replaces pattern's matches with value.
func regexRoute(id, match, pattern, value string, pn *snapshot.PathNormalization) snapshot.Route {
	return snapshot.Route{
		ID:                id,
		Match:             snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: match}},
		Rewrite:           &snapshot.URLRewrite{Path: &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Pattern: pattern, Value: value}},
		Backends:          to("ns/b:80"),
		PathNormalization: pn,
	}
}

func TestPathRewriteRegex(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	merge := &snapshot.PathNormalization{MergeSlashes: true}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		regexRoute("groups", "/api/.*", `^/api/v([0-9]+)/(.*)$`, "/v$1/$2", nil),
		regexRoute("all", "/all/.*", "foo", "bar", nil),
		regexRoute("strip", "/strip/.*", "^/strip/", "", nil),
		regexRoute("doubled", "/dbl/.*", "/dbl", "//x/", nil),
		regexRoute("merged", "/mrg/.*", "/mrg", "//x/", merge),
		snapshot.Route{ID: "full-merged", Match: prefix("/full"), Backends: to("ns/b:80"), PathNormalization: merge,
			Rewrite: &snapshot.URLRewrite{Path: &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: "/a//b///c"}}},
		snapshot.Route{ID: "norm-only", Match: prefix("/n"), Backends: to("ns/b:80"), PathNormalization: &snapshot.PathNormalization{MergeSlashes: true, DecodeSlashes: true}},
		snapshot.Route{ID: "redirect", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/old/.*"}},
			Redirect: &snapshot.Redirect{Path: &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Pattern: "^/old/", Value: "/new/"}, StatusCode: http.StatusMovedPermanently}},
	))
	c := client()
	base := "http://127.0.0.1:" + strconv.Itoa(int(port))
	for _, tc := range []struct{ path, want string }{
		{"/api/v2/users/7", "/v2/users/7"},
		{"/api/none", "/api/none"}, // no match: as it was
		{"/all/foo/x/foo", "/all/bar/x/bar"},
		{"/strip/x/y", "/x/y"},
		{"/dbl/y", "//x//y"},
		{"/mrg/y", "/x/y"},
		{"/full/z", "/a/b/c"},
		{"/n/a/b", "/n/a/b"},
	} {
		res := fetch(t, c, base+tc.path)
		if res.code != http.StatusOK || res.echo.Path != tc.want {
			t.Errorf("%s: %d, upstream path %q; want 200, %q", tc.path, res.code, res.echo.Path, tc.want)
		}
	}
	res := fetch(t, c, base+"/old/page")
	loc, err := url.Parse(res.header.Get("Location"))
	if res.code != http.StatusMovedPermanently || err != nil || loc.Path != "/new/page" {
		t.Errorf("redirect: %d to %q, want 301 to /new/page", res.code, res.header.Get("Location"))
	}
}

func TestCompileRewriteRejectsBadPatterns(t *testing.T) {
	bad := &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Pattern: "(unclosed", Value: "/"}
	if err := compileRewrite(&snapshot.URLRewrite{Path: bad}, nil); err == nil {
		t.Error("a rewrite with an invalid pattern compiled")
	}
	if err := compileRewrite(nil, &snapshot.Redirect{Path: bad}); err == nil {
		t.Error("a redirect with an invalid pattern compiled")
	}
	wrongType := &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Pattern: "x", Value: "/"}
	if err := compileRewrite(&snapshot.URLRewrite{Path: wrongType}, nil); err == nil {
		t.Error("a pattern on ReplaceFullPath compiled")
	}
	good := &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Pattern: "^/a/(.*)", Value: "/$1"}
	if err := compileRewrite(&snapshot.URLRewrite{Path: good}, &snapshot.Redirect{Path: good}); err != nil {
		t.Errorf("a valid pattern: %v", err)
	}
	// At request time an invalid pattern leaves the path alone.
	if got := rewritePath(bad, &route{}, "/a/b"); got != "/a/b" {
		t.Errorf("invalid pattern rewrote /a/b to %q", got)
	}
}

func TestUpstreamPathNormalization(t *testing.T) {
	req := func(target string) *http.Request {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u, Host: "h", RequestURI: target}
	}
	cases := []struct {
		what          string
		target        string
		pn            snapshot.PathNormalization
		rewrite       *snapshot.PathModifier
		want          string
		wantRewritten bool
	}{
		{"decode", "/a%2Fb%5cc", snapshot.PathNormalization{DecodeSlashes: true}, nil, "/a/b/c", true},
		{"decode lower case", "/a%2fb", snapshot.PathNormalization{DecodeSlashes: true}, nil, "/a/b", true},
		{"decode and merge", "/a%2F%2F/b", snapshot.PathNormalization{DecodeSlashes: true, MergeSlashes: true}, nil, "/a/b", true},
		{"decode without merge", "/a%2F%2Fb", snapshot.PathNormalization{DecodeSlashes: true}, nil, "/a//b", true},
		// Without DecodeSlashes the kept encoded slashes stay as sent.
		{"merge keeps encoded", "/a%2F%2Fb", snapshot.PathNormalization{MergeSlashes: true}, nil, "/a//b", false},
		{"nothing to decode", "/a/b", snapshot.PathNormalization{DecodeSlashes: true, MergeSlashes: true}, nil, "/a/b", false},
		{"merge a rewrite", "/a", snapshot.PathNormalization{MergeSlashes: true},
			&snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: "//x//y"}, "/x/y", true},
		{"no merge of a rewrite", "/a", snapshot.PathNormalization{},
			&snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: "//x//y"}, "//x//y", true},
	}
	for _, tc := range cases {
		rt := &route{policies: routePolicies{pathNorm: &tc.pn}}
		if tc.rewrite != nil {
			rt.rewrite = &snapshot.URLRewrite{Path: tc.rewrite}
		}
		_, got, rewritten := rewriteTarget(rt, req(tc.target))
		if got != tc.want || rewritten != tc.wantRewritten {
			t.Errorf("%s: %s became %q (rewritten %v), want %q (%v)", tc.what, tc.target, got, rewritten, tc.want, tc.wantRewritten)
		}
	}
}

func TestMergeSlashes(t *testing.T) {
	for in, want := range map[string]string{"/": "/", "//": "/", "/a//b/": "/a/b/", "///a///": "/a/", "a": "a"} {
		if got := mergeSlashes(in); got != want {
			t.Errorf("mergeSlashes(%q) = %q, want %q", in, got, want)
		}
	}
}
