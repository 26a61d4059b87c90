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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// jwtAlgorithms are the signature algorithms a token may use: the
// asymmetric ones (no HMAC, which would let anyone holding a public key
// sign, and no "none").
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// The JWT filter's defaults and bounds.
const (
	// defaultJWKSCacheDuration is how long a fetched key set is used
	// before a background fetch replaces it.
	defaultJWKSCacheDuration = 5 * time.Minute
	// jwtCacheSize bounds each policy's verified tokens; tokens longer
	// than jwtMaxCachedToken are verified every time.
	jwtCacheSize      = 4096
	jwtMaxCachedToken = 8 << 10
	// jwtRealm is the realm of the Bearer challenges.
	jwtRealm = "coxswain"
)

// The WWW-Authenticate values of the JWT filter's 401s (RFC 6750 §3).
var (
	jwtChallengeMissing = []string{`Bearer realm="` + jwtRealm + `"`}
	jwtChallengeInvalid = []string{`Bearer realm="` + jwtRealm + `", error="invalid_token"`}
)

// errInvalidToken is every reason a present token is refused.
var errInvalidToken = errors.New("invalid token")

// jwtPolicy is a route's compiled snapshot.JWTAuth (step 5c).
//
// The token is read from the cookie FromCookie when set, else from the
// header FromHeader: Authorization (the default) must hold "Bearer
// <token>" (scheme case-insensitive; another scheme counts as no token),
// a custom header holds the token, optionally after "Bearer ". A header
// sent more than once is refused; of several cookies of the name the
// first counts.
//
// A token passes when it is a JWS of an accepted algorithm (jwtAlgorithms)
// whose signature verifies with a key of the set: the keys of its "kid",
// or, without one, every key fitting its algorithm. Then its exp and nbf
// (and iat, which may not lie in the future) hold at the current time
// within ClockSkew, its iss equals Issuer when set, and its aud holds one
// of Audiences when set. A token without exp does not expire.
//
// A request without a token gets 401 with WWW-Authenticate: Bearer
// realm="coxswain" (unless AllowMissing: it goes on without claims); one
// with a token that does not pass gets 401 with error="invalid_token"
// added; one whose keys cannot be had (a JWKS URI never fetched
// successfully) gets 503, as the proxy can tell neither way.
//
// An admitted request loses the client's headers named by ClaimsToHeaders
// (always, so they cannot be spoofed, whether or not the token has the
// claim), then carries the token's claims in them: a top-level string
// as it is, a number as its JSON text, a bool as true or false; other
// values (objects, arrays, null) and strings holding control characters
// set no header. The token is removed (its header, or its cookie from
// the Cookie header) unless ForwardToken.
//
// Verified tokens are remembered, in a bounded cache keyed by the token,
// with their time window and claim values: a token seen again costs a
// map lookup and a clock read. An entry counts only while the key set it
// was verified with is the one in force, so a rotated-out key stops
// verifying its tokens as soon as the new set is fetched.
type jwtPolicy struct {
	expected jwt.Expected
	skew     time.Duration
	// header is the canonical token header ("" when a cookie carries
	// it); bearer says it must be "Bearer <token>" (Authorization).
	header string
	bearer bool
	cookie string
	claims []claimHeader

	allowMissing bool
	forwardToken bool

	keys   jwtKeySource
	tokens *authCache[string, *verifiedToken]
}

// claimHeader is one compiled snapshot.ClaimHeader.
type claimHeader struct {
	claim string
	// header is canonical.
	header string
}

// verifiedToken is what a verified token admits: while set is in force,
// from notBefore to expires (zero: never), with claim values in the
// order of the policy's claims (ok false: no header).
type verifiedToken struct {
	set       *keySet
	notBefore time.Time
	expires   time.Time
	values    []claimValue
}

// claimValue is the header value of one claim.
type claimValue struct {
	v  string
	ok bool
}

// compileJWT compiles a route's JWTAuth; nil when it has none. Exactly
// one of JWKS and JWKSURI must be set: an inline set that does not
// parse, a URI that is not http(s), or a bad header or cookie name is
// an error. A URI's first fetch starts here, in the background.
func (c *compiler) compileJWT(in *snapshot.JWTAuth) (*jwtPolicy, error) {
	if in == nil {
		return nil, nil
	}
	p := &jwtPolicy{
		expected:     jwt.Expected{Issuer: in.Issuer, AnyAudience: jwt.Audience(in.Audiences)},
		skew:         max(in.ClockSkew.D(), 0),
		allowMissing: in.AllowMissing,
		forwardToken: in.ForwardToken,
		tokens:       newAuthCache[string, *verifiedToken](jwtCacheSize),
	}
	if err := p.compileSource(in); err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	for _, ch := range in.ClaimsToHeaders {
		if ch.Claim == "" || !authHeaderNameOK(ch.Header) {
			return nil, fmt.Errorf("jwt: claimsToHeaders: claim %q to header %q: want a claim name and a valid header name", ch.Claim, ch.Header)
		}
		p.claims = append(p.claims, claimHeader{claim: ch.Claim, header: http.CanonicalHeaderKey(ch.Header)})
	}
	keys, err := c.compileJWTKeys(in)
	if err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	p.keys = keys
	return p, nil
}

// compileSource compiles where the token comes from.
func (p *jwtPolicy) compileSource(in *snapshot.JWTAuth) error {
	if in.FromCookie != "" {
		if !authHeaderNameOK(in.FromCookie) {
			return fmt.Errorf("fromCookie %q is not a valid cookie name", in.FromCookie)
		}
		p.cookie = in.FromCookie
		return nil
	}
	h := in.FromHeader
	if h == "" {
		h = "Authorization"
	}
	if !authHeaderNameOK(h) {
		return fmt.Errorf("fromHeader %q is not a valid header name", h)
	}
	p.header = http.CanonicalHeaderKey(h)
	p.bearer = p.header == "Authorization"
	return nil
}

// compileJWTKeys compiles the key source: the inline set, parsed now, or
// the URI's entry in the data plane's cache (whose first fetch starts).
func (c *compiler) compileJWTKeys(in *snapshot.JWTAuth) (jwtKeySource, error) {
	switch {
	case in.JWKS != "" && in.JWKSURI != "":
		return nil, errors.New("both jwks and jwksURI are set")
	case in.JWKS != "":
		set, err := parseJWKS([]byte(in.JWKS))
		if err != nil {
			return nil, fmt.Errorf("inline jwks: %w", err)
		}
		return staticKeys{set: set}, nil
	case in.JWKSURI == "":
		return nil, errors.New("neither jwks nor jwksURI is set")
	}
	u, err := url.Parse(in.JWKSURI)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("jwksURI %q is not an http or https URL", in.JWKSURI)
	}
	if c.env == nil || c.env.jwks == nil {
		return noKeys{}, nil
	}
	ttl := in.JWKSCacheDuration.D()
	if ttl <= 0 {
		ttl = defaultJWKSCacheDuration
	}
	e := c.env.jwks.entry(in.JWKSURI)
	e.prefetch()
	return remoteKeys{e: e, ttl: ttl}, nil
}

// admit answers 401 (or 503) and returns false without a valid token. A
// nil policy admits every request.
func (p *jwtPolicy) admit(ex *exchange, r *http.Request) bool {
	if p == nil {
		return true
	}
	token, present, ok := p.token(r)
	switch {
	case !ok:
		return p.refuse(ex, errInvalidToken)
	case !present:
		if !p.allowMissing {
			ex.Header()["Www-Authenticate"] = jwtChallengeMissing
			answer(ex, http.StatusUnauthorized, "bearer token required")
			return false
		}
		p.setClaims(r, nil)
		return true
	}
	vt, err := p.verify(r.Context(), token)
	if err != nil {
		return p.refuse(ex, err)
	}
	if !p.forwardToken {
		p.removeToken(r)
	} else if p.cookie != "" {
		keepFirstCookie(r.Header, p.cookie)
	}
	p.setClaims(r, vt.values)
	return true
}

// refuse answers a token that did not pass (401), or whose keys could
// not be had (503).
func (p *jwtPolicy) refuse(ex *exchange, err error) bool {
	if errors.Is(err, errJWKSUnavailable) {
		answer(ex, http.StatusServiceUnavailable, "jwks unavailable")
		return false
	}
	ex.Header()["Www-Authenticate"] = jwtChallengeInvalid
	answer(ex, http.StatusUnauthorized, "invalid bearer token")
	return false
}

// token reads the request's token: present false when it has none, ok
// false when what it has is malformed (a header sent twice).
func (p *jwtPolicy) token(r *http.Request) (token string, present, ok bool) {
	if p.cookie != "" {
		v, found := findCookie(r.Header["Cookie"], p.cookie)
		return v, found && v != "", true
	}
	vs := r.Header[p.header]
	switch len(vs) {
	case 0:
		return "", false, true
	case 1:
	default:
		return "", true, false
	}
	v := strings.TrimSpace(vs[0])
	const scheme = "Bearer "
	if len(v) >= len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) {
		v = strings.TrimSpace(v[len(scheme):])
	} else if p.bearer {
		// Basic credentials and the like carry no bearer token.
		return "", false, true
	}
	return v, v != "", true
}

// verify checks a token, from the cache when it was verified with the
// key set in force and its time window holds.
func (p *jwtPolicy) verify(ctx context.Context, token string) (*verifiedToken, error) {
	set, err := p.keys.keys(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if vt, ok := p.tokens.get(token); ok {
		if vt.set == set && vt.admits(now) {
			return vt, nil
		}
		p.tokens.del(token)
	}
	vt, err := p.verifySignedToken(ctx, token, set, now)
	if err != nil {
		return nil, err
	}
	if len(token) <= jwtMaxCachedToken {
		p.tokens.put(token, vt)
	}
	return vt, nil
}

// admits reports whether now lies in the token's time window.
func (vt *verifiedToken) admits(now time.Time) bool {
	return !now.Before(vt.notBefore) && (vt.expires.IsZero() || !now.After(vt.expires))
}

// verifySignedToken parses a token, verifies its signature with set (or,
// when it names a key id set lacks, with the set a refetch brings) and
// checks its claims.
func (p *jwtPolicy) verifySignedToken(ctx context.Context, token string, set *keySet, now time.Time) (*verifiedToken, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil || len(tok.Headers) != 1 {
		return nil, errInvalidToken
	}
	h := tok.Headers[0]
	alg := jose.SignatureAlgorithm(h.Algorithm)
	cands := set.candidates(h.KeyID, alg)
	if len(cands) == 0 && h.KeyID != "" {
		set = p.keys.refetch(ctx, set)
		if set == nil {
			return nil, errJWKSUnavailable
		}
		cands = set.candidates(h.KeyID, alg)
	}
	var std jwt.Claims
	var raw map[string]json.RawMessage
	verified := false
	for _, k := range cands {
		if tok.Claims(k.key, &std, &raw) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errInvalidToken
	}
	if std.ValidateWithLeeway(p.expected.WithTime(now), p.skew) != nil {
		return nil, errInvalidToken
	}
	vt := &verifiedToken{set: set, values: p.claimValues(raw)}
	if std.NotBefore != nil {
		vt.notBefore = std.NotBefore.Time().Add(-p.skew)
	}
	if std.IssuedAt != nil {
		if t := std.IssuedAt.Time().Add(-p.skew); t.After(vt.notBefore) {
			vt.notBefore = t
		}
	}
	if std.Expiry != nil {
		vt.expires = std.Expiry.Time().Add(p.skew)
	}
	return vt, nil
}

// claimValues are the header values of the policy's claims.
func (p *jwtPolicy) claimValues(raw map[string]json.RawMessage) []claimValue {
	if len(p.claims) == 0 {
		return nil
	}
	out := make([]claimValue, len(p.claims))
	for i, ch := range p.claims {
		out[i] = claimHeaderValue(raw[ch.claim])
	}
	return out
}

// claimHeaderValue is the header value of one claim: a string, a number's
// JSON text, true or false; nothing for other values or a string that
// cannot be a header value.
func claimHeaderValue(raw json.RawMessage) claimValue {
	v := strings.TrimSpace(string(raw))
	switch {
	case v == "":
		return claimValue{}
	case v[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || !authHeaderValueOK(s) {
			return claimValue{}
		}
		return claimValue{v: s, ok: true}
	case v == "true" || v == "false":
		return claimValue{v: v, ok: true}
	case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
		if _, err := strconv.ParseFloat(v, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return claimValue{}
		}
		return claimValue{v: v, ok: true}
	}
	return claimValue{}
}

// setClaims removes the client's claim headers, then sets those of
// values (nil: none).
func (p *jwtPolicy) setClaims(r *http.Request, values []claimValue) {
	for i, ch := range p.claims {
		delete(r.Header, ch.header)
		if i < len(values) && values[i].ok {
			r.Header[ch.header] = []string{values[i].v}
		}
	}
}

// removeToken removes the token from the upstream request: its header,
// or every cookie of its name.
func (p *jwtPolicy) removeToken(r *http.Request) {
	if p.cookie == "" {
		delete(r.Header, p.header)
		return
	}
	rewriteCookies(r.Header, p.cookie, false)
}

// findCookie returns the value of the first cookie named name in the
// Cookie header values (quotes around it removed).
func findCookie(values []string, name string) (string, bool) {
	for _, line := range values {
		for part := range strings.SplitSeq(line, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			if k != name {
				continue
			}
			v = strings.TrimSpace(v)
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			return v, true
		}
	}
	return "", false
}

// keepFirstCookie removes the cookies named name but the first, so the
// upstream sees only the token that was verified.
func keepFirstCookie(h http.Header, name string) {
	rewriteCookies(h, name, true)
}

// rewriteCookies rewrites the Cookie header without the cookies named
// name (but the first, when keepFirst), other cookies kept as they came;
// a Cookie header left empty is removed.
func rewriteCookies(h http.Header, name string, keepFirst bool) {
	values := h["Cookie"]
	if len(values) == 0 {
		return
	}
	out := make([]string, 0, len(values))
	kept := false
	for _, line := range values {
		var b strings.Builder
		for part := range strings.SplitSeq(line, ";") {
			pair := strings.TrimSpace(part)
			if pair == "" {
				continue
			}
			if k, _, _ := strings.Cut(pair, "="); k == name {
				if !keepFirst || kept {
					continue
				}
				kept = true
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(pair)
		}
		if b.Len() > 0 {
			out = append(out, b.String())
		}
	}
	if len(out) == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = out
}
