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
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The global rate limit counters. A global limit counts a fixed window of
// Period per key in Redis, under
//
//	coxswain:rl:<name>:<key>:<window start, Unix ms>
//
// with one script run (EVALSHA, EVAL when Redis does not have it yet)
// that increments the counter and, on its first increment, sets it to
// expire a second after its window ends; the request is admitted while
// the count is at most Requests+Burst. Replicas pointed at one Redis
// share the count (their clocks should agree to well under a Period).
//
// Redis is asked with a short timeout (redisTimeout). When it cannot be
// reached or answers an error, the request is admitted (FailOpen) or gets
// 503, and for redisBackoff after the failure no request asks Redis: the
// fail mode applies directly, so a Redis outage costs the request path
// one timeout per backoff, not one per request. A limit with no Redis
// configured (--rate-limit-redis unset) applies its fail mode always.
// Failures are logged (at most once per backoff); there is no metric.

// redisTimeout bounds one dial, write or read toward Redis, and one
// count as a whole.
const redisTimeout = 50 * time.Millisecond

// redisBackoff is how long a failure keeps the proxy from asking Redis.
const redisBackoff = time.Second

// redisExpirySlack is how long a window's counter outlives the window, so
// replicas whose clocks differ a little still find it.
const redisExpirySlack = time.Second

// incrScript increments a window's counter and arms its expiry on the
// first increment (or if it somehow has none), in one round trip.
var incrScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n
`)

// redisCounter is the lazily created Redis client of the global limits.
type redisCounter struct {
	addr string
	log  *slog.Logger
	// timeout is redisTimeout (tests raise it on a loaded machine).
	timeout time.Duration

	mu     sync.Mutex
	closed bool
	client atomic.Pointer[redis.Client]
	// downUntil (monoNow) is the end of the backoff after a failure.
	downUntil atomic.Int64
}

// init sets the Redis address ("host:port", or a redis:// or rediss://
// URL); empty leaves the global limits without a store.
func (c *redisCounter) init(addr string, log *slog.Logger) {
	c.addr, c.log, c.timeout = addr, log, redisTimeout
}

// close closes the client, if one was created; later counts fail.
func (c *redisCounter) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if cl := c.client.Swap(nil); cl != nil {
		_ = cl.Close()
	}
}

// errNoRedis is the failure of a count without a store.
var errNoRedis = errors.New("no rate limit store configured")

// get returns the client, creating it at the first call.
func (c *redisCounter) get() (*redis.Client, error) {
	if cl := c.client.Load(); cl != nil {
		return cl, nil
	}
	if c.addr == "" {
		return nil, errNoRedis
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("rate limit store closed")
	}
	if cl := c.client.Load(); cl != nil {
		return cl, nil
	}
	opts, err := c.options()
	if err != nil {
		return nil, err
	}
	cl := redis.NewClient(opts)
	c.client.Store(cl)
	return cl, nil
}

// options are the client's: short timeouts, no retries (the fail mode is
// the answer to a failure), one dial attempt.
func (c *redisCounter) options() (*redis.Options, error) {
	opts := &redis.Options{Addr: c.addr}
	if strings.Contains(c.addr, "://") {
		var err error
		if opts, err = redis.ParseURL(c.addr); err != nil {
			return nil, err
		}
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = c.timeout, c.timeout, c.timeout
	opts.PoolTimeout = c.timeout
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.DisableIdentity = true
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return opts, nil
}

// incr counts one request in key, whose counter expires after ttl; it
// fails at once during the backoff after a failure.
func (c *redisCounter) incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	now := monoNow()
	if now < c.downUntil.Load() {
		return 0, errors.New("rate limit store backing off after a failure")
	}
	cl, err := c.get()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	n, err := incrScript.Run(ctx, cl, []string{key}, ttl.Milliseconds()).Int64()
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) { // not the client gone
			c.failed(now, err)
		}
		return 0, err
	}
	return n, nil
}

// failed starts the backoff, logging the failure when it starts one.
func (c *redisCounter) failed(now int64, err error) {
	prev := c.downUntil.Load()
	if now < prev || !c.downUntil.CompareAndSwap(prev, now+int64(redisBackoff)) {
		return
	}
	c.log.Warn("rate limit store failed; applying fail modes", "redis", c.addr, "backoff", redisBackoff, "error", err)
}

// countGlobal counts r in its window of p; false when the store cannot
// count (none configured, down, or backing off).
func (s *rateLimitStore) countGlobal(r *http.Request, p *rateLimitPolicy, key string) (rateVerdict, bool) {
	if s == nil {
		return rateVerdict{}, false
	}
	window := p.period.Milliseconds()
	now := time.Now().UnixMilli()
	start := now - now%window
	rkey := "coxswain:rl:" + p.name + ":" + key + ":" + strconv.FormatInt(start, 10)
	n, err := s.redis.incr(r.Context(), rkey, p.period+redisExpirySlack)
	if err != nil {
		return rateVerdict{}, false
	}
	left := time.Duration(start+window-now) * time.Millisecond
	v := rateVerdict{admitted: n <= p.capacity, remaining: max(0, p.capacity-n), reset: left}
	if !v.admitted {
		v.retryAfter = left
	}
	return v, true
}
