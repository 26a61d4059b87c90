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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Consistent hashing (LoadBalancer ConsistentHash, EndpointSet.Hash).
// A request's key is a header's value, a cookie's value or the client IP
// (the address the policies see, clientip.go); the endpoint is the one
// with the highest random weight for the key among the available ones
// (rendezvous hashing): a key keeps its endpoint while others come, go or
// are ejected, and only the keys of an endpoint that leaves move, spread
// over the rest. The hash is FNV-1a with a 64-bit finaliser, the same in
// every proxy, so replicas agree. A request without a key (no such
// header, no such cookie) is balanced round robin, except that a cookie
// with a CookieTTL is created: the proxy draws a random value (16 bytes,
// hex), hashes on it and sets it on the response, "Set-Cookie:
// <name>=<value>; Path=<CookiePath or />; Max-Age=<TTL seconds>;
// HttpOnly", so the client's next requests stick to the same endpoint
// (session affinity). The cookie is set on every answer of the request,
// also an error.

// hashPolicy is a set's compiled HashPolicy: exactly one of header,
// cookie or sourceIP.
type hashPolicy struct {
	header string // canonical
	cookie string
	// ttl > 0 makes the proxy set cookie when the request has none.
	ttl        time.Duration
	cookiePath string
	sourceIP   bool
}

// affinityCookie is a session affinity cookie generated for a request.
type affinityCookie struct {
	name, value string
}

// compileHash compiles a set's hash policy: nil unless its balancer is
// ConsistentHash (a Hash on another balancer is ignored).
func compileHash(in *snapshot.EndpointSet) *hashPolicy {
	if in.LoadBalancer != snapshot.ConsistentHash || in.Hash == nil {
		return nil
	}
	h := in.Hash
	p := &hashPolicy{cookie: h.Cookie, ttl: h.CookieTTL.D(), cookiePath: h.CookiePath, sourceIP: h.SourceIP}
	if h.Header != "" {
		p.header = http.CanonicalHeaderKey(h.Header)
	}
	if p.cookiePath == "" {
		p.cookiePath = "/"
	}
	return p
}

// validateHash checks a set's balancer and hash policy.
func validateHash(in *snapshot.EndpointSet) error {
	switch in.LoadBalancer {
	case snapshot.RoundRobin, snapshot.LeastRequest, snapshot.Random:
		return nil
	case snapshot.ConsistentHash:
	default:
		return fmt.Errorf("unknown loadBalancer %q", in.LoadBalancer)
	}
	h := in.Hash
	if h == nil {
		return fmt.Errorf("loadBalancer ConsistentHash needs a hash key")
	}
	n := 0
	for _, set := range []bool{h.Header != "", h.Cookie != "", h.SourceIP} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		return fmt.Errorf("hash: exactly one of header, cookie and sourceIP must be set")
	case h.Header != "" && !snapshot.ValidToken(h.Header):
		return fmt.Errorf("hash: header %q is not a valid header name", h.Header)
	case h.Cookie != "" && !snapshot.ValidToken(h.Cookie):
		return fmt.Errorf("hash: cookie %q is not a valid cookie name", h.Cookie)
	case h.CookieTTL < 0:
		return fmt.Errorf("hash: cookieTTL is negative")
	case h.CookiePath != "" && (h.CookiePath[0] != '/' || strings.ContainsFunc(h.CookiePath, badCookiePathRune)):
		return fmt.Errorf("hash: cookiePath %q is not a cookie path", h.CookiePath)
	}
	return nil
}

// badCookiePathRune reports a character a cookie's Path attribute may not
// hold (RFC 6265 §4.1.1: no CTLs, no ';').
func badCookiePathRune(r rune) bool { return r < 0x20 || r == 0x7f || r == ';' || r > 0x7e }

// key is the hash of a request's key; false when it has none (or p is
// nil, or there is no request). A missing cookie with a TTL is created
// (in.cookie, and a Set-Cookie on the exchange).
func (p *hashPolicy) key(in *pickInput) (uint64, bool) {
	if p == nil || in == nil || in.r == nil {
		return 0, false
	}
	switch {
	case p.header != "":
		if v := in.r.Header[p.header]; len(v) > 0 && v[0] != "" {
			return hashString(v[0]), true
		}
	case p.cookie != "":
		return p.cookieKey(in)
	case p.sourceIP:
		if in.ex != nil && in.ex.clientIP.IsValid() {
			b := in.ex.clientIP.As16()
			return hashBytes(b[:]), true
		}
	}
	return 0, false
}

// cookieKey is the hash of the request's cookie, of the one an earlier
// pick of the request generated, or of one it generates now (with a TTL).
func (p *hashPolicy) cookieKey(in *pickInput) (uint64, bool) {
	if in.cookie != nil && in.cookie.name == p.cookie {
		return hashString(in.cookie.value), true
	}
	if c, err := in.r.Cookie(p.cookie); err == nil && c.Value != "" {
		return hashString(c.Value), true
	}
	if p.ttl <= 0 || in.ex == nil {
		return 0, false
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails
	in.cookie = &affinityCookie{name: p.cookie, value: hex.EncodeToString(raw[:])}
	h := in.ex.Header()
	h["Set-Cookie"] = append(h["Set-Cookie"], p.setCookie(in.cookie.value))
	return hashString(in.cookie.value), true
}

// setCookie is the Set-Cookie value of a generated affinity cookie.
func (p *hashPolicy) setCookie(value string) string {
	secs := int64(p.ttl / time.Second)
	if secs < 1 {
		secs = 1
	}
	return p.cookie + "=" + value + "; Path=" + p.cookiePath + "; Max-Age=" + strconv.FormatInt(secs, 10) + "; HttpOnly"
}

// rendezvous is the candidate with the highest weight for key (highest
// random weight hashing); cands is not empty. Ties, which need a 64-bit
// collision, go to the first.
func rendezvous(cands []*endpoint, key uint64) *endpoint {
	best, bestScore := cands[0], mix64(key^cands[0].addrHash)
	for _, ep := range cands[1:] {
		if s := mix64(key ^ ep.addrHash); s > bestScore {
			best, bestScore = ep, s
		}
	}
	return best
}

// FNV-1a, 64 bits.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashString hashes s: FNV-1a, then mix64 so that nearby inputs land far
// apart.
func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return mix64(h)
}

// hashBytes is hashString of b.
func hashBytes(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return mix64(h)
}

// mix64 is the splitmix64 finaliser, a bijection that spreads every input
// bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
