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
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// bcryptEntry is an htpasswd bcrypt hash of pass with prefix ("$2y$",
// "$2a$" or "$2b$"), at the lowest cost.
func bcryptEntry(t testing.TB, pass, prefix string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return prefix + string(h[4:])
}

// shaEntry is an htpasswd {SHA} hash of pass.
func shaEntry(pass string) string {
	sum := sha1.Sum([]byte(pass))
	return "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
}

func basicCreds(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// TestBasicAuth sends real requests with and without credentials:
// bcrypt ($2y$, $2a$, $2b$) and {SHA} entries admit their password and
// nothing else, a refusal is 401 with the Basic challenge and never
// reaches the backend, the user name replaces a client-sent forward
// header, and Authorization is stripped only when asked.
func TestBasicAuth(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	users := []snapshot.BasicAuthUser{
		{Name: "alice", Hash: bcryptEntry(t, "wonderland", "$2y$")},
		{Name: "bob", Hash: shaEntry("builder")},
		{Name: "carol", Hash: bcryptEntry(t, "pässwörd:with:colons", "$2a$")},
		{Name: "dave", Hash: bcryptEntry(t, "d", "$2b$")},
	}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		snapshot.Route{ID: "strict", Match: prefix("/strict"), Backends: to("ns/b:80"),
			BasicAuth: &snapshot.BasicAuth{Realm: `Staff "only"`, Users: users, ForwardUsernameHeader: "x-auth-user", StripAuthorization: true}},
		snapshot.Route{ID: "plain", Match: prefix("/plain"), Backends: to("ns/b:80"),
			BasicAuth: &snapshot.BasicAuth{Users: users}},
	))
	c := client()
	url := func(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", port, path) }
	for _, ok := range [][2]string{{"alice", "wonderland"}, {"bob", "builder"}, {"carol", "pässwörd:with:colons"}, {"dave", "d"}} {
		for range 2 { // the second time from the cache
			res := fetch(t, c, url("/strict"), "Authorization", basicCreds(ok[0], ok[1]), "X-Auth-User", "mallory")
			if res.code != http.StatusOK {
				t.Fatalf("%s: %d, want 200 (%q)", ok[0], res.code, res.body)
			}
			if got := res.echo.Header.Values("X-Auth-User"); len(got) != 1 || got[0] != ok[0] {
				t.Errorf("%s: backend saw X-Auth-User %q, want [%s]", ok[0], got, ok[0])
			}
			if got := res.echo.Header.Get("Authorization"); got != "" {
				t.Errorf("%s: backend saw Authorization %q, want it stripped", ok[0], got)
			}
		}
	}
	res := fetch(t, c, url("/plain"), "Authorization", basicCreds("alice", "wonderland"), "X-Auth-User", "mallory")
	if res.code != http.StatusOK || res.echo.Header.Get("Authorization") != basicCreds("alice", "wonderland") || res.echo.Header.Get("X-Auth-User") != "mallory" {
		t.Errorf("plain route: %d, backend saw Authorization %q X-Auth-User %q; want 200 with both as sent",
			res.code, res.echo.Header.Get("Authorization"), res.echo.Header.Get("X-Auth-User"))
	}

	before := b.hits.Load()
	refused := []struct {
		name string
		hdr  []string
	}{
		{"missing", nil},
		{"wrong bcrypt password", []string{"Authorization", basicCreds("alice", "wonderland!")}},
		{"wrong SHA password", []string{"Authorization", basicCreds("bob", "Builder")}},
		{"password of another user", []string{"Authorization", basicCreds("bob", "wonderland")}},
		{"unknown user", []string{"Authorization", basicCreds("eve", "wonderland")}},
		{"empty password", []string{"Authorization", basicCreds("alice", "")}},
		{"no colon", []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice"))}},
		{"bad base64", []string{"Authorization", "Basic !!!"}},
		{"bearer scheme", []string{"Authorization", "Bearer abc"}},
		{"twice", []string{"Authorization", basicCreds("alice", "wonderland"), "Authorization", basicCreds("alice", "wonderland")}},
	}
	for _, tc := range refused {
		for _, path := range []string{"/strict", "/plain"} {
			res := fetch(t, c, url(path), tc.hdr...)
			want := `Basic realm="Staff \"only\"", charset="UTF-8"`
			if path == "/plain" {
				want = `Basic realm="Restricted", charset="UTF-8"`
			}
			if res.code != http.StatusUnauthorized || res.header.Get("Www-Authenticate") != want {
				t.Errorf("%s %s: %d with WWW-Authenticate %q, want 401 with %q", tc.name, path, res.code, res.header.Get("Www-Authenticate"), want)
			}
		}
	}
	if got := b.hits.Load(); got != before {
		t.Errorf("refused requests reached the backend %d times", got-before)
	}
	// The scheme is case-insensitive.
	if res := fetch(t, c, url("/strict"), "Authorization", "bAsIc "+strings.TrimPrefix(basicCreds("bob", "builder"), "Basic ")); res.code != http.StatusOK {
		t.Errorf("lower-case scheme: %d, want 200", res.code)
	}
}

// TestBasicAuthCache checks that a bcrypt success is remembered under
// the user's entry and password, and only a success.
func TestBasicAuthCache(t *testing.T) {
	pol, err := compileBasicAuth(&snapshot.BasicAuth{Users: []snapshot.BasicAuthUser{{Name: "alice", Hash: bcryptEntry(t, "pw", "$2y$")}}})
	if err != nil {
		t.Fatal(err)
	}
	cached := func() int64 { return pol.verified.n.Load() }
	if _, ok := pol.authenticate(context.Background(), []string{basicCreds("alice", "nope")}); ok || cached() != 0 {
		t.Fatalf("wrong password: admitted %v, %d cached; want refused, none cached", ok, cached())
	}
	for range 3 {
		if user, ok := pol.authenticate(context.Background(), []string{basicCreds("alice", "pw")}); !ok || user != "alice" {
			t.Fatalf("good password: %q %v", user, ok)
		}
	}
	if cached() != 1 {
		t.Errorf("%d cached verifications, want 1", cached())
	}
	if _, ok := pol.authenticate(context.Background(), []string{basicCreds("alice", "nope")}); ok {
		t.Error("wrong password admitted once the right one was cached")
	}
	// The bound holds: a full cache is emptied before it grows.
	c := newAuthCache[[sha256.Size]byte, struct{}](4)
	for i := range 10 {
		c.put(sha256.Sum256([]byte{byte(i)}), struct{}{})
	}
	if n := c.n.Load(); n > 4 {
		t.Errorf("bounded cache holds %d entries, want at most 4", n)
	}
}

// TestBasicAuthCompileErrors checks that unsupported or malformed
// entries fail the snapshot, naming the user.
func TestBasicAuthCompileErrors(t *testing.T) {
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	cases := []struct {
		user snapshot.BasicAuthUser
		want string
	}{
		{snapshot.BasicAuthUser{Name: "md5user", Hash: "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/"}, "unsupported"},
		{snapshot.BasicAuthUser{Name: "cryptuser", Hash: "rqXexS6ZhobKA"}, "unsupported"},
		{snapshot.BasicAuthUser{Name: "plainuser", Hash: "secret"}, "unsupported"},
		{snapshot.BasicAuthUser{Name: "shortbcrypt", Hash: "$2y$10$short"}, "bcrypt"},
		{snapshot.BasicAuthUser{Name: "badsha", Hash: "{SHA}not base64!"}, "SHA"},
		{snapshot.BasicAuthUser{Name: "bad:name", Hash: shaEntry("x")}, "user name"},
	}
	for _, tc := range cases {
		err := p.Apply(retrySnapshot(port, []*snapshot.EndpointSet{{Name: "ns/b:80"}},
			snapshot.Route{ID: "r", Match: prefix("/"), Backends: to("ns/b:80"),
				BasicAuth: &snapshot.BasicAuth{Users: []snapshot.BasicAuthUser{tc.user}}}))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.user.Name)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply error %v, want one naming the user and %q", tc.user.Name, err, tc.want)
		}
	}
}
