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
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// normalizeCase is one line of testdata/normalize-targets.yaml: a request
// target as a client sends it.
type normalizeCase struct {
	Target string `json:"target"`
}

// normalizeResult is what the proxy does with it: the route chosen and
// the path the upstream receives, or the answer given instead.
type normalizeResult struct {
	Target   string `json:"target"`
	Answer   int    `json:"answer,omitempty"`
	Location string `json:"location,omitempty"`
	Route    string `json:"route,omitempty"`
	Upstream string `json:"upstream,omitempty"`
}

// TestPathNormalizationGolden routes each target of
// testdata/normalize-targets.yaml (a 403 route guards /admin, a second route
// takes the rest) and compares the outcome with normalize-targets.golden.yaml.
// Regenerate with -update.
func TestPathNormalizationGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/normalize-targets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []normalizeCase
	if err := yaml.UnmarshalStrict(data, &cases); err != nil {
		t.Fatal(err)
	}
	st := mustCompile(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{httpListener(80, snapshot.VirtualHost{
		Hostname: "*", Routes: []snapshot.Route{
			{ID: "admin-403", Match: prefix("/admin"), DirectResponse: &snapshot.DirectResponse{StatusCode: 403}},
			{ID: "rest", Match: prefix("/"), DirectResponse: &snapshot.DirectResponse{StatusCode: 200}},
		}})}})
	d := NewDataPlane(Options{})
	var results []normalizeResult
	for _, c := range cases {
		r, err := http.ReadRequest(bufioReader("GET " + c.Target + " HTTP/1.1\r\nHost: a.example\r\n\r\n"))
		res := normalizeResult{Target: c.Target}
		if err != nil {
			res.Answer = http.StatusBadRequest // net/http's server refuses it before the proxy sees it
			results = append(results, res)
			continue
		}
		w := httptest.NewRecorder()
		if !d.normalizeRequest(w, r) {
			res.Answer, res.Location = w.Code, w.Header().Get("Location")
			results = append(results, res)
			continue
		}
		if rt := st.router.lookup(80, r); rt != nil {
			res.Route = rt.id
		}
		res.Upstream = r.RequestURI
		if !strings.HasPrefix(res.Upstream, "/") {
			res.Upstream = r.URL.RequestURI() // absolute form: what forward sends
		}
		results = append(results, res)
	}
	got, err := yaml.Marshal(results)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, "testdata/normalize-targets.golden.yaml", got)
	for _, res := range results {
		up, _, _ := strings.Cut(res.Upstream, "?")
		if dec, err := url.PathUnescape(up); err == nil && res.Route == "rest" && (dec == "/admin" || strings.HasPrefix(dec, "/admin/")) {
			t.Errorf("%s reaches the upstream as %s past the /admin route", res.Target, res.Upstream)
		}
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// referenceNormalize is the normal form by other means: path.Clean (which
// merges slashes and resolves dot segments lexically, as backends do)
// plus RFC 3986 §5.2.4's trailing slash after a final dot segment.
func referenceNormalize(p string) string {
	out := path.Clean(p)
	if out != "/" && (strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")) {
		out += "/"
	}
	return out
}

// FuzzNormalizePath: the normaliser agrees with path.Clean on the decoded
// form, never leaves an empty or dot segment, is idempotent, and keeps
// the meaning of every escape it keeps.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "/a/../b", "/a//b/", "//admin", "/./x", "/%2e%2E/admin", "/x/%2Fadmin", "/a/b/..", "/%41%7e%25", "/..", "/a/.", "/%zz", "/%", "/.well-known/x", "/a%2f..%5cb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") {
			return
		}
		np, err := normalizePath(p)
		if err != nil {
			if _, uerr := url.PathUnescape(p); uerr == nil {
				t.Fatalf("%q: normalizePath fails (%v) where url.PathUnescape succeeds", p, err)
			}
			return
		}
		got := np.escaped
		decoded, _, derr := decodeUnreserved(p)
		if derr != nil {
			t.Fatalf("%q: normalised, but its escapes do not decode: %v", p, derr)
		}
		if want := referenceNormalize(decoded); got != want && np.changed {
			t.Fatalf("%q: normalised to %q, path.Clean reference %q", p, got, want)
		}
		if !np.changed && got != p {
			t.Fatalf("%q: unchanged but returned %q", p, got)
		}
		if strings.Contains(got, "//") || strings.Contains(got+"/", "/./") || strings.Contains(got+"/", "/../") {
			t.Fatalf("%q: normal form %q keeps an empty or dot segment", p, got)
		}
		again, err := normalizePath(got)
		if err != nil || again.escaped != got {
			t.Fatalf("%q: not idempotent: %q then %q (%v)", p, got, again.escaped, err)
		}
		// Decoding the normal form equals decoding the input and then
		// resolving it (the escapes kept mean what they meant).
		a, err1 := url.PathUnescape(got)
		b, err2 := url.PathUnescape(decoded)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: escapes broken: %v %v", p, err1, err2)
		}
		if !np.encodedSlash && a != referenceNormalize(b) && !strings.ContainsAny(b, "\x00") {
			t.Fatalf("%q: decodes to %q, the decoded input resolves to %q", p, a, referenceNormalize(b))
		}
		if np.encodedSlash != (strings.Contains(strings.ToUpper(p), "%2F") || strings.Contains(strings.ToUpper(p), "%5C")) {
			t.Fatalf("%q: encodedSlash=%v", p, np.encodedSlash)
		}
	})
}

func TestEscapedSlashActionValidate(t *testing.T) {
	for _, a := range []EscapedSlashAction{"", EscapedSlashRedirect, EscapedSlashReject} {
		if err := a.Validate(); err != nil {
			t.Errorf("%q: %v", a, err)
		}
	}
	if err := EscapedSlashAction("Keep").Validate(); err == nil {
		t.Error("an unknown action validated")
	}
}
