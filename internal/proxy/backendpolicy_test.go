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
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// policyBackends starts n echo backends named b0, b1, ...
func policyBackends(t *testing.T, n int) []*testBackend {
	t.Helper()
	bs := make([]*testBackend, n)
	for i := range bs {
		bs[i] = startBackend(t, fmt.Sprintf("b%d", i), false, nil)
	}
	return bs
}

// policyPlane applies one catch-all route "r" to set on a fresh data
// plane and returns it with the listener's base URL.
func policyPlane(t *testing.T, set *snapshot.EndpointSet, retry *snapshot.Retry) (*testPlane, string) {
	t.Helper()
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{set}, snapshot.Route{ID: "r", Match: prefix("/"), Retry: retry, Backends: to(set.Name)}))
	return p, fmt.Sprintf("http://127.0.0.1:%d", port)
}

// liveSet is the compiled set name of the data plane's current state.
func liveSet(t testing.TB, p *testPlane, name string) *endpointSet {
	t.Helper()
	es := p.state.Load().sets.get(name)
	if es == nil {
		t.Fatalf("no endpoint set %s", name)
	}
	return es
}

// endpointOf is the endpoint of set that is backend b.
func endpointOf(t testing.TB, es *endpointSet, b *testBackend) *endpoint {
	t.Helper()
	for _, ep := range es.eps {
		if ep.addr == b.addr {
			return ep
		}
	}
	t.Fatalf("backend %s is not in %s", b.addr, es.name)
	return nil
}

// TestConsistentHashByHeader: one header value goes to one backend, 50
// times out of 50; different values spread; a request without the header
// is balanced round robin.
func TestConsistentHashByHeader(t *testing.T) {
	bs := policyBackends(t, 3)
	set := epSet("ns/hash:80", bs...)
	set.LoadBalancer, set.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{Header: "x-user"}
	_, base := policyPlane(t, set, nil)
	c := client()
	for _, user := range []string{"alice", "bob"} {
		seen := map[string]int{}
		for range 50 {
			seen[fetch(t, c, base+"/", "X-User", user).header.Get("X-Backend")]++
		}
		if len(seen) != 1 {
			t.Errorf("user %s went to %v; want one backend", user, seen)
		}
	}
	spread := map[string]int{}
	for i := range 40 {
		spread[fetch(t, c, base+"/", "X-User", fmt.Sprintf("user-%d", i)).header.Get("X-Backend")]++
	}
	if len(spread) < 2 {
		t.Errorf("40 users all went to %v; want them spread", spread)
	}
	rr := map[string]int{}
	for range 30 {
		rr[fetch(t, c, base+"/").header.Get("X-Backend")]++
	}
	if len(rr) != 3 {
		t.Errorf("without the header 30 requests went to %v; want round robin over all 3", rr)
	}
}

// TestRendezvousHashing: keys spread over the endpoints, and when one
// endpoint is unavailable only its keys move.
func TestRendezvousHashing(t *testing.T) {
	var eps []*endpoint
	for i := range 4 {
		addr := fmt.Sprintf("10.0.0.%d:80", i+1)
		eps = append(eps, &endpoint{addr: addr, addrHash: hashString(addr)})
	}
	owner := map[int]*endpoint{}
	count := map[*endpoint]int{}
	for k := range 2000 {
		ep := rendezvous(eps, hashString(fmt.Sprint("key-", k)))
		owner[k] = ep
		count[ep]++
	}
	for _, ep := range eps {
		if count[ep] < 300 {
			t.Errorf("endpoint %s owns %d of 2000 keys; want about 500", ep.addr, count[ep])
		}
	}
	rest := []*endpoint{eps[0], eps[1], eps[3]}
	for k := range 2000 {
		got := rendezvous(rest, hashString(fmt.Sprint("key-", k)))
		if owner[k] != eps[2] && got != owner[k] {
			t.Fatalf("key %d moved from %s to %s though its endpoint stayed", k, owner[k].addr, got.addr)
		}
	}
}

// TestCookieAffinity: a request without the cookie gets one (random,
// with the policy's path and TTL, HttpOnly) next to the backend's own,
// and requests that carry it stick to one backend; without a TTL no
// cookie is made and requests without one are balanced round robin.
func TestCookieAffinity(t *testing.T) {
	var bs []*testBackend
	for i := range 3 {
		name := fmt.Sprintf("b%d", i)
		bs = append(bs, startBackend(t, name, false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Backend", name)
			w.Header().Add("Set-Cookie", "app=1")
		}))
	}
	set := epSet("ns/sticky:80", bs...)
	set.LoadBalancer = snapshot.ConsistentHash
	set.Hash = &snapshot.HashPolicy{Cookie: "cx-aff", CookieTTL: dur(time.Hour), CookiePath: "/app"}
	_, base := policyPlane(t, set, nil)
	c := client()
	first := fetch(t, c, base+"/app")
	var aff string
	want := regexp.MustCompile(`^cx-aff=([0-9a-f]{32}); Path=/app; Max-Age=3600; HttpOnly$`)
	for _, v := range first.header.Values("Set-Cookie") {
		if m := want.FindStringSubmatch(v); m != nil {
			aff = m[1]
		}
	}
	if aff == "" || !strings.Contains(strings.Join(first.header.Values("Set-Cookie"), "\n"), "app=1") {
		t.Fatalf("first answer's Set-Cookie %q; want the backend's app=1 and cx-aff=<32 hex>; Path=/app; Max-Age=3600; HttpOnly", first.header.Values("Set-Cookie"))
	}
	for range 20 {
		res := fetch(t, c, base+"/app", "Cookie", "cx-aff="+aff)
		if got := res.header.Get("X-Backend"); got != first.header.Get("X-Backend") {
			t.Fatalf("with the affinity cookie a request went to %s, the first to %s", got, first.header.Get("X-Backend"))
		}
		for _, v := range res.header.Values("Set-Cookie") {
			if strings.HasPrefix(v, "cx-aff=") {
				t.Fatalf("a request carrying the cookie got another one: %q", v)
			}
		}
	}
	spread := map[string]bool{}
	for range 30 {
		spread[fetch(t, c, base+"/app").header.Get("X-Backend")] = true
	}
	if len(spread) < 2 {
		t.Errorf("30 new sessions all went to %v; want them spread", spread)
	}

	set.Hash = &snapshot.HashPolicy{Cookie: "cx-aff"}
	_, base = policyPlane(t, set, nil)
	rr := map[string]int{}
	for range 30 {
		res := fetch(t, c, base+"/")
		if vs := res.header.Values("Set-Cookie"); len(vs) != 1 || vs[0] != "app=1" {
			t.Fatalf("without a TTL the answer's Set-Cookie is %q; want only the backend's", vs)
		}
		rr[res.header.Get("X-Backend")]++
	}
	if len(rr) != 3 {
		t.Errorf("without the cookie 30 requests went to %v; want round robin over all 3", rr)
	}
}

// sourceClient is a client whose connections come from the loopback
// address src.
func sourceClient(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestSourceIPHash: requests from one client address go to one backend;
// clients from many addresses spread.
func TestSourceIPHash(t *testing.T) {
	bs := policyBackends(t, 3)
	set := epSet("ns/src:80", bs...)
	set.LoadBalancer, set.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{SourceIP: true}
	_, base := policyPlane(t, set, nil)
	seen := map[string]int{}
	c := client()
	for range 50 {
		seen[fetch(t, c, base+"/").header.Get("X-Backend")]++
	}
	if len(seen) != 1 {
		t.Errorf("50 requests from 127.0.0.1 went to %v; want one backend", seen)
	}
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", strings.TrimPrefix(base, "http://")); err != nil {
		t.Skipf("cannot connect from 127.0.0.2: %v", err)
	} else {
		_ = c.Close()
	}
	spread := map[string]bool{}
	for i := 2; i < 32; i++ {
		src := fmt.Sprintf("127.0.0.%d", i)
		sc := sourceClient(src)
		a := fetch(t, sc, base+"/").header.Get("X-Backend")
		if b := fetch(t, sc, base+"/").header.Get("X-Backend"); a != b {
			t.Errorf("client %s went to %s, then %s", src, a, b)
		}
		spread[a] = true
		sc.CloseIdleConnections()
	}
	if len(spread) < 2 {
		t.Errorf("30 client addresses all went to %v; want them spread", spread)
	}
}

// TestRandomSpreads: Random sends a share of 90 requests to each of 3
// backends.
func TestRandomSpreads(t *testing.T) {
	bs := policyBackends(t, 3)
	set := epSet("ns/random:80", bs...)
	set.LoadBalancer = snapshot.Random
	_, base := policyPlane(t, set, nil)
	c := client()
	counts := map[string]int{}
	for range 90 {
		counts[fetch(t, c, base+"/").header.Get("X-Backend")]++
	}
	for _, b := range bs {
		if counts[b.name] < 10 {
			t.Errorf("Random sent %v; want each backend a share of the 90", counts)
			break
		}
	}
}

// failingBackend answers 500 to everything but /healthz.
func failingBackend(t *testing.T, name string) *testBackend {
	return startBackend(t, name, false, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Backend", name)
		w.WriteHeader(http.StatusInternalServerError)
	})
}

// TestOutlierEjection: an endpoint that answers 500 is ejected after
// Consecutive5xx of them and gets none of the next 100 requests, comes
// back after BaseEjectionTime, and is ejected again, for longer, when it
// still fails. A retry avoids it before it is ejected.
func TestOutlierEjection(t *testing.T) {
	good := policyBackends(t, 2)
	bad := failingBackend(t, "bad")
	set := epSet("ns/outlier:80", good[0], good[1], bad)
	base := 3 * time.Second // long enough for 100 requests on a busy machine
	set.Outlier = &snapshot.OutlierDetection{Consecutive5xx: 3, BaseEjectionTime: dur(base), MaxEjectionPercent: 50}
	p, url := policyPlane(t, set, nil)
	c := client()
	fails := 0
	for range 30 {
		if fetch(t, c, url+"/").code != http.StatusOK {
			fails++
		}
	}
	if fails != 3 {
		t.Errorf("%d of the first 30 requests failed; want 3 (the bad endpoint's three 500s, then its ejection)", fails)
	}
	ep := endpointOf(t, liveSet(t, p, set.Name), bad)
	if !ep.outlier.ejectedAt(time.Now().UnixNano()) {
		t.Fatal("the endpoint answering 500 is not ejected")
	}
	hits := bad.hits.Load()
	fails = 0
	for range 100 {
		if fetch(t, c, url+"/").code != http.StatusOK {
			fails++
		}
	}
	if fails != 0 || bad.hits.Load() != hits {
		t.Errorf("while ejected: %d of 100 requests failed, the endpoint got %d; want none", fails, bad.hits.Load()-hits)
	}
	testkit.EventuallyWithin(t, 4*base, "the ejected endpoint to get requests again", func() bool {
		_ = fetch(t, c, url+"/")
		return bad.hits.Load() > hits
	})
	testkit.EventuallyWithin(t, waitFor, "the endpoint to be ejected a second time", func() bool {
		_ = fetch(t, c, url+"/")
		ep.outlier.mu.Lock()
		defer ep.outlier.mu.Unlock()
		return ep.outlier.ejections == 2
	})
	if left := time.Until(time.Unix(0, ep.outlier.ejectedUntil.Load())); left <= base {
		t.Errorf("second ejection lasts %v more; want about 2×%v", left, base)
	}

	// With a retry, the request that met a 500 goes to another endpoint.
	set.Name = "ns/outlier-retry:80"
	_, url = policyPlane(t, set, &snapshot.Retry{Attempts: 1, Codes: []int32{500}})
	for i := range 30 {
		if res := fetch(t, c, url+"/"); res.code != http.StatusOK {
			t.Fatalf("request %d with a retry: %d", i, res.code)
		}
	}
}

// TestOutlierMaxEjectionPercent: with two of three endpoints failing and
// MaxEjectionPercent 34, only one is ejected; the other keeps getting its
// share.
func TestOutlierMaxEjectionPercent(t *testing.T) {
	good := startBackend(t, "good", false, nil)
	bad1, bad2 := failingBackend(t, "bad1"), failingBackend(t, "bad2")
	set := epSet("ns/percent:80", good, bad1, bad2)
	set.Outlier = &snapshot.OutlierDetection{Consecutive5xx: 2, BaseEjectionTime: dur(time.Minute), MaxEjectionPercent: 34}
	p, url := policyPlane(t, set, nil)
	c := client()
	es := liveSet(t, p, set.Name)
	for range 40 {
		_ = fetch(t, c, url+"/")
		if n := ejectedCount(es); n > 1 {
			t.Fatalf("%d endpoints ejected; MaxEjectionPercent 34 of 3 allows 1", n)
		}
	}
	if n := ejectedCount(es); n != 1 {
		t.Fatalf("%d endpoints ejected; want 1", n)
	}
	h1, h2 := bad1.hits.Load(), bad2.hits.Load()
	for range 20 {
		_ = fetch(t, c, url+"/")
	}
	if bad1.hits.Load() == h1 && bad2.hits.Load() == h2 {
		t.Error("the failing endpoint that was not ejected gets no requests")
	}
}

func ejectedCount(es *endpointSet) int {
	n := 0
	now := time.Now().UnixNano()
	for _, ep := range es.eps {
		if ep.outlier.ejectedAt(now) {
			n++
		}
	}
	return n
}

// TestEjectionPercentRule: the ejection bound of sets of one, two and
// ten endpoints.
func TestEjectionPercentRule(t *testing.T) {
	cases := []struct {
		endpoints, percent, want int
	}{
		{1, 99, 0},  // a set of one is only emptied at 100%
		{1, 100, 1}, // ... where it is
		{2, 0, 1},   // one may always go from a set of two or more
		{2, 50, 1},
		{2, 100, 2},
		{10, 35, 3},
	}
	for _, tc := range cases {
		in := snapshot.EndpointSet{Name: "ns/rule:80", Outlier: &snapshot.OutlierDetection{Consecutive5xx: 1, BaseEjectionTime: dur(time.Minute), MaxEjectionPercent: int32(tc.percent)}}
		for i := range tc.endpoints {
			in.Endpoints = append(in.Endpoints, snapshot.Endpoint{Address: fmt.Sprintf("10.0.0.%d", i+1), Port: 80})
		}
		es := newEndpointSet(&in, nil, nil)
		now := time.Now()
		for _, ep := range es.eps {
			es.record(ep, outcome5xx, now)
		}
		if got := ejectedCount(es); got != tc.want {
			t.Errorf("%d endpoints at %d%%: %d ejected, want %d", tc.endpoints, tc.percent, got, tc.want)
		}
	}
	// Connect failures have their own threshold; a success resets it.
	in := snapshot.EndpointSet{Name: "ns/conn:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}, {Address: "10.0.0.2", Port: 80}},
		Outlier: &snapshot.OutlierDetection{Consecutive5xx: 10, ConsecutiveConnectFailures: 2, BaseEjectionTime: dur(time.Minute), MaxEjectionPercent: 50}}
	es := newEndpointSet(&in, nil, nil)
	ep, now := es.eps[0], time.Now()
	es.record(ep, outcomeConnect, now)
	es.record(ep, outcomeSuccess, now)
	es.record(ep, outcomeConnect, now)
	if ep.outlier.ejectedAt(now.UnixNano()) {
		t.Fatal("ejected after connect failures that a success separated")
	}
	if _, ok := es.record(ep, outcomeConnect, now); !ok || !ep.outlier.ejectedAt(now.UnixNano()) {
		t.Fatal("not ejected after 2 connect failures in a row")
	}
	// A snapshot swap keeps the ejection with the endpoint.
	if next := newEndpointSet(&in, es, nil); !next.eps[0].outlier.ejectedAt(now.UnixNano()) || next.excluded(next.eps[1], now.UnixNano()) {
		t.Error("a swap lost the ejection, or ejected another endpoint")
	}
}

// healthBackend answers /healthz with 200, or 503 while sick, recording
// the health checks' Host and User-Agent.
type healthBackend struct {
	*testBackend
	sick  atomic.Bool
	mu    sync.Mutex
	hosts map[string]bool
	agent atomic.Value
}

func startHealthBackend(t *testing.T, name string) *healthBackend {
	hb := &healthBackend{hosts: map[string]bool{}}
	hb.testBackend = startBackend(t, name, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			hb.mu.Lock()
			hb.hosts[r.Host] = true
			hb.mu.Unlock()
			hb.agent.Store(r.UserAgent())
			if hb.sick.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		w.Header().Set("X-Backend", name)
	})
	return hb
}

func (hb *healthBackend) unhealthyIn(t testing.TB, p *testPlane, set string) bool {
	hs := endpointOf(t, liveSet(t, p, set), hb.testBackend).health.Load()
	return hs != nil && hs.unhealthy.Load()
}

// TestHealthCheck: an endpoint whose health check starts failing gets no
// more requests, and gets them again once it passes again; while every
// endpoint fails, they all get requests (panic mode).
func TestHealthCheck(t *testing.T) {
	a, b := startHealthBackend(t, "a"), startHealthBackend(t, "b")
	set := epSet("ns/hc:80", a.testBackend, b.testBackend)
	set.HealthCheck = &snapshot.HealthCheck{Path: "/healthz", Hostname: "health.example", Interval: dur(50 * time.Millisecond), Timeout: dur(2 * time.Second), HealthyThreshold: 2, UnhealthyThreshold: 2}
	p, url := policyPlane(t, set, nil)
	c := client()
	spread := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			res := fetch(t, c, url+"/")
			if res.code != http.StatusOK {
				t.Fatalf("request answered %d", res.code)
			}
			got[res.header.Get("X-Backend")]++
		}
		return got
	}
	testkit.Eventually(t, "health checks to reach both backends", func() bool { return a.agent.Load() != nil && b.agent.Load() != nil })
	if got := spread(20); got["a"] != 10 || got["b"] != 10 {
		t.Errorf("both healthy: %v, want 10 each", got)
	}
	b.sick.Store(true)
	testkit.Eventually(t, "b to turn unhealthy", func() bool { return b.unhealthyIn(t, p, set.Name) })
	if got := spread(20); got["a"] != 20 {
		t.Errorf("b unhealthy: %v, want all on a", got)
	}
	a.sick.Store(true)
	testkit.Eventually(t, "a to turn unhealthy", func() bool { return a.unhealthyIn(t, p, set.Name) })
	if got := spread(20); got["a"] == 0 || got["b"] == 0 {
		t.Errorf("both unhealthy (panic mode): %v, want both used", got)
	}
	a.sick.Store(false)
	b.sick.Store(false)
	testkit.Eventually(t, "both to turn healthy", func() bool { return !a.unhealthyIn(t, p, set.Name) && !b.unhealthyIn(t, p, set.Name) })
	if got := spread(20); got["a"] != 10 || got["b"] != 10 {
		t.Errorf("healthy again: %v, want 10 each", got)
	}
	a.mu.Lock()
	hosts := fmt.Sprint(a.hosts)
	a.mu.Unlock()
	if hosts != "map[health.example:true]" || a.agent.Load() != "coxswain-health-check" {
		t.Errorf("health checks came with hosts %s and User-Agent %v; want health.example and coxswain-health-check", hosts, a.agent.Load())
	}
}

// TestHealthCheckersFollowSnapshots: a swap that keeps a set's health
// check and endpoints keeps its checkers; new endpoints get one, changed
// settings replace them, a removed check stops them and clears their
// verdict, and Shutdown stops every one.
func TestHealthCheckersFollowSnapshots(t *testing.T) {
	hbs := []*healthBackend{startHealthBackend(t, "a"), startHealthBackend(t, "b"), startHealthBackend(t, "c")}
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	hc := &snapshot.HealthCheck{Path: "/healthz", Interval: dur(50 * time.Millisecond), Timeout: dur(time.Second), HealthyThreshold: 1, UnhealthyThreshold: 1}
	apply := func(routeID string, check *snapshot.HealthCheck, n int) {
		t.Helper()
		set := epSet("ns/hc:80", hbs[0].testBackend)
		for _, hb := range hbs[1:n] {
			set.Endpoints = append(set.Endpoints, snapshot.Endpoint{Address: "127.0.0.1", Port: hb.port})
		}
		set.HealthCheck = check
		p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{set}, snapshot.Route{ID: routeID, Match: prefix("/"), Backends: to(set.Name)}))
	}
	bs := p.env.backends
	counts := func(running, started int64) func() bool {
		return func() bool { return bs.running.Load() == running && bs.started.Load() == started }
	}
	apply("v1", hc, 2)
	testkit.Eventually(t, "2 checkers", counts(2, 2))
	hbs[0].sick.Store(true)
	testkit.Eventually(t, "a to turn unhealthy", func() bool { return hbs[0].unhealthyIn(t, p, "ns/hc:80") })
	apply("v2", hc, 2) // another route, same set
	apply("v3", hc, 2)
	if !counts(2, 2)() {
		t.Fatalf("after swaps that keep the set: %d running, %d started; want the same 2", bs.running.Load(), bs.started.Load())
	}
	if !hbs[0].unhealthyIn(t, p, "ns/hc:80") {
		t.Error("a swap forgot that an endpoint is unhealthy")
	}
	apply("v3", hc, 3)
	testkit.Eventually(t, "a third checker", counts(3, 3))
	slower := *hc
	slower.Interval = dur(80 * time.Millisecond)
	apply("v3", &slower, 3)
	testkit.Eventually(t, "3 new checkers replacing the old", counts(3, 6))
	if !hbs[0].unhealthyIn(t, p, "ns/hc:80") {
		t.Error("a replaced checker forgot that its endpoint is unhealthy")
	}
	apply("v3", nil, 3)
	testkit.Eventually(t, "no checkers", counts(0, 6))
	if hbs[0].unhealthyIn(t, p, "ns/hc:80") {
		t.Error("an endpoint no longer checked is still unhealthy")
	}
	apply("v3", hc, 3)
	testkit.Eventually(t, "3 checkers again", counts(3, 9))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := bs.running.Load(); n != 0 {
		t.Errorf("%d health checkers still running after Shutdown", n)
	}
}

// TestCircuitBreaker: with MaxRequests 1 and one request held by a slow
// backend, a second one is answered 503 at once, marked overloaded; once
// the first finished requests pass again.
func TestCircuitBreaker(t *testing.T) {
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	b := startBackend(t, "slow", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			holdOnce.Do(func() { close(held) })
			<-release
		}
		w.Header().Set("X-Backend", "slow")
	})
	set := epSet("ns/cb:80", b)
	set.CircuitBreaker = &snapshot.CircuitBreaker{MaxRequests: 1}
	p, url := policyPlane(t, set, &snapshot.Retry{Attempts: 2, Codes: []int32{503}})
	done := make(chan int, 1)
	go func() { done <- fetch(t, client(), url+"/hold").code }()
	<-held
	res := fetch(t, client(), url+"/second")
	if res.code != http.StatusServiceUnavailable || res.header.Get("X-Coxswain-Overloaded") != "true" {
		t.Errorf("second request while one is in flight: %d, X-Coxswain-Overloaded %q; want 503, true", res.code, res.header.Get("X-Coxswain-Overloaded"))
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("held request: %d", code)
	}
	es := liveSet(t, p, set.Name)
	testkit.Eventually(t, "the held request to leave the count", func() bool { return es.load.Load() == 0 })
	if res := fetch(t, client(), url+"/third"); res.code != http.StatusOK {
		t.Errorf("request after the first finished: %d", res.code)
	}
	if got := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", "r", "kind", "overloaded"); got != 1 {
		t.Errorf("overloaded answers counted: %v, want 1", got)
	}
	testkit.Eventually(t, "no request counted in flight", func() bool { return es.load.Load() == 0 })
}

// TestCircuitLimit: the bound the circuit breaker enforces.
func TestCircuitLimit(t *testing.T) {
	cases := []struct {
		cb   *snapshot.CircuitBreaker
		want int64
	}{
		{nil, 0},
		{&snapshot.CircuitBreaker{MaxRequests: 5}, 5},
		{&snapshot.CircuitBreaker{MaxConnections: 1, MaxPendingRequests: 1}, 2},
		{&snapshot.CircuitBreaker{MaxConnections: 10, MaxRequests: 4}, 4},
		{&snapshot.CircuitBreaker{MaxConnections: 2, MaxRequests: 4}, 2},
		{&snapshot.CircuitBreaker{MaxPendingRequests: 3}, 0},
	}
	for _, tc := range cases {
		if got := circuitLimit(tc.cb); got != tc.want {
			t.Errorf("circuitLimit(%+v) = %d, want %d", tc.cb, got, tc.want)
		}
	}
}

// TestIdleTimeoutPerSet: a set's IdleTimeout closes its pooled upstream
// connections, on the lean client (GET) and on http.Transport (POST).
func TestIdleTimeoutPerSet(t *testing.T) {
	port, conns := startConnCountingServer(t, func(http.ResponseWriter, *http.Request) {})
	set := &snapshot.EndpointSet{Name: "ns/idle:80", IdleTimeout: dur(150 * time.Millisecond),
		Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: port}}}
	_, url := policyPlane(t, set, nil)
	c := client()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		before := conns.Load()
		for range 2 {
			req, err := http.NewRequest(method, url+"/", strings.NewReader("x"))
			if err != nil {
				t.Fatal(err)
			}
			if method == http.MethodGet {
				req.Body, req.ContentLength = nil, 0
			}
			if res := do(t, c, req); res.code != http.StatusOK {
				t.Fatalf("%s: %d", method, res.code)
			}
			time.Sleep(600 * time.Millisecond) // well past the idle timeout
		}
		if n := conns.Load() - before; n != 2 {
			t.Errorf("%s: 2 requests 600ms apart opened %d upstream connections; want 2 (IdleTimeout 150ms)", method, n)
		}
	}
}

// TestRetryBudget: a retry the budget does not allow is not sent, and
// the failed answer goes to the client; MinConcurrent allows it.
func TestRetryBudget(t *testing.T) {
	b, sim := startRetrySim(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	set := epSet("ns/sim:80", b)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{set},
		retryRoute("none", "/none", snapshot.Retry{Attempts: 3, Codes: []int32{500}, Budget: &snapshot.RetryBudget{Percent: 20}}, set.Name),
		retryRoute("min", "/min", snapshot.Retry{Attempts: 3, Codes: []int32{500}, Budget: &snapshot.RetryBudget{Percent: 20, MinConcurrent: 1}}, set.Name),
	))
	c := client()
	params := map[string][]string{"responseCode": {"500"}, "succeedAfter": {"1"}}
	req, id := simRequest(t, http.MethodGet, port, "/none", params, nil, false)
	if res, tries := do(t, c, req), sim.tries(id); res.code != 500 || len(tries) != 1 {
		t.Errorf("20%% of 1 request in flight: %d after %d tries; want 500 after 1 (no retry)", res.code, len(tries))
	}
	req, id = simRequest(t, http.MethodGet, port, "/min", params, nil, false)
	if res, tries := do(t, c, req), sim.tries(id); res.code != 200 || len(tries) != 2 {
		t.Errorf("MinConcurrent 1: %d after %d tries; want 200 after 2", res.code, len(tries))
	}
	bud := p.state.Load().router.ports[port].any.routes[1].retry.budget
	testkit.Eventually(t, "the budget to count nothing in flight", func() bool { return bud.active.Load() == 0 && bud.retrying.Load() == 0 })
}

// TestRetryBudgetCounts: the budget admits retries up to Percent of the
// requests in flight, at least MinConcurrent, and frees them at the end.
func TestRetryBudgetCounts(t *testing.T) {
	for _, tc := range []struct {
		retrying, active, percent, minConcurrent int64
		want                                     bool
	}{
		{0, 1, 20, 0, false},
		{0, 5, 20, 0, true},
		{1, 5, 20, 0, false},
		{1, 5, 20, 2, true},
		{2, 5, 20, 2, false},
		{9, 10, 100, 0, true},
		{10, 10, 100, 0, false},
	} {
		if got := budgetAllows(tc.retrying, tc.active, tc.percent, tc.minConcurrent); got != tc.want {
			t.Errorf("budgetAllows(%d retrying of %d, %d%%, min %d) = %v, want %v", tc.retrying, tc.active, tc.percent, tc.minConcurrent, got, tc.want)
		}
	}
	pol := compileRetry(&snapshot.Retry{Attempts: 1, Budget: &snapshot.RetryBudget{Percent: 20}})
	es := &endpointSet{load: new(atomic.Int64)}
	dst := destination{b: &backend{set: es}}
	runs := make([]retryRun, 10)
	admitted := 0
	for i := range runs {
		runs[i].begin(pol, es)
	}
	for i := range runs {
		if runs[i].admit(dst) {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("20%% of 10 requests in flight: %d retrying, want 2", admitted)
	}
	for i := range runs {
		runs[i].end()
	}
	if a, r := pol.budget.active.Load(), pol.budget.retrying.Load(); a != 0 || r != 0 {
		t.Errorf("after the ends the budget counts %d active, %d retrying", a, r)
	}
}

// TestRetryDelay: exponential backoff doubles up to MaxBackoff; jitter
// draws in [0, backoff]; the default schedule is unchanged.
func TestRetryDelay(t *testing.T) {
	ms := time.Millisecond
	exp := compileRetry(&snapshot.Retry{Attempts: 10, Backoff: dur(10 * ms), MaxBackoff: dur(100 * ms)})
	for n, want := range []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms, 100 * ms} {
		if got := exp.delay(n); got != want {
			t.Errorf("exponential delay(%d) = %v, want %v", n, got, want)
		}
	}
	if got := expBackoff(time.Hour, 2*time.Hour, 100); got != 2*time.Hour {
		t.Errorf("expBackoff after 100 doublings = %v, want the cap", got)
	}
	if got := expBackoff(time.Second, 100*ms, 0); got != 100*ms {
		t.Errorf("expBackoff with base over the cap = %v, want the cap", got)
	}
	jit := compileRetry(&snapshot.Retry{Attempts: 10, Backoff: dur(10 * ms), MaxBackoff: dur(100 * ms), Jitter: true})
	low, high := 0, 0
	for range 1000 {
		d := jit.delay(3)
		if d < 0 || d > 80*ms {
			t.Fatalf("jittered delay(3) = %v, want in [0, 80ms]", d)
		}
		if d < 40*ms {
			low++
		} else {
			high++
		}
	}
	if low < 300 || high < 300 {
		t.Errorf("jittered delays: %d below half, %d above; want them uniform", low, high)
	}
	def := compileRetry(&snapshot.Retry{Attempts: 10, Backoff: dur(10 * ms)})
	for n, base := range []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 80 * ms} {
		if got := def.delay(n); got < base || got > base+base/4 {
			t.Errorf("default delay(%d) = %v, want in [%v, %v]", n, got, base, base+base/4)
		}
	}
}

// TestBackendPolicyValidation: malformed backend policies and retry
// extensions fail the snapshot.
func TestBackendPolicyValidation(t *testing.T) {
	okHC := snapshot.HealthCheck{Path: "/h", Interval: dur(time.Second), Timeout: dur(time.Second), HealthyThreshold: 1, UnhealthyThreshold: 1}
	hc := func(f func(*snapshot.HealthCheck)) *snapshot.HealthCheck { c := okHC; f(&c); return &c }
	cases := map[string]func(*snapshot.EndpointSet, *snapshot.Retry){
		"unknown balancer": func(es *snapshot.EndpointSet, _ *snapshot.Retry) { es.LoadBalancer = "Fastest" },
		"hash without key": func(es *snapshot.EndpointSet, _ *snapshot.Retry) { es.LoadBalancer = snapshot.ConsistentHash },
		"hash with two keys": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.LoadBalancer, es.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{Header: "a", SourceIP: true}
		},
		"bad hash header": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.LoadBalancer, es.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{Header: "a b"}
		},
		"bad cookie path": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.LoadBalancer, es.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{Cookie: "c", CookiePath: "/a;b"}
		},
		"negative connect": func(es *snapshot.EndpointSet, _ *snapshot.Retry) { es.ConnectTimeout = -1 },
		"negative breaker": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.CircuitBreaker = &snapshot.CircuitBreaker{MaxRequests: -1}
		},
		"outlier no threshold": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.Outlier = &snapshot.OutlierDetection{BaseEjectionTime: dur(time.Second)}
		},
		"outlier no ejection": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.Outlier = &snapshot.OutlierDetection{Consecutive5xx: 1}
		},
		"outlier percent": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.Outlier = &snapshot.OutlierDetection{Consecutive5xx: 1, BaseEjectionTime: dur(time.Second), MaxEjectionPercent: 101}
		},
		"health zero interval": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.Interval = 0 })
		},
		"health zero timeout": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.Timeout = 0 })
		},
		"health relative path": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.Path = "h" })
		},
		"health zero threshold": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.HealthyThreshold = 0 })
		},
		"health bad status": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.ExpectedStatuses = []int32{99} })
		},
		"health host with space": func(es *snapshot.EndpointSet, _ *snapshot.Retry) {
			es.HealthCheck = hc(func(c *snapshot.HealthCheck) { c.Hostname = "a b" })
		},
		"budget percent":       func(_ *snapshot.EndpointSet, r *snapshot.Retry) { r.Budget = &snapshot.RetryBudget{Percent: 150} },
		"negative max backoff": func(_ *snapshot.EndpointSet, r *snapshot.Retry) { r.MaxBackoff = -1 },
	}
	build := func(f func(*snapshot.EndpointSet, *snapshot.Retry)) *snapshot.Snapshot {
		es := &snapshot.EndpointSet{Name: "ns/v:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}}}
		rt := snapshot.Retry{Attempts: 1, Codes: []int32{503}}
		if f != nil {
			f(es, &rt)
		}
		return retrySnapshot(80, []*snapshot.EndpointSet{es}, retryRoute("r", "/", rt, es.Name))
	}
	if _, err := compile(build(func(es *snapshot.EndpointSet, r *snapshot.Retry) {
		es.LoadBalancer, es.Hash = snapshot.ConsistentHash, &snapshot.HashPolicy{Cookie: "c", CookieTTL: dur(time.Hour)}
		es.HealthCheck, es.ConnectTimeout = &okHC, dur(time.Second)
		es.Outlier = &snapshot.OutlierDetection{Consecutive5xx: 1, BaseEjectionTime: dur(time.Second), MaxEjectionPercent: 10}
		r.MaxBackoff, r.Jitter, r.Budget = dur(time.Second), true, &snapshot.RetryBudget{Percent: 20, MinConcurrent: 3}
	}), nil, newMetrics(nil)); err != nil {
		t.Fatalf("valid policies: %v", err)
	}
	valid, err := compile(build(nil), nil, newMetrics(nil))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range cases {
		if _, err := compile(build(f), nil, newMetrics(nil)); err == nil {
			t.Errorf("%s: compiled; want an error", name)
		}
		// With a valid state in force too: only a listener whose host
		// list is the very one of that state is taken as checked.
		if _, err := compile(build(f), valid, newMetrics(nil)); err == nil {
			t.Errorf("%s: compiled over a valid state; want an error", name)
		}
	}
	// The state in force's own host list is not read again.
	refresh := *valid.source
	refresh.EndpointSets = []*snapshot.EndpointSet{{Name: "ns/v:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.2", Port: 80}}}}
	if _, err := compile(&refresh, valid, newMetrics(nil)); err != nil {
		t.Errorf("an endpoint change over a valid state: %v", err)
	}
}

// TestPoolKeyTimeouts: a set's own timeouts give its endpoints their own
// pools, and their dialer the set's connect timeout.
func TestPoolKeyTimeouts(t *testing.T) {
	plain := newEndpointSet(&snapshot.EndpointSet{Name: "a", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}}}, nil, nil)
	timed := newEndpointSet(&snapshot.EndpointSet{Name: "b", ConnectTimeout: dur(time.Second), IdleTimeout: dur(time.Minute),
		Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}}}, nil, nil)
	p, q := plain.eps[0], timed.eps[0]
	if p.key == q.key || p.dialer != nil || q.dialer == nil || q.dialer.Timeout != time.Second || q.idleTimeout != time.Minute {
		t.Errorf("plain %q (dialer %v), timed %q (dialer %+v, idle %v)", p.key, p.dialer, q.key, q.dialer, q.idleTimeout)
	}
	if tr := newAddrTransports(func(*upstreamTLS) *http.Transport { return &http.Transport{IdleConnTimeout: time.Hour} }).transportFor(q); tr.IdleConnTimeout != time.Minute {
		t.Errorf("transport of a set with IdleTimeout 1m idles %v", tr.IdleConnTimeout)
	}
}

// TestSetCookieOnErrorAnswers: an affinity cookie made for a request
// whose upstream fails still reaches the client with the 502.
func TestSetCookieOnErrorAnswers(t *testing.T) {
	dead := testkit.FreePortInt32(t)
	set := &snapshot.EndpointSet{Name: "ns/dead:80", LoadBalancer: snapshot.ConsistentHash, Hash: &snapshot.HashPolicy{Cookie: "s", CookieTTL: dur(time.Minute)},
		Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: dead}}}
	_, url := policyPlane(t, set, nil)
	res := fetch(t, client(), url+"/")
	if res.code != http.StatusBadGateway || !strings.HasPrefix(res.header.Get("Set-Cookie"), "s=") {
		t.Errorf("refused upstream: %d with Set-Cookie %q; want 502 with the affinity cookie", res.code, res.header.Get("Set-Cookie"))
	}
}

// TestPickSkipsExcluded: every balancer skips ejected endpoints; with all
// ejected they are all used.
func TestPickSkipsExcluded(t *testing.T) {
	for _, lb := range []snapshot.LoadBalancer{snapshot.RoundRobin, snapshot.Random, snapshot.LeastRequest, snapshot.ConsistentHash} {
		in := snapshot.EndpointSet{Name: "ns/x:80", LoadBalancer: lb, Outlier: &snapshot.OutlierDetection{Consecutive5xx: 1, BaseEjectionTime: dur(time.Minute), MaxEjectionPercent: 100}}
		if lb == snapshot.ConsistentHash {
			in.Hash = &snapshot.HashPolicy{SourceIP: true}
		}
		for i := range 3 {
			in.Endpoints = append(in.Endpoints, snapshot.Endpoint{Address: fmt.Sprintf("10.0.0.%d", i+1), Port: 80})
		}
		es := newEndpointSet(&in, nil, nil)
		es.record(es.eps[1], outcome5xx, time.Now())
		for i := range 50 {
			ex := &exchange{clientIP: netip.AddrFrom4([4]byte{192, 168, 0, byte(i)})}
			r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
			if ep := es.pickFor(&pickInput{r: r, ex: ex}); ep == es.eps[1] {
				t.Fatalf("%q picked the ejected endpoint", lb)
			}
		}
		es.record(es.eps[0], outcome5xx, time.Now())
		es.record(es.eps[2], outcome5xx, time.Now())
		seen := map[*endpoint]bool{}
		for i := range 60 {
			ex := &exchange{clientIP: netip.AddrFrom4([4]byte{192, 168, 0, byte(i)})}
			r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
			seen[es.pickFor(&pickInput{r: r, ex: ex})] = true
		}
		if len(seen) != 3 {
			t.Errorf("%q with all ejected used %d endpoints; want all 3 (panic mode)", lb, len(seen))
		}
	}
}
