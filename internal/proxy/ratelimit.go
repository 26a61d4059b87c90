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
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Rate limiting (step 5a of the request path, policies.go). A limit is
// identified by its snapshot name and settings: every route of one
// snapshot whose RateLimit has the same Name, Requests, Period, Burst,
// Key and Header shares its counters, and so does the next snapshot's,
// so a swap resets nothing. The key of a Route limit is the route itself
// (listener and route id), so each route keeps one bucket of its own.
//
// A local limit (Global false) is a token bucket per key in this proxy:
// capacity Requests+Burst, refilled at Requests per Period. The data
// plane's rateLimitStore keeps every local limiter by name and settings,
// weakly: a limiter lives as long as a compiled route uses it. At most
// rateLimitMaxKeys keys are kept per limiter; past that, full (idle)
// buckets are dropped first, then arbitrary ones (a dropped key starts
// again with a full bucket).
//
// A global limit counts in Redis (ratelimit_redis.go): a fixed window of
// Period per key, Requests+Burst admitted per window, shared by every
// replica pointed at the same Redis.
//
// Every answer of a limited route carries RateLimit-Limit (Requests),
// RateLimit-Remaining (whole tokens left) and RateLimit-Reset (seconds
// until the bucket is full again, or until the next token when none is
// left; for a global limit the end of the window). They are set on the
// response header before the upstream's is relayed, and responseHeader
// (forward.go) keeps them over an upstream's fields of the same name. A
// request over the limit gets 429 with Retry-After (seconds, rounded up).

// rateLimitMaxKeys bounds the keys (buckets) one local limiter keeps.
const rateLimitMaxKeys = 100_000

// rateLimitShards is how many independently locked maps a local limiter
// spreads its buckets over.
const rateLimitShards = 32

// rateLimitLongKey is the longest key kept as it is; longer ones (header
// values, paths) are replaced by their SHA-256.
const rateLimitLongKey = 128

// rateLimitStore is the data plane's rate limiting state across
// snapshots: the local limiters by name and settings, and the global
// counters' store (Redis, --rate-limit-redis; ratelimit_redis.go).
type rateLimitStore struct {
	mu sync.Mutex
	// local are the local limiters, held weakly: the compiled routes hold
	// them, and a limiter no state uses any more is collected and its
	// entry pruned at the next compile.
	local map[limiterID]weak.Pointer[localLimiter]
	// redis is the global counters' client (ratelimit_redis.go).
	redis redisCounter
}

// newRateLimitStore builds the store of a data plane; the Redis client is
// created at the first request of a global limit.
func newRateLimitStore(d *DataPlane) *rateLimitStore {
	s := &rateLimitStore{local: map[limiterID]weak.Pointer[localLimiter]{}}
	s.redis.init(d.opts.RateLimitRedis, d.log)
	return s
}

// close closes the Redis client, if one was created.
func (s *rateLimitStore) close() {
	s.redis.close()
}

// limiterID is what identifies a limit's counters: its name and
// settings.
type limiterID struct {
	name     string
	requests int32
	burst    int32
	period   time.Duration
	key      snapshot.RateLimitKeyType
	header   string
}

// localLimiter returns the limiter of id, the one in use when there is
// one, else a new one. A nil store (compiles without a data plane) always
// returns a new one.
func (s *rateLimitStore) localLimiter(id limiterID) *localLimiter {
	if s == nil {
		return newLocalLimiter(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.local[id].Value(); l != nil {
		return l
	}
	for k, w := range s.local {
		if w.Value() == nil {
			delete(s.local, k)
		}
	}
	l := newLocalLimiter(id)
	s.local[id] = weak.Make(l)
	return l
}

// rateLimitPolicy is a route's compiled snapshot.RateLimit.
type rateLimitPolicy struct {
	name     string
	requests int32
	capacity int64
	period   time.Duration
	keyType  snapshot.RateLimitKeyType
	// header is the canonical header name of a Header key.
	header string
	// routeKey is the key of a Route limit.
	routeKey string
	global   bool
	failOpen bool
	// local is the token buckets of a local limit.
	local *localLimiter
	// store is the data plane's (nil in compiles without one): a global
	// limit counts in its Redis.
	store *rateLimitStore
}

// compileRateLimit validates a route's rate limit and binds it to its
// counters: for a local limit, the limiter of the same name and settings
// in use, else a new one.
func (c *compiler) compileRateLimit(in *snapshot.RateLimit, r *route) (*rateLimitPolicy, error) {
	if in == nil {
		return nil, nil
	}
	key := in.Key
	if key == "" {
		key = snapshot.RateLimitKeyClientIP
	}
	if err := validateRateLimit(in, key); err != nil {
		return nil, fmt.Errorf("rateLimit: %w", err)
	}
	name := in.Name
	if name == "" {
		name = "route/" + r.listener + "/" + r.id
	}
	p := &rateLimitPolicy{
		name:     name,
		requests: in.Requests,
		capacity: int64(in.Requests) + int64(in.Burst),
		period:   in.Period.D(),
		keyType:  key,
		routeKey: "r=" + r.listener + "/" + r.id,
		global:   in.Global,
		failOpen: in.FailOpen,
	}
	if key == snapshot.RateLimitKeyHeader {
		p.header = http.CanonicalHeaderKey(in.Header)
	}
	if c.env != nil {
		p.store = c.env.rateStore
	}
	if !p.global {
		p.local = p.store.localLimiter(limiterID{name: name, requests: in.Requests, burst: in.Burst, period: p.period, key: key, header: p.header})
	}
	return p, nil
}

// validateRateLimit checks the settings a limit needs.
func validateRateLimit(in *snapshot.RateLimit, key snapshot.RateLimitKeyType) error {
	switch {
	case in.Requests <= 0:
		return fmt.Errorf("requests %d must be positive", in.Requests)
	case in.Burst < 0:
		return fmt.Errorf("burst %d must not be negative", in.Burst)
	case in.Period.D() <= 0:
		return fmt.Errorf("period %s must be positive", in.Period.D())
	case in.Global && in.Period.D() < time.Millisecond:
		return fmt.Errorf("period %s of a global limit must be at least 1ms", in.Period.D())
	}
	switch key {
	case snapshot.RateLimitKeyClientIP, snapshot.RateLimitKeyPath, snapshot.RateLimitKeyRoute:
		return nil
	case snapshot.RateLimitKeyHeader:
		if !snapshot.ValidToken(in.Header) {
			return fmt.Errorf("header %q is not a valid header name", in.Header)
		}
		return nil
	}
	return errors.New("key " + strconv.Quote(string(key)) + " is unknown")
}

// rateVerdict is the outcome of counting one request.
type rateVerdict struct {
	admitted bool
	// remaining is what is left after this request.
	remaining int64
	// reset is the time until the quota is back (RateLimit-Reset);
	// retryAfter the time until a refused request may be admitted.
	reset, retryAfter time.Duration
}

// admit answers 429 (or 503) and returns false for a request over the
// limit; it sets the RateLimit-* headers either way.
func (p *rateLimitPolicy) admit(ex *exchange, r *http.Request, _ *route) bool {
	if p == nil {
		return true
	}
	key := p.key(ex, r)
	var v rateVerdict
	if p.global {
		var ok bool
		if v, ok = p.store.countGlobal(r, p, key); !ok {
			return p.storeFailed(ex)
		}
	} else {
		v = p.local.take(key, monoNow())
	}
	h := ex.Header()
	h["Ratelimit-Limit"] = []string{strconv.FormatInt(int64(p.requests), 10)}
	h["Ratelimit-Remaining"] = []string{strconv.FormatInt(v.remaining, 10)}
	h["Ratelimit-Reset"] = []string{strconv.FormatInt(ceilSeconds(v.reset), 10)}
	if v.admitted {
		return true
	}
	h["Retry-After"] = []string{strconv.FormatInt(max(1, ceilSeconds(v.retryAfter)), 10)}
	answer(ex, http.StatusTooManyRequests, "rate limit exceeded")
	return false
}

// storeFailed applies the fail mode when the global store cannot count:
// admit (FailOpen), else 503.
func (p *rateLimitPolicy) storeFailed(ex *exchange) bool {
	if p.failOpen {
		return true
	}
	ex.Header()["Retry-After"] = []string{"1"}
	answer(ex, http.StatusServiceUnavailable, "rate limit store unavailable")
	return false
}

// key is what the request is counted under: its client IP, header value
// (all values, comma-joined), path or route, prefixed by the key type so
// different types never share a counter.
func (p *rateLimitPolicy) key(ex *exchange, r *http.Request) string {
	var k string
	switch p.keyType {
	case snapshot.RateLimitKeyRoute:
		return p.routeKey
	case snapshot.RateLimitKeyHeader:
		k = "h=" + strings.Join(r.Header[p.header], ",")
	case snapshot.RateLimitKeyPath:
		k = "p=" + r.URL.Path
	default:
		ip := ex.clientIP
		if !ip.IsValid() {
			ip = peerIP(r)
		}
		k = "ip=" + ip.String()
	}
	if len(k) > rateLimitLongKey {
		sum := sha256.Sum256([]byte(k))
		k = "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return k
}

// ceilSeconds rounds d up to whole seconds (0 for d <= 0).
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// monoBase is the origin of monoNow.
var monoBase = time.Now()

// monoNow is a monotonic clock in nanoseconds.
func monoNow() int64 { return int64(time.Since(monoBase)) }

// localLimiter is a local limit's token buckets, by key.
type localLimiter struct {
	capacity float64
	// perNano is the refill rate, in tokens per nanosecond.
	perNano     float64
	maxPerShard int
	seed        maphash.Seed
	shards      [rateLimitShards]limiterShard
}

// limiterShard is one locked part of a limiter's buckets.
type limiterShard struct {
	mu      sync.Mutex
	buckets map[string]tokenBucket
}

// tokenBucket is one key's tokens as of last (monoNow).
type tokenBucket struct {
	tokens float64
	last   int64
}

// newLocalLimiter builds the empty buckets of a limit.
func newLocalLimiter(id limiterID) *localLimiter {
	l := &localLimiter{
		capacity:    float64(int64(id.requests) + int64(id.burst)),
		perNano:     float64(id.requests) / float64(id.period),
		maxPerShard: rateLimitMaxKeys / rateLimitShards,
		seed:        maphash.MakeSeed(),
	}
	for i := range l.shards {
		l.shards[i].buckets = map[string]tokenBucket{}
	}
	return l
}

// take takes a token from key's bucket at now, when it has one.
func (l *localLimiter) take(key string, now int64) rateVerdict {
	sh := &l.shards[maphash.String(l.seed, key)%rateLimitShards]
	sh.mu.Lock()
	b, ok := sh.buckets[key]
	if !ok {
		if len(sh.buckets) >= l.maxPerShard {
			l.evict(sh, now)
		}
		b = tokenBucket{tokens: l.capacity, last: now}
	}
	b = l.refill(b, now)
	admitted := b.tokens >= 1
	if admitted {
		b.tokens--
	}
	sh.buckets[key] = b
	tokens := b.tokens
	sh.mu.Unlock()

	v := rateVerdict{admitted: admitted, remaining: int64(math.Floor(tokens))}
	untilToken := l.duration(1 - tokens)
	if v.remaining > 0 {
		v.reset = l.duration(l.capacity - tokens)
	} else {
		v.reset = untilToken
	}
	if !admitted {
		v.retryAfter = untilToken
	}
	return v
}

// refill adds the tokens earned since b.last.
func (l *localLimiter) refill(b tokenBucket, now int64) tokenBucket {
	if now > b.last {
		b.tokens = min(l.capacity, b.tokens+float64(now-b.last)*l.perNano)
		b.last = now
	}
	return b
}

// duration is how long earning n tokens takes.
func (l *localLimiter) duration(n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(n / l.perNano))
}

// evict makes room in a full shard: it drops the buckets that are full
// again (a full bucket is what a new key gets anyway), then, while the
// shard is still above 63/64 of its bound, arbitrary ones, so the sweep
// runs at most once per maxPerShard/64 new keys.
func (l *localLimiter) evict(sh *limiterShard, now int64) {
	for k, b := range sh.buckets {
		if l.refill(b, now).tokens >= l.capacity {
			delete(sh.buckets, k)
		}
	}
	target := l.maxPerShard - max(1, l.maxPerShard/64)
	for k := range sh.buckets {
		if len(sh.buckets) <= target {
			break
		}
		delete(sh.buckets, k)
	}
}

// keys is how many buckets l keeps (tests).
func (l *localLimiter) keys() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}
