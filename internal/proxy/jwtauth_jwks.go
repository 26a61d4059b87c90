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
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The JSON Web Key Sets of the JWT filter (jwtauth.go): parsed keys, and
// the cache of the sets fetched from JWKS URIs.
//
// A URI's set is fetched once for every route and snapshot that names it
// (jwksCache keys its entries by URI, and lives as long as the data
// plane). The first fetch starts in the background when a snapshot naming
// the URI compiles; a request that finds no set yet waits for it
// (bounded by the fetch timeout and the request's context). A set older
// than the policy's JWKSCacheDuration is still used while a background
// fetch replaces it. A token naming a key id the set lacks makes the
// request wait for a fetch (keys rotated): requests arriving meanwhile
// join the fetch in flight, later ones within the interval use the set
// they have. Whatever starts them, fetches of a URI begin at most once
// per jwksMinRefetch, and one at a time. A fetch
// that fails (unreachable server, status other than 200, a body that is
// no key set or has no usable key) leaves the last good set in force;
// while a URI has never been fetched successfully, its tokens cannot be
// verified and requests get 503.

// jwksFetchTimeout bounds one fetch of a key set, connection included.
const jwksFetchTimeout = 5 * time.Second

// jwksMinRefetch is the least time between two fetches of one URI, but
// for the first.
const jwksMinRefetch = 10 * time.Second

// jwksMaxBytes bounds the body of a fetched key set.
const jwksMaxBytes = 1 << 20

// errJWKSUnavailable is the failure of a URI never fetched successfully.
var errJWKSUnavailable = errors.New("jwks unavailable")

// keySet is a parsed JSON Web Key Set: the public keys that can verify a
// signature of the accepted algorithms. It is immutable.
type keySet struct {
	byKID map[string][]jwtKey
	all   []jwtKey
}

// jwtKey is one verification key.
type jwtKey struct {
	// key is a *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey.
	key any
	// alg is the JWK's "alg": when set, the only algorithm it verifies.
	alg jose.SignatureAlgorithm
}

// fits reports whether the key can verify a signature of alg: its type
// and curve match, and so does its own alg when it has one.
func (k jwtKey) fits(alg jose.SignatureAlgorithm) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(string(alg), "RS") || strings.HasPrefix(string(alg), "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case jose.ES256:
			return key.Curve == elliptic.P256()
		case jose.ES384:
			return key.Curve == elliptic.P384()
		case jose.ES512:
			return key.Curve == elliptic.P521()
		}
		return false
	case ed25519.PublicKey:
		return alg == jose.EdDSA
	}
	return false
}

// candidates are the keys that may have signed a token of alg naming kid
// (every fitting key when kid is empty).
func (s *keySet) candidates(kid string, alg jose.SignatureAlgorithm) []jwtKey {
	pool := s.all
	if kid != "" {
		pool = s.byKID[kid]
	}
	var out []jwtKey
	for _, k := range pool {
		if k.fits(alg) {
			out = append(out, k)
		}
	}
	return out
}

// parseJWKS parses a JSON Web Key Set. Keys that cannot verify the
// accepted signatures (encryption keys, symmetric keys, key types
// go-jose does not know, malformed entries) are skipped, so one odd key
// does not void an identity provider's set; a document that is no key
// set, or has no usable key, is an error. Private keys count by their
// public half.
func parseJWKS(data []byte) (*keySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("malformed JWKS: %w", err)
	}
	s := &keySet{byKID: map[string][]jwtKey{}}
	var skipped []string
	for i, raw := range doc.Keys {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(raw); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		if jwk.Use != "" && jwk.Use != "sig" {
			continue
		}
		pub := jwk.Public()
		if !pub.Valid() || !pub.IsPublic() {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): not an asymmetric signing key", i, jwk.KeyID))
			continue
		}
		k := jwtKey{key: pub.Key, alg: jose.SignatureAlgorithm(jwk.Algorithm)}
		s.all = append(s.all, k)
		s.byKID[jwk.KeyID] = append(s.byKID[jwk.KeyID], k)
	}
	if len(s.all) == 0 {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("JWKS has no usable signing key (%s)", strings.Join(skipped, "; "))
		}
		return nil, errors.New("JWKS has no usable signing key")
	}
	return s, nil
}

// jwtKeySource is where a JWT policy gets its keys: an inline set, a
// JWKS URI's cache entry, or nothing (a URI without a cache).
type jwtKeySource interface {
	// keys returns the set to verify with, or errJWKSUnavailable.
	keys(ctx context.Context) (*keySet, error)
	// refetch returns the set after a token named a key id it lacks:
	// a newer one when a fetch was allowed, else the same.
	refetch(ctx context.Context, old *keySet) *keySet
}

// staticKeys is an inline key set.
type staticKeys struct{ set *keySet }

func (s staticKeys) keys(context.Context) (*keySet, error) { return s.set, nil }

func (s staticKeys) refetch(context.Context, *keySet) *keySet { return s.set }

// noKeys is a JWKS URI without a cache (a compile without policy
// state): nothing verifies.
type noKeys struct{}

func (noKeys) keys(context.Context) (*keySet, error) { return nil, errJWKSUnavailable }

func (noKeys) refetch(context.Context, *keySet) *keySet { return nil }

// remoteKeys is a policy's view of a JWKS URI: its cache entry and how
// old a set the policy uses before it asks for a fresh one.
type remoteKeys struct {
	e   *jwksEntry
	ttl time.Duration
}

// keys returns the URI's set, starting a background fetch when it is
// older than the policy's cache duration; with none yet it waits for a
// fetch.
func (r remoteKeys) keys(ctx context.Context) (*keySet, error) {
	if s := r.e.set.Load(); s != nil {
		if time.Now().UnixNano()-r.e.fetched.Load() > int64(r.ttl) {
			r.e.refreshInBackground()
		}
		return s, nil
	}
	if call := r.e.start(); call != nil {
		call.wait(ctx)
	}
	if s := r.e.set.Load(); s != nil {
		return s, nil
	}
	return nil, errJWKSUnavailable
}

// refetch waits for a fetch of the URI, when one is in flight or allowed.
func (r remoteKeys) refetch(ctx context.Context, old *keySet) *keySet {
	if call := r.e.start(); call != nil {
		call.wait(ctx)
	}
	if s := r.e.set.Load(); s != nil {
		return s
	}
	return old
}

// jwksCache holds the fetched key sets of every JWKS URI, across
// snapshots. Its entries live as long as the data plane (a proxy names
// few URIs); fetches run in goroutines bounded by jwksFetchTimeout.
type jwksCache struct {
	client *http.Client
	log    *slog.Logger
	// minRefetch is jwksMinRefetch, in nanoseconds (tests shorten it).
	minRefetch atomic.Int64

	mu      sync.Mutex
	entries map[string]*jwksEntry
}

// newJWKSCache builds the data plane's key set cache: fetches verify TLS
// against the system roots, honour the proxy environment variables and
// keep no idle connection.
func newJWKSCache(d *DataPlane) *jwksCache {
	dialer := &net.Dialer{Timeout: jwksFetchTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   jwksFetchTimeout,
		ResponseHeaderTimeout: jwksFetchTimeout,
		ForceAttemptHTTP2:     true,
		// A set is fetched every few minutes at most: no connection is
		// kept between fetches, so none outlives the data plane.
		DisableKeepAlives: true,
	}
	c := &jwksCache{
		client:  &http.Client{Transport: tr, Timeout: jwksFetchTimeout},
		log:     slog.New(slog.DiscardHandler),
		entries: map[string]*jwksEntry{},
	}
	if d != nil && d.log != nil {
		c.log = d.log
	}
	c.minRefetch.Store(int64(jwksMinRefetch))
	return c
}

// entry returns the entry of a URI, created on first use.
func (c *jwksCache) entry(uri string) *jwksEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[uri]
	if e == nil {
		e = &jwksEntry{uri: uri, cache: c}
		c.entries[uri] = e
	}
	return e
}

// jwksEntry is one URI's key set and its fetches.
type jwksEntry struct {
	uri   string
	cache *jwksCache
	// set is the last good set (nil before the first successful fetch);
	// fetched is when it was fetched, lastTry when the last fetch began
	// (Unix nanoseconds).
	set     atomic.Pointer[keySet]
	fetched atomic.Int64
	lastTry atomic.Int64

	mu sync.Mutex
	// call is the fetch in flight; body the last good document, so a
	// fetch of the same document keeps the same set (and the tokens
	// verified with it stay cached).
	call *jwksCall
	body []byte
}

// jwksCall is one fetch; done is closed when it ended.
type jwksCall struct {
	done chan struct{}
}

// wait waits for the fetch to end, or for ctx.
func (c *jwksCall) wait(ctx context.Context) {
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

// start returns the fetch in flight, else starts one unless the last
// began less than minRefetch ago (nil then). The first fetch is always
// allowed.
func (e *jwksEntry) start() *jwksCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.call != nil {
		return e.call
	}
	now := time.Now().UnixNano()
	if last := e.lastTry.Load(); last != 0 && now-last < e.cache.minRefetch.Load() {
		return nil
	}
	e.lastTry.Store(now)
	call := &jwksCall{done: make(chan struct{})}
	e.call = call
	go e.run(call)
	return call
}

// refreshInBackground starts a fetch unless one ran recently, without
// taking the lock on the common path.
func (e *jwksEntry) refreshInBackground() {
	if time.Now().UnixNano()-e.lastTry.Load() < e.cache.minRefetch.Load() {
		return
	}
	e.start()
}

// prefetch starts the first fetch of a URI that has no set yet.
func (e *jwksEntry) prefetch() {
	if e.set.Load() == nil {
		e.start()
	}
}

// run fetches the URI and publishes the set when it is good.
func (e *jwksEntry) run(call *jwksCall) {
	body, err := e.cache.fetch(e.uri)
	var set *keySet
	if err == nil {
		set, err = parseJWKS(body)
	}
	e.mu.Lock()
	if err == nil {
		e.fetched.Store(time.Now().UnixNano())
		if e.set.Load() == nil || !bytes.Equal(body, e.body) {
			e.set.Store(set)
			e.body = body
		}
	}
	e.call = nil
	e.mu.Unlock()
	close(call.done)
	if err != nil {
		e.cache.log.Warn("jwks fetch failed; keeping the last good key set, if any", "uri", e.uri, "err", err)
	}
}

// fetch GETs a key set document.
func (c *jwksCache) fetch(uri string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks fetch: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, jwksMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks read: %w", err)
	}
	if len(body) > jwksMaxBytes {
		return nil, fmt.Errorf("jwks document over %d bytes", jwksMaxBytes)
	}
	return body, nil
}
