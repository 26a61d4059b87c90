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
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestPolicyFilterOrder sends real requests through routes that carry
// several policies at once and checks that the filters answer in the
// documented order (policies.go): IP access before everything, the CORS
// preflight before rate limiting and authentication, rate limiting before
// authentication, basic auth before JWT, and the request size limit only
// once admitted.
func TestPolicyFilterOrder(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	signer := newECSigner(t, "k1")
	jwks := jwksJSON(t, signer.jwk())
	token := signer.sign(t, goodClaims("alice"), nil)
	port := testkit.FreePortInt32(t)
	// {SHA} of "secret".
	users := []snapshot.BasicAuthUser{{Name: "alice", Hash: "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ="}}
	all := func(id string, ip *snapshot.IPAccess, requests int32) snapshot.Route {
		return snapshot.Route{ID: id, Match: prefix("/" + id), Backends: to("ns/b:80"),
			IPAccess:            ip,
			CORS:                &snapshot.CORS{AllowOrigins: []string{"https://app.example"}, AllowMethods: []string{"GET"}},
			RateLimit:           &snapshot.RateLimit{Name: "ns/" + id, Requests: requests, Period: snapshot.Duration(60e9), Key: snapshot.RateLimitKeyRoute},
			BasicAuth:           &snapshot.BasicAuth{Users: users},
			JWT:                 &snapshot.JWTAuth{JWKS: jwks},
			MaxRequestBodyBytes: 4,
		}
	}
	routes := []snapshot.Route{
		all("denied", &snapshot.IPAccess{Deny: []string{"127.0.0.0/8"}}, 100),
		all("limited", nil, 2),
		all("auth", nil, 100),
	}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)}, routes...))
	c := client()
	url := func(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", port, path) }
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:secret"))

	// IP access first: 403 even for a preflight and with good credentials.
	if r := fetch(t, c, url("/denied"), "Authorization", basic); r.code != http.StatusForbidden {
		t.Errorf("denied client: %d, want 403", r.code)
	}
	pre, err := http.NewRequest(http.MethodOptions, url("/denied"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pre.Header.Set("Origin", "https://app.example")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	if r := do(t, c, pre); r.code != http.StatusForbidden {
		t.Errorf("denied client's preflight: %d, want 403", r.code)
	}

	// The preflight is answered before rate limiting and authentication:
	// it carries no credentials and uses no token.
	for i := 0; i < 3; i++ {
		pre.URL.Path = "/limited"
		if r := do(t, c, pre); r.code != http.StatusNoContent {
			t.Fatalf("preflight %d: %d, want 204", i, r.code)
		}
	}
	// Rate limiting before authentication: the 2 tokens go to the
	// requests without credentials (401), the third is refused 429 even
	// with good credentials.
	for i := 0; i < 2; i++ {
		if r := fetch(t, c, url("/limited")); r.code != http.StatusUnauthorized {
			t.Fatalf("unauthenticated request %d: %d, want 401", i, r.code)
		}
	}
	if r := fetch(t, c, url("/limited"), "Authorization", basic); r.code != http.StatusTooManyRequests {
		t.Fatalf("third request: %d, want 429 (rate limiting runs before authentication)", r.code)
	}
	if b.hits.Load() != 0 {
		t.Fatalf("the backend got %d requests, want 0", b.hits.Load())
	}

	// Basic auth before JWT: without anything the challenge is Basic; with
	// basic credentials only, it is Bearer; with both the request is
	// admitted, and only then is its body size checked.
	r := fetch(t, c, url("/auth"))
	if r.code != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("no credentials: %d %q, want 401 with a Basic challenge", r.code, r.header.Get("WWW-Authenticate"))
	}
	r = fetch(t, c, url("/auth"), "Authorization", basic)
	if r.code != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("basic credentials only: %d %q, want 401 with a Bearer challenge", r.code, r.header.Get("WWW-Authenticate"))
	}
	// A request with only the token fails basic auth first.
	r = fetch(t, c, url("/auth"), "Authorization", bearer(token))
	if r.code != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("token only: %d %q, want 401 from basic auth first", r.code, r.header.Get("WWW-Authenticate"))
	}
	big, err := http.NewRequest(http.MethodPost, url("/auth"), strings.NewReader("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, c, big); r.code != http.StatusUnauthorized {
		t.Errorf("an oversized body without credentials: %d, want 401 (authentication before the size limit)", r.code)
	}
}
