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
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	testIssuer   = "https://issuer.test"
	testAudience = "api"
)

// testSigner is a signing key with its key id.
type testSigner struct {
	alg jose.SignatureAlgorithm
	key any // private key
	kid string
}

func newRSASigner(t testing.TB, kid string) testSigner {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{alg: jose.RS256, key: k, kid: kid}
}

func newECSigner(t testing.TB, kid string) testSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{alg: jose.ES256, key: k, kid: kid}
}

func newEdSigner(t testing.TB, kid string) testSigner {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testSigner{alg: jose.EdDSA, key: k, kid: kid}
}

// jwk is the public JWK of the signer.
func (s testSigner) jwk() jose.JSONWebKey {
	k := jose.JSONWebKey{Key: s.key, KeyID: s.kid, Algorithm: string(s.alg), Use: "sig"}
	return k.Public()
}

// sign serialises a token of claims (and extra top-level claims); kid
// "" sends none.
func (s testSigner) sign(t testing.TB, claims jwt.Claims, extra map[string]any) string {
	t.Helper()
	key := any(s.key)
	if s.kid != "" {
		key = jose.JSONWebKey{Key: s.key, KeyID: s.kid}
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: s.alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(sig).Claims(claims)
	if extra != nil {
		b = b.Claims(extra)
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// goodClaims are claims the test policies accept, valid for an hour.
func goodClaims(sub string) jwt.Claims {
	now := time.Now()
	return jwt.Claims{Issuer: testIssuer, Audience: jwt.Audience{"other", testAudience}, Subject: sub,
		IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
}

func jwksJSON(t testing.TB, keys ...jose.JSONWebKey) string {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jwksServer is a real HTTP server of a key set the test swaps, counting
// its fetches; while failing it answers 500.
type jwksServer struct {
	srv     *httptest.Server
	body    atomic.Pointer[string]
	hits    atomic.Int64
	failing atomic.Bool
}

func startJWKSServer(t testing.TB, keys ...jose.JSONWebKey) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.set(t, keys...)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		if s.failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write([]byte(*s.body.Load()))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *jwksServer) set(t testing.TB, keys ...jose.JSONWebKey) {
	body := jwksJSON(t, keys...)
	s.body.Store(&body)
}

func (s *jwksServer) url() string { return s.srv.URL + "/jwks.json" }

// waitUntil polls cond every 20ms until it holds or waitFor passed.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func bearer(tok string) string { return "Bearer " + tok }

// jwtRoute is a route at /<id> with the policy.
func jwtRoute(id string, j snapshot.JWTAuth) snapshot.Route {
	return snapshot.Route{ID: id, Match: prefix("/" + id), Backends: to("ns/b:80"), JWT: &j}
}

// TestJWTAuth sends real requests through JWT routes whose keys come
// from a JWKS server: RSA, EC (by kid, and without kid) and EdDSA tokens
// pass and their claims reach the backend, replacing spoofed headers;
// expired, early, wrong-audience, wrong-issuer, badly signed, HMAC and
// malformed tokens get 401 invalid_token; no token gets the bare
// challenge; tokens come from a custom header or a cookie and are
// removed unless forwarded.
func TestJWTAuth(t *testing.T) {
	rsaKey, ecKey, edKey := newRSASigner(t, "rsa-1"), newECSigner(t, "ec-1"), newEdSigner(t, "ed-1")
	js := startJWKSServer(t, rsaKey.jwk(), ecKey.jwk(), edKey.jwk())
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	base := snapshot.JWTAuth{Issuer: testIssuer, Audiences: []string{testAudience}, JWKSURI: js.url(),
		ClaimsToHeaders: []snapshot.ClaimHeader{{Claim: "sub", Header: "X-User"}, {Claim: "admin", Header: "x-admin"}, {Claim: "level", Header: "X-Level"}, {Claim: "groups", Header: "X-Groups"}}}
	optional := base
	optional.AllowMissing = true
	fromHeader := base
	fromHeader.FromHeader = "X-Token"
	fromHeader.ForwardToken = true
	fromCookie := base
	fromCookie.FromCookie = "session"
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		jwtRoute("jwt", base), jwtRoute("optional", optional), jwtRoute("header", fromHeader), jwtRoute("cookie", fromCookie)))
	c := client()
	url := func(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", port, path) }

	full := map[string]any{"admin": true, "level": 3, "groups": []string{"a"}}
	for _, s := range []testSigner{rsaKey, ecKey, edKey, {alg: ecKey.alg, key: ecKey.key}} {
		tok := s.sign(t, goodClaims("alice"), full)
		for range 2 { // the second time from the token cache
			res := fetch(t, c, url("/jwt"), "Authorization", bearer(tok), "X-User", "mallory", "X-Groups", "admins")
			if res.code != http.StatusOK {
				t.Fatalf("%s kid %q: %d, want 200 (%q)", s.alg, s.kid, res.code, res.body)
			}
			h := res.echo.Header
			if h.Values("X-User")[0] != "alice" || len(h.Values("X-User")) != 1 || h.Get("X-Admin") != "true" || h.Get("X-Level") != "3" {
				t.Errorf("%s: backend saw X-User %q X-Admin %q X-Level %q, want alice, true, 3", s.alg, h.Values("X-User"), h.Get("X-Admin"), h.Get("X-Level"))
			}
			if got := h.Values("X-Groups"); len(got) != 0 {
				t.Errorf("%s: backend saw X-Groups %q: an array claim sets no header and the client's must go", s.alg, got)
			}
			if got := h.Get("Authorization"); got != "" {
				t.Errorf("%s: backend saw Authorization %q, want the token removed", s.alg, got)
			}
		}
	}
	// A valid token without the admin claim: the client's X-Admin is
	// removed, not passed.
	tok := rsaKey.sign(t, goodClaims("bob"), nil)
	if res := fetch(t, c, url("/jwt"), "Authorization", "bearer "+tok, "X-Admin", "true"); res.code != http.StatusOK || res.echo.Header.Get("X-Admin") != "" || res.echo.Header.Get("X-User") != "bob" {
		t.Errorf("spoofed claim header: %d, backend saw X-Admin %q X-User %q; want 200, none, bob", res.code, res.echo.Header.Get("X-Admin"), res.echo.Header.Get("X-User"))
	}

	stranger := newRSASigner(t, "rsa-1") // same kid, other key
	hmac := testSigner{alg: jose.HS256, key: []byte("0123456789abcdef0123456789abcdef"), kid: "rsa-1"}
	expired, early, wrongAud, wrongIss, future := goodClaims("a"), goodClaims("a"), goodClaims("a"), goodClaims("a"), goodClaims("a")
	expired.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Minute))
	early.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour))
	wrongAud.Audience = jwt.Audience{"someone-else"}
	wrongIss.Issuer = "https://evil.test"
	future.IssuedAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
	good := rsaKey.sign(t, goodClaims("a"), nil)
	invalid := map[string]string{
		"expired":         rsaKey.sign(t, expired, nil),
		"not yet valid":   ecKey.sign(t, early, nil),
		"wrong audience":  rsaKey.sign(t, wrongAud, nil),
		"wrong issuer":    rsaKey.sign(t, wrongIss, nil),
		"issued later":    rsaKey.sign(t, future, nil),
		"other key":       stranger.sign(t, goodClaims("a"), nil),
		"HS256":           hmac.sign(t, goodClaims("a"), nil),
		"garbage":         "not.a.token",
		"tampered":        good[:len(good)-4] + "AAAA",
		"unknown kid":     newECSigner(t, "ec-9").sign(t, goodClaims("a"), nil),
		"alg none header": "eyJhbGciOiJub25lIn0." + strings.Split(good, ".")[1] + ".",
	}
	before := b.hits.Load()
	for name, tok := range invalid {
		for _, path := range []string{"/jwt", "/optional"} {
			res := fetch(t, c, url(path), "Authorization", bearer(tok))
			if res.code != http.StatusUnauthorized || !strings.Contains(res.header.Get("Www-Authenticate"), `error="invalid_token"`) {
				t.Errorf("%s %s: %d with WWW-Authenticate %q, want 401 invalid_token", name, path, res.code, res.header.Get("Www-Authenticate"))
			}
		}
	}
	for _, hdr := range [][]string{nil, {"Authorization", "Basic YTpi"}, {"Authorization", "Bearer "}} {
		res := fetch(t, c, url("/jwt"), hdr...)
		if res.code != http.StatusUnauthorized || res.header.Get("Www-Authenticate") != `Bearer realm="coxswain"` {
			t.Errorf("no token %q: %d with WWW-Authenticate %q, want 401 with the bare Bearer challenge", hdr, res.code, res.header.Get("Www-Authenticate"))
		}
	}
	if res := fetch(t, c, url("/jwt"), "Authorization", bearer(good), "Authorization", bearer(good)); res.code != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", res.code)
	}
	if got := b.hits.Load(); got != before {
		t.Errorf("refused requests reached the backend %d times", got-before)
	}

	// AllowMissing: no token passes, without the client's claim headers.
	if res := fetch(t, c, url("/optional"), "X-User", "mallory"); res.code != http.StatusOK || res.echo.Header.Get("X-User") != "" {
		t.Errorf("optional without token: %d, backend saw X-User %q; want 200 and none", res.code, res.echo.Header.Get("X-User"))
	}
	// A custom header, forwarded, with or without the Bearer prefix.
	for _, v := range []string{good, bearer(good)} {
		res := fetch(t, c, url("/header"), "X-Token", v)
		if res.code != http.StatusOK || res.echo.Header.Get("X-Token") != v || res.echo.Header.Get("X-User") != "a" {
			t.Errorf("X-Token %.10q: %d, backend saw X-Token %.10q X-User %q; want 200, forwarded, a", v, res.code, res.echo.Header.Get("X-Token"), res.echo.Header.Get("X-User"))
		}
	}
	if res := fetch(t, c, url("/header"), "Authorization", bearer(good)); res.code != http.StatusUnauthorized {
		t.Errorf("custom header route with Authorization only: %d, want 401", res.code)
	}
	// A cookie, removed from the Cookie header, other cookies kept.
	res := fetch(t, c, url("/cookie"), "Cookie", "theme=dark; session="+good+"; lang=en")
	if res.code != http.StatusOK || res.echo.Header.Get("Cookie") != "theme=dark; lang=en" || res.echo.Header.Get("X-User") != "a" {
		t.Errorf("cookie: %d, backend saw Cookie %q X-User %q; want 200, the other cookies, a", res.code, res.echo.Header.Get("Cookie"), res.echo.Header.Get("X-User"))
	}
	if res := fetch(t, c, url("/cookie"), "Cookie", "session="+good); res.code != http.StatusOK || len(res.echo.Header.Values("Cookie")) != 0 {
		t.Errorf("cookie alone: %d, backend saw Cookie %q; want 200 and none", res.code, res.echo.Header.Values("Cookie"))
	}
	if res := fetch(t, c, url("/cookie"), "Authorization", bearer(good)); res.code != http.StatusUnauthorized || res.header.Get("Www-Authenticate") != `Bearer realm="coxswain"` {
		t.Errorf("cookie route with Authorization only: %d, want 401 without token", res.code)
	}
	if n := js.hits.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want once for every route", n)
	}
}

// TestJWTKeyRotation rotates the JWKS server's key: the set is fetched
// when the snapshot compiles, a token of the new key is accepted after
// the refetch its unknown kid causes, and a token of the old key is
// refused from then on, though the proxy had verified (and cached) it.
func TestJWTKeyRotation(t *testing.T) {
	oldKey, newKey := newECSigner(t, "k-old"), newECSigner(t, "k-new")
	js := startJWKSServer(t, oldKey.jwk())
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	p.env.jwks.minRefetch.Store(int64(50 * time.Millisecond))
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		jwtRoute("jwt", snapshot.JWTAuth{JWKSURI: js.url()})))
	waitUntil(t, "the fetch at compile", func() bool { return js.hits.Load() == 1 })
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/jwt", port)
	oldTok, newTok := oldKey.sign(t, goodClaims("a"), nil), newKey.sign(t, goodClaims("a"), nil)
	if res := fetch(t, c, url, "Authorization", bearer(oldTok)); res.code != http.StatusOK {
		t.Fatalf("old key before rotation: %d, want 200", res.code)
	}
	js.set(t, newKey.jwk())
	if res := fetch(t, c, url, "Authorization", bearer(oldTok)); res.code != http.StatusOK {
		t.Fatalf("old key with the set still cached: %d, want 200", res.code)
	}
	if n := js.hits.Load(); n != 1 {
		t.Fatalf("%d fetches before any unknown kid, want 1", n)
	}
	time.Sleep(100 * time.Millisecond) // past the refetch interval
	if res := fetch(t, c, url, "Authorization", bearer(newTok)); res.code != http.StatusOK {
		t.Fatalf("new key after rotation: %d, want 200 (%q)", res.code, res.body)
	}
	if n := js.hits.Load(); n != 2 {
		t.Errorf("%d fetches after the new kid, want 2", n)
	}
	if res := fetch(t, c, url, "Authorization", bearer(oldTok)); res.code != http.StatusUnauthorized {
		t.Errorf("old key once the set rotated: %d, want 401", res.code)
	}
}

// TestJWTKeyCacheExpiry checks that a set older than JWKSCacheDuration
// is replaced without any unknown kid: the old key's token stops
// passing once the server dropped it.
func TestJWTKeyCacheExpiry(t *testing.T) {
	oldKey, newKey := newECSigner(t, "k-old"), newECSigner(t, "k-new")
	js := startJWKSServer(t, oldKey.jwk())
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	p.env.jwks.minRefetch.Store(int64(50 * time.Millisecond))
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		jwtRoute("jwt", snapshot.JWTAuth{JWKSURI: js.url(), JWKSCacheDuration: snapshot.Duration(200 * time.Millisecond)})))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/jwt", port)
	oldTok := oldKey.sign(t, goodClaims("a"), nil)
	if res := fetch(t, c, url, "Authorization", bearer(oldTok)); res.code != http.StatusOK {
		t.Fatalf("old key: %d, want 200", res.code)
	}
	js.set(t, newKey.jwk())
	waitUntil(t, "the old key's token refused", func() bool {
		return fetch(t, c, url, "Authorization", bearer(oldTok)).code == http.StatusUnauthorized
	})
}

// TestJWTKeepsLastGoodKeys checks that failed refetches (the server
// answers 500) keep the last good set in force: tokens still pass, an
// unknown kid is 401 (not 503), and a flood of unknown kids costs at
// most one fetch per interval.
func TestJWTKeepsLastGoodKeys(t *testing.T) {
	key := newRSASigner(t, "k1")
	js := startJWKSServer(t, key.jwk())
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		jwtRoute("jwt", snapshot.JWTAuth{JWKSURI: js.url()})))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/jwt", port)
	tok := key.sign(t, goodClaims("a"), nil)
	if res := fetch(t, c, url, "Authorization", bearer(tok)); res.code != http.StatusOK {
		t.Fatalf("good token: %d, want 200", res.code)
	}
	// A flood of unknown kids within the default 10s interval: no
	// refetch at all (the one at compile began the interval), and the
	// concurrent ones do not pile up.
	unknown := newRSASigner(t, "k2").sign(t, goodClaims("a"), nil)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for range 8 {
		wg.Go(func() {
			cl := client()
			for range 5 {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Authorization", bearer(unknown))
				resp, err := cl.Do(req)
				if err != nil {
					wrong.Add(1)
					continue
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Errorf("%d unknown-kid requests not answered 401", wrong.Load())
	}
	if n := js.hits.Load(); n > 2 {
		t.Errorf("%d fetches for 40 unknown-kid requests, want at most 2", n)
	}
	// Refetches fail: the last good set stays.
	js.failing.Store(true)
	p.env.jwks.minRefetch.Store(int64(20 * time.Millisecond))
	hits := js.hits.Load()
	waitUntil(t, "a failed refetch", func() bool {
		time.Sleep(30 * time.Millisecond)
		if res := fetch(t, c, url, "Authorization", bearer(unknown)); res.code != http.StatusUnauthorized {
			t.Fatalf("unknown kid while the server fails: %d, want 401", res.code)
		}
		return js.hits.Load() > hits
	})
	if res := fetch(t, c, url, "Authorization", bearer(tok)); res.code != http.StatusOK {
		t.Errorf("good token after failed refetches: %d, want 200", res.code)
	}
}

// TestJWTKeysUnavailable checks that a URI never fetched makes token
// requests 503 (the proxy cannot tell), while requests without a token
// still get 401; a compile without policy state does the same.
func TestJWTKeysUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/jwks.json"
	_ = ln.Close()
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	s := retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)}, jwtRoute("jwt", snapshot.JWTAuth{JWKSURI: dead}))
	p.mustApply(t, s)
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/jwt", port)
	tok := newRSASigner(t, "k1").sign(t, goodClaims("a"), nil)
	for range 3 {
		if res := fetch(t, c, url, "Authorization", bearer(tok)); res.code != http.StatusServiceUnavailable {
			t.Errorf("token, keys unavailable: %d, want 503 (%q)", res.code, res.body)
		}
	}
	if res := fetch(t, c, url); res.code != http.StatusUnauthorized {
		t.Errorf("no token, keys unavailable: %d, want 401", res.code)
	}
	if b.hits.Load() != 0 {
		t.Error("a request reached the backend")
	}

	st, err := compile(s, nil, newMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	pol := st.router.ports[port].any.routes[0].policies.jwt
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/jwt", nil)
	req.Header.Set("Authorization", bearer(tok))
	if pol.admit(&exchange{w: rec}, req) || rec.Code != http.StatusServiceUnavailable {
		t.Errorf("without policy state: %d, want 503", rec.Code)
	}
}

// TestJWTInlineKeys checks an inline key set: its keys verify, others
// do not, and no fetch is needed.
func TestJWTInlineKeys(t *testing.T) {
	key, other := newECSigner(t, "inline-1"), newECSigner(t, "inline-2")
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		jwtRoute("jwt", snapshot.JWTAuth{JWKS: jwksJSON(t, key.jwk()), Audiences: []string{testAudience},
			ClaimsToHeaders: []snapshot.ClaimHeader{{Claim: "sub", Header: "X-Sub"}}})))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/jwt", port)
	if res := fetch(t, c, url, "Authorization", bearer(key.sign(t, goodClaims("inl"), nil))); res.code != http.StatusOK || res.echo.Header.Get("X-Sub") != "inl" {
		t.Errorf("inline key: %d, backend saw X-Sub %q; want 200 and inl", res.code, res.echo.Header.Get("X-Sub"))
	}
	if res := fetch(t, c, url, "Authorization", bearer(other.sign(t, goodClaims("inl"), nil))); res.code != http.StatusUnauthorized {
		t.Errorf("key not in the inline set: %d, want 401", res.code)
	}
}

// TestJWTCompileErrors checks that malformed policies fail the snapshot.
func TestJWTCompileErrors(t *testing.T) {
	key := newECSigner(t, "k")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	cases := []struct {
		name string
		in   snapshot.JWTAuth
		want string
	}{
		{"malformed inline", snapshot.JWTAuth{JWKS: "{not json"}, "inline jwks"},
		{"empty inline", snapshot.JWTAuth{JWKS: `{"keys":[]}`}, "inline jwks"},
		{"symmetric only", snapshot.JWTAuth{JWKS: `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`}, "inline jwks"},
		{"both", snapshot.JWTAuth{JWKS: jwksJSON(t, key.jwk()), JWKSURI: "https://idp.test/jwks"}, "both"},
		{"neither", snapshot.JWTAuth{}, "neither"},
		{"bad URI", snapshot.JWTAuth{JWKSURI: "ftp://idp.test/jwks"}, "jwksURI"},
		{"bad header", snapshot.JWTAuth{JWKS: jwksJSON(t, key.jwk()), FromHeader: "X Token"}, "fromHeader"},
		{"bad claim header", snapshot.JWTAuth{JWKS: jwksJSON(t, key.jwk()), ClaimsToHeaders: []snapshot.ClaimHeader{{Claim: "sub", Header: "X:User"}}}, "claimsToHeaders"},
	}
	for _, tc := range cases {
		err := p.Apply(retrySnapshot(port, []*snapshot.EndpointSet{{Name: "ns/b:80"}}, jwtRoute("jwt", tc.in)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply error %v, want one about %q", tc.name, err, tc.want)
		}
	}
}
