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
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: {SHA} htpasswd entries are SHA-1 by definition
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// basicAuthPolicy is a route's compiled snapshot.BasicAuth (step 5b). A
// request passes with an Authorization header of the Basic scheme (RFC
// 7617) whose user is one of the entries and whose password matches the
// entry's hash; any other request (no header, several, another scheme,
// malformed base64, an unknown user or a wrong password) gets 401 with
// WWW-Authenticate: Basic realm="<realm>", charset="UTF-8". An admitted
// request carries the user name upstream in ForwardUsernameHeader (when
// set, replacing any the client sent) and loses its Authorization header
// when StripAuthorization is set.
//
// bcrypt is slow by design (tens of milliseconds at cost 10), so the
// policy remembers the credentials it verified, in a bounded cache keyed
// by a salted SHA-256 of the user's entry and the password tried: a
// client that sends the same good credentials again costs one hash. Only
// successes are cached; a changed entry (a new hash) misses.
type basicAuthPolicy struct {
	// challenge is the WWW-Authenticate value of a 401.
	challenge string
	users     map[string]*htpasswdEntry
	// forward is the canonical name of ForwardUsernameHeader ("" when
	// unset).
	forward string
	strip   bool
	// verified are the bcrypt verifications that succeeded.
	verified *authCache[[sha256.Size]byte, struct{}]
}

// htpasswdEntry is one user's compiled hash: a bcrypt hash, or the SHA-1
// digest of a {SHA} entry.
type htpasswdEntry struct {
	name   string
	bcrypt []byte
	sha    []byte
	// cacheKey is a salted digest of the user and the entry; with the
	// password tried it keys the verified cache.
	cacheKey [sha256.Size]byte
}

// defaultRealm is the realm of a BasicAuth without one.
const defaultRealm = "Restricted"

// maxBcryptCost bounds the cost of the accepted bcrypt entries (htpasswd
// -C allows up to 17): every wrong password costs a bcrypt, and a cost
// of 31 would take days.
const maxBcryptCost = 17

// basicAuthCacheSize bounds each policy's verified credentials.
const basicAuthCacheSize = 4096

// bcryptSlots bounds the bcrypt verifications running at once to half the
// CPUs (at least one), so a flood of wrong passwords queues on them
// instead of starving the proxy's other requests.
var bcryptSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))

// basicAuthSalt salts the keys of the verified caches, so a memory dump
// of them is no table of unsalted password digests.
var basicAuthSalt = func() [32]byte {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return b
}()

// compileBasicAuth compiles a route's BasicAuth; nil when it has none. An
// entry of an unsupported hash format (MD5 "$apr1$", crypt, plain text),
// a malformed hash or a user name that cannot be sent in Basic
// credentials is an error naming the user.
func compileBasicAuth(in *snapshot.BasicAuth) (*basicAuthPolicy, error) {
	if in == nil {
		return nil, nil
	}
	realm := in.Realm
	if realm == "" {
		realm = defaultRealm
	}
	if !authHeaderValueOK(realm) {
		return nil, fmt.Errorf("basicAuth: realm %q is not a valid header value", realm)
	}
	p := &basicAuthPolicy{
		challenge: `Basic realm="` + authQuoteEscape(realm) + `", charset="UTF-8"`,
		users:     make(map[string]*htpasswdEntry, len(in.Users)),
		strip:     in.StripAuthorization,
		verified:  newAuthCache[[sha256.Size]byte, struct{}](basicAuthCacheSize),
	}
	if h := in.ForwardUsernameHeader; h != "" {
		if !authHeaderNameOK(h) {
			return nil, fmt.Errorf("basicAuth: forwardUsernameHeader %q is not a valid header name", h)
		}
		p.forward = http.CanonicalHeaderKey(h)
	}
	for _, u := range in.Users {
		e, err := compileHtpasswd(u)
		if err != nil {
			return nil, fmt.Errorf("basicAuth user %q: %w", u.Name, err)
		}
		if _, dup := p.users[u.Name]; dup {
			return nil, fmt.Errorf("basicAuth user %q: listed twice", u.Name)
		}
		p.users[u.Name] = e
	}
	return p, nil
}

// compileHtpasswd compiles one htpasswd entry.
func compileHtpasswd(u snapshot.BasicAuthUser) (*htpasswdEntry, error) {
	if u.Name == "" || strings.IndexByte(u.Name, ':') >= 0 || !authHeaderValueOK(u.Name) {
		return nil, fmt.Errorf("invalid user name (empty, or holds ':' or control characters)")
	}
	e := &htpasswdEntry{name: u.Name}
	switch h := u.Hash; {
	case strings.HasPrefix(h, "$2y$"), strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"):
		cost, err := bcrypt.Cost([]byte(h))
		if err != nil {
			return nil, fmt.Errorf("malformed bcrypt hash: %w", err)
		}
		if cost > maxBcryptCost {
			return nil, fmt.Errorf("bcrypt cost %d is over %d", cost, maxBcryptCost)
		}
		e.bcrypt = []byte(h)
	case strings.HasPrefix(h, "{SHA}"):
		sum, err := base64.StdEncoding.DecodeString(h[len("{SHA}"):])
		if err != nil || len(sum) != sha1.Size {
			return nil, fmt.Errorf("malformed {SHA} hash (want the base64 of a 20-byte SHA-1 digest)")
		}
		e.sha = sum
	default:
		return nil, fmt.Errorf("unsupported hash format (want bcrypt $2y$/$2a$/$2b$ or {SHA})")
	}
	hh := sha256.New()
	hh.Write(basicAuthSalt[:])
	hh.Write([]byte(u.Name))
	hh.Write([]byte{0})
	hh.Write([]byte(u.Hash))
	hh.Sum(e.cacheKey[:0])
	return e, nil
}

// admit answers 401 and returns false without valid credentials. A nil
// policy admits every request.
func (p *basicAuthPolicy) admit(ex *exchange, r *http.Request) bool {
	if p == nil {
		return true
	}
	user, ok := p.authenticate(r.Context(), r.Header["Authorization"])
	if !ok {
		ex.Header()["Www-Authenticate"] = []string{p.challenge}
		answer(ex, http.StatusUnauthorized, "authentication required")
		return false
	}
	if p.forward != "" {
		r.Header[p.forward] = []string{user}
	}
	if p.strip {
		delete(r.Header, "Authorization")
	}
	return true
}

// authenticate checks the request's Authorization values; it returns the
// user they authenticate.
func (p *basicAuthPolicy) authenticate(ctx context.Context, values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	user, pass, ok := parseBasic(values[0])
	if !ok {
		return "", false
	}
	e := p.users[user]
	if e == nil || !p.verify(ctx, e, pass) {
		return "", false
	}
	return e.name, true
}

// parseBasic decodes Basic credentials ("Basic base64(user:password)",
// the scheme case-insensitive).
func parseBasic(v string) (user, pass string, ok bool) {
	const scheme = "Basic "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[len(scheme):]))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}

// verify checks a password against an entry: a constant-time comparison
// of SHA-1 digests, or bcrypt (remembered once it succeeded; run in one
// of bcryptSlots, false when ctx ends first).
func (p *basicAuthPolicy) verify(ctx context.Context, e *htpasswdEntry, pass string) bool {
	if e.sha != nil {
		sum := sha1.Sum([]byte(pass)) //nolint:gosec // G401: {SHA} htpasswd entries are SHA-1 by definition
		return subtle.ConstantTimeCompare(sum[:], e.sha) == 1
	}
	hh := sha256.New()
	hh.Write(e.cacheKey[:])
	hh.Write([]byte(pass))
	var key [sha256.Size]byte
	hh.Sum(key[:0])
	if _, ok := p.verified.get(key); ok {
		return true
	}
	select {
	case bcryptSlots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	err := bcrypt.CompareHashAndPassword(e.bcrypt, []byte(pass))
	<-bcryptSlots
	if err != nil {
		return false
	}
	p.verified.put(key, struct{}{})
	return true
}

// authQuoteEscape escapes a quoted-string's content (RFC 9110 §5.6.4).
func authQuoteEscape(s string) string {
	if !strings.ContainsAny(s, `"\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// authHeaderValueOK reports whether s can be sent as a header field value:
// no control characters but tab.
func authHeaderValueOK(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// authHeaderNameOK reports whether s is a header field name (an RFC 9110
// token).
func authHeaderNameOK(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// authCache is a concurrent map of at most about max entries, for the
// verification caches of the auth filters (basic auth credentials, JWT
// tokens). It is built for many reads of few keys: reads take no lock.
// When an insert finds it full it is emptied, which bounds its memory
// without per-entry bookkeeping; the entries are recomputed on their
// next miss.
type authCache[K comparable, V any] struct {
	m   sync.Map
	n   atomic.Int64
	max int64
}

// newAuthCache builds an empty cache of at most about limit entries.
func newAuthCache[K comparable, V any](limit int64) *authCache[K, V] {
	return &authCache[K, V]{max: limit}
}

// get returns the value of k.
func (c *authCache[K, V]) get(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// put stores v under k, emptying the cache first when it is full.
func (c *authCache[K, V]) put(k K, v V) {
	if c.n.Load() >= c.max {
		c.m.Clear()
		c.n.Store(0)
	}
	if _, loaded := c.m.Swap(k, v); !loaded {
		c.n.Add(1)
	}
}

// del removes k.
func (c *authCache[K, V]) del(k K) {
	if _, loaded := c.m.LoadAndDelete(k); loaded {
		c.n.Add(-1)
	}
}
