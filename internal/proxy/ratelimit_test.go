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
	"fmt"
	"hash/maphash"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// rlRoute is a route to set "ns/b:80" limited by rl.
func rlRoute(id, path string, rl *snapshot.RateLimit) snapshot.Route {
	return snapshot.Route{ID: id, Match: prefix(path), Backends: to("ns/b:80"), RateLimit: rl}
}

// rlURL is the URL of path on the test listener port.
func rlURL(port int32, path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(int(port)) + path
}

// newRedisPlane is a test plane whose global rate limits count in the
// Redis at addr, with a Redis timeout a loaded machine meets.
func newRedisPlane(t *testing.T, addr string) *testPlane {
	t.Helper()
	reg := prometheus.NewRegistry()
	buf := &testkit.SyncBuffer{}
	dp := NewDataPlane(Options{BindHost: "127.0.0.1", AccessLog: buf, Registry: reg, DrainTimeout: 2 * time.Second, RateLimitRedis: addr})
	dp.env.rateStore.redis.timeout = 2 * time.Second
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dp.Shutdown(ctx)
	})
	return &testPlane{DataPlane: dp, reg: reg, log: buf}
}

// headerInt is a response header's integer value (-1 when absent or not
// an integer).
func headerInt(h http.Header, name string) int {
	n, err := strconv.Atoi(h.Get(name))
	if err != nil {
		return -1
	}
	return n
}

func TestRateLimitLocalAdmitsRequestsPlusBurst(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	rl := &snapshot.RateLimit{Name: "ns/rl", Requests: 5, Burst: 2, Period: snapshot.Duration(time.Minute), Key: snapshot.RateLimitKeyClientIP}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)}, rlRoute("limited", "/", rl)))
	c := client()
	admitted := 0
	for i := range 12 {
		res := fetch(t, c, rlURL(port, "/x"))
		if got := headerInt(res.header, "RateLimit-Limit"); got != 5 {
			t.Errorf("request %d: RateLimit-Limit %d, want 5", i, got)
		}
		remaining := headerInt(res.header, "RateLimit-Remaining")
		reset := headerInt(res.header, "RateLimit-Reset")
		switch res.code {
		case http.StatusOK:
			admitted++
			if want := 7 - admitted; remaining != want {
				t.Errorf("admitted request %d: RateLimit-Remaining %d, want %d", admitted, remaining, want)
			}
			// Full again after (7-remaining) tokens at 12s each.
			if maxReset := (7 - remaining) * 12; reset < 1 || reset > maxReset {
				t.Errorf("admitted request %d: RateLimit-Reset %d, want in [1, %d]", admitted, reset, maxReset)
			}
		case http.StatusTooManyRequests:
			if remaining != 0 {
				t.Errorf("refused request %d: RateLimit-Remaining %d, want 0", i, remaining)
			}
			// One token comes every 12s.
			if ra := headerInt(res.header, "Retry-After"); ra < 1 || ra > 12 {
				t.Errorf("refused request %d: Retry-After %q, want 1 to 12 seconds", i, res.header.Get("Retry-After"))
			}
			if reset < 1 || reset > 12 {
				t.Errorf("refused request %d: RateLimit-Reset %d, want 1 to 12", i, reset)
			}
		default:
			t.Fatalf("request %d: status %d", i, res.code)
		}
	}
	if admitted != 7 {
		t.Errorf("admitted %d of 12 requests, want Requests+Burst = 7", admitted)
	}
	if got := b.hits.Load(); got != 7 {
		t.Errorf("backend saw %d requests, want 7", got)
	}
}

func TestRateLimitKeys(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	minute := snapshot.Duration(time.Minute)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		rlRoute("by-header", "/h", &snapshot.RateLimit{Name: "ns/h", Requests: 2, Period: minute, Key: snapshot.RateLimitKeyHeader, Header: "x-api-key"}),
		rlRoute("by-path", "/p", &snapshot.RateLimit{Name: "ns/p", Requests: 2, Period: minute, Key: snapshot.RateLimitKeyPath}),
		// Two routes sharing one policy with a Route key: a bucket each.
		rlRoute("route-a", "/ra", &snapshot.RateLimit{Name: "ns/r", Requests: 2, Period: minute, Key: snapshot.RateLimitKeyRoute}),
		rlRoute("route-b", "/rb", &snapshot.RateLimit{Name: "ns/r", Requests: 2, Period: minute, Key: snapshot.RateLimitKeyRoute}),
	))
	c := client()
	count := func(path string, n int, hdr ...string) int {
		ok := 0
		for range n {
			switch res := fetch(t, c, rlURL(port, path), hdr...); res.code {
			case http.StatusOK:
				ok++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("%s: status %d", path, res.code)
			}
		}
		return ok
	}
	cases := []struct {
		what string
		path string
		hdr  []string
	}{
		{"header key a", "/h", []string{"X-Api-Key", "a"}},
		{"header key b", "/h", []string{"X-Api-Key", "b"}},
		{"no header key", "/h", nil},
		{"path /p/1", "/p/1", nil},
		{"path /p/2", "/p/2", nil},
		{"route a", "/ra", nil},
		{"route b", "/rb", nil},
	}
	for _, tc := range cases {
		if got := count(tc.path, 4, tc.hdr...); got != 2 {
			t.Errorf("%s: admitted %d of 4, want 2 (a bucket of its own)", tc.what, got)
		}
	}
	if got := count("/h", 1, "X-Api-Key", "a"); got != 0 {
		t.Errorf("header key a after its bucket emptied: admitted %d, want 0", got)
	}
}

func TestRateLimitSurvivesSnapshotSwap(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{epSet("ns/b:80", b)}
	rl := func(requests int32) *snapshot.RateLimit {
		return &snapshot.RateLimit{Name: "ns/rl", Requests: requests, Period: snapshot.Duration(time.Hour)}
	}
	p.mustApply(t, retrySnapshot(port, sets, rlRoute("limited", "/", rl(3))))
	c := client()
	statuses := func(n int) string {
		var out []int
		for range n {
			out = append(out, fetch(t, c, rlURL(port, "/")).code)
		}
		return fmt.Sprint(out)
	}
	if got := statuses(4); got != "[200 200 200 429]" {
		t.Fatalf("before the swap: %s", got)
	}
	// Another snapshot (one more route), the same limit: still empty.
	p.mustApply(t, retrySnapshot(port, sets, rlRoute("limited", "/", rl(3)), rlRoute("other", "/other", nil)))
	if got := statuses(1); got != "[429]" {
		t.Errorf("after a swap keeping the limit: %s, want [429]", got)
	}
	// Changed settings are another limit, with fresh buckets.
	p.mustApply(t, retrySnapshot(port, sets, rlRoute("limited", "/", rl(2))))
	if got := statuses(3); got != "[200 200 429]" {
		t.Errorf("after a swap changing the limit: %s, want [200 200 429]", got)
	}
}

func TestRateLimitLocalBoundsKeys(t *testing.T) {
	l := newLocalLimiter(limiterID{requests: 2, period: time.Minute})
	l.maxPerShard = 8
	bound := l.maxPerShard * rateLimitShards
	for i := range 4 * bound {
		l.take("k"+strconv.Itoa(i), 0)
	}
	if got := l.keys(); got > bound {
		t.Fatalf("%d keys kept, want at most %d", got, bound)
	}

	// One shard: 7 keys take a token each; a minute later they are full
	// again, "hot" is emptied, and the next new key of the shard sweeps
	// the full ones out, not it.
	l = newLocalLimiter(limiterID{requests: 2, period: time.Minute})
	l.maxPerShard = 8
	shard := func(k string) uint64 { return maphash.String(l.seed, k) % rateLimitShards }
	inShard := func(n int) []string {
		var out []string
		for i := 0; len(out) < n; i++ {
			if k := "k" + strconv.Itoa(i); shard(k) == shard("hot") {
				out = append(out, k)
			}
		}
		return out
	}
	keys := inShard(8)
	for _, k := range keys[:7] {
		l.take(k, 0)
	}
	now := int64(time.Minute)
	l.take("hot", now)
	l.take("hot", now)
	l.take(keys[7], now)
	if got := l.keys(); got != 2 {
		t.Errorf("%d keys kept after the sweep, want 2 (hot and the new one)", got)
	}
	if v := l.take("hot", now); v.admitted {
		t.Error("the emptied bucket was evicted, or refilled")
	}
}

func TestRateLimitCompileRejectsBadSettings(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	sets := []*snapshot.EndpointSet{epSet("ns/b:80", b)}
	minute := snapshot.Duration(time.Minute)
	for _, rl := range []snapshot.RateLimit{
		{Name: "zero", Requests: 0, Period: minute},
		{Name: "no-period", Requests: 1},
		{Name: "negative-burst", Requests: 1, Burst: -1, Period: minute},
		{Name: "bad-header", Requests: 1, Period: minute, Key: snapshot.RateLimitKeyHeader, Header: "bad header"},
		{Name: "bad-key", Requests: 1, Period: minute, Key: "Cookie"},
		{Name: "global-sub-ms", Requests: 1, Period: snapshot.Duration(time.Microsecond), Global: true},
	} {
		s := retrySnapshot(1, sets, rlRoute("r", "/", &rl))
		if _, err := compile(s, nil, newMetrics(prometheus.NewRegistry())); err == nil {
			t.Errorf("%s: compiled, want an error", rl.Name)
		}
	}
}

// globalLimit is a global limit of 4+2 per hour, under a name unique to
// the test run (windows are aligned to the epoch, counters outlive a run).
func globalLimit(failOpen bool) *snapshot.RateLimit {
	return &snapshot.RateLimit{
		Name: "test/" + strconv.FormatInt(time.Now().UnixNano(), 36), Requests: 4, Burst: 2,
		Period: snapshot.Duration(time.Hour), Key: snapshot.RateLimitKeyClientIP, Global: true, FailOpen: failOpen,
	}
}

func TestRateLimitGlobalSharedByReplicas(t *testing.T) {
	rd := startRedis(t)
	b := startBackend(t, "b", false, nil)
	sets := []*snapshot.EndpointSet{epSet("ns/b:80", b)}
	type replica struct {
		p    *testPlane
		port int32
	}
	var replicas [2]replica
	for i := range replicas {
		replicas[i] = replica{newRedisPlane(t, rd.addr), testkit.FreePortInt32(t)}
	}
	c := client()
	for attempt := 0; ; attempt++ {
		rl := globalLimit(false)
		hour := time.Hour.Milliseconds()
		window := time.Now().UnixMilli() / hour
		for _, r := range replicas {
			r.p.mustApply(t, retrySnapshot(r.port, sets, rlRoute("limited", "/", rl)))
		}
		before := b.hits.Load()
		admitted := 0
		for i := range 10 {
			r := replicas[i%2]
			res := fetch(t, c, rlURL(r.port, "/"))
			switch res.code {
			case http.StatusOK:
				admitted++
				if got, want := headerInt(res.header, "RateLimit-Remaining"), 6-admitted; got != want {
					t.Errorf("admitted request %d: RateLimit-Remaining %d, want %d", admitted, got, want)
				}
			case http.StatusTooManyRequests:
				if ra := headerInt(res.header, "Retry-After"); ra < 1 || ra > 3600 {
					t.Errorf("refused request: Retry-After %q, want within the hour", res.header.Get("Retry-After"))
				}
			default:
				t.Fatalf("request %d: status %d", i, res.code)
			}
		}
		if time.Now().UnixMilli()/hour != window && attempt == 0 {
			t.Log("the window turned during the run; again")
			continue
		}
		if admitted != 6 {
			t.Errorf("two replicas admitted %d of 10 requests together, want Requests+Burst = 6", admitted)
		}
		if got := b.hits.Load() - before; got != 6 {
			t.Errorf("backend saw %d requests, want 6", got)
		}
		return
	}
}

func TestRateLimitGlobalFailModes(t *testing.T) {
	rd := startRedis(t)
	b := startBackend(t, "b", false, nil)
	sets := []*snapshot.EndpointSet{epSet("ns/b:80", b)}
	s := func(port int32) *snapshot.Snapshot {
		return retrySnapshot(port, sets, rlRoute("open", "/open", globalLimit(true)), rlRoute("closed", "/closed", globalLimit(false)))
	}
	p := newRedisPlane(t, rd.addr)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, s(port))
	c := client()
	for _, path := range []string{"/open", "/closed"} {
		res := fetch(t, c, rlURL(port, path))
		if res.code != http.StatusOK || res.header.Get("RateLimit-Remaining") != "5" {
			t.Fatalf("%s with Redis up: %d, RateLimit-Remaining %q; want 200, 5", path, res.code, res.header.Get("RateLimit-Remaining"))
		}
	}
	rd.stop()
	for range 3 {
		if res := fetch(t, c, rlURL(port, "/open")); res.code != http.StatusOK {
			t.Errorf("fail-open with Redis down: %d, want 200", res.code)
		}
		if res := fetch(t, c, rlURL(port, "/closed")); res.code != http.StatusServiceUnavailable {
			t.Errorf("fail-closed with Redis down: %d, want 503", res.code)
		}
	}
	// Redis back: counting resumes once the backoff is over.
	rd.start(t)
	testkit.Eventually(t, "the fail-closed route counts again", func() bool {
		res := fetch(t, c, rlURL(port, "/closed"))
		return res.code == http.StatusOK && res.header.Get("RateLimit-Limit") == "4"
	})

	// A plane without Redis applies the fail modes always.
	none := newTestPlane(t)
	port2 := testkit.FreePortInt32(t)
	none.mustApply(t, s(port2))
	if res := fetch(t, c, rlURL(port2, "/open")); res.code != http.StatusOK {
		t.Errorf("fail-open without Redis: %d, want 200", res.code)
	}
	if res := fetch(t, c, rlURL(port2, "/closed")); res.code != http.StatusServiceUnavailable {
		t.Errorf("fail-closed without Redis: %d, want 503", res.code)
	}
}
