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
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// retrySim is the retry simulation of the conformance suite's echo-basic
// backend (retrySimulationHandler): it counts the tries of each request
// by its uuid and fails the first succeedAfter of them, with
// responseCode, or by resetting the connection (mode=reset), or by
// answering only after delay (mode=slow). It records the body length of
// every try.
type retrySim struct {
	mu     sync.Mutex
	bodies map[string][]int64
}

var retryUUID atomic.Int64

func startRetrySim(t testing.TB) (*testBackend, *retrySim) {
	t.Helper()
	sim := &retrySim{bodies: map[string][]int64{}}
	return startBackend(t, "sim", false, sim.serve), sim
}

func (s *retrySim) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("uuid")
	n, _ := io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.bodies[id] = append(s.bodies[id], n)
	try := len(s.bodies[id])
	s.mu.Unlock()
	succeedAfter, _ := strconv.Atoi(q.Get("succeedAfter"))
	if try <= succeedAfter {
		switch {
		case q.Get("responseCode") != "":
			code, _ := strconv.Atoi(q.Get("responseCode"))
			w.WriteHeader(code)
			_, _ = io.WriteString(w, "simulated failure\n")
			return
		case q.Get("mode") == "reset":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			_ = conn.(*net.TCPConn).SetLinger(0)
			_ = conn.Close()
			return
		case q.Get("mode") == "slow":
			d, _ := time.ParseDuration(q.Get("delay"))
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
	}
	if q.Get("close") != "" {
		w.Header().Set("Connection", "close") // no pooled connection for the next request
	}
	w.Header().Set("X-Try", strconv.Itoa(try))
	_, _ = io.WriteString(w, "ok\n")
}

// tries are the body lengths of each try of a request, in order.
func (s *retrySim) tries(id string) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.bodies[id]...)
}

// simRequest is a request to the simulation under path with the given
// parameters and a fresh uuid (returned), with body (nil: none; a body
// with chunked set has no declared length).
func simRequest(t testing.TB, method string, port int32, path string, params url.Values, body []byte, chunked bool) (*http.Request, string) {
	t.Helper()
	id := strconv.FormatInt(retryUUID.Add(1), 10)
	q := url.Values{}
	for k, v := range params {
		q[k] = v
	}
	q.Set("uuid", id)
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
		if chunked {
			rd = io.MultiReader(rd) // hides the length: sent chunked
		}
	}
	req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s?%s", port, path, q.Encode()), rd)
	if err != nil {
		t.Fatal(err)
	}
	return req, id
}

func retryRoute(id, path string, rt snapshot.Retry, set string) snapshot.Route {
	return snapshot.Route{ID: id, Match: prefix(path), Retry: &rt, Backends: to(set)}
}

func retrySnapshot(port int32, sets []*snapshot.EndpointSet, routes ...snapshot.Route) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: sets,
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: routes})}}
	snapshot.Normalize(s)
	return s
}

// accessLogRetries are the status and retries of the access log lines of
// a route.
func accessLogRetries(t testing.TB, p *testPlane, route string) [][2]int {
	t.Helper()
	var out [][2]int
	for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
		var m struct {
			Route   string `json:"route_id"`
			Status  int    `json:"status"`
			Retries *int   `json:"retries"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Route != route {
			continue
		}
		if m.Retries == nil {
			t.Fatalf("access log line without retries: %s", line)
		}
		out = append(out, [2]int{m.Status, *m.Retries})
	}
	return out
}

// TestRetryConformance is the conformance test HTTPRouteRetry (attempts
// N: N retries after the first try; only the listed codes are retried;
// the last try's answer goes to the client), over the fast path and the
// lean client (GET) and over net/http and http.Transport with a replayed
// body (POST).
func TestRetryConformance(t *testing.T) {
	b, sim := startRetrySim(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/v3:8080", b)},
		retryRoute("code-500-attempts-3", "/retry/code-500-attempts-3", snapshot.Retry{Attempts: 3, Codes: []int32{500}}, "ns/v3:8080"),
		retryRoute("code-all-attempts-2", "/retry/code-all-attempts-2", snapshot.Retry{Attempts: 2, Codes: []int32{500, 502, 503, 504}}, "ns/v3:8080"),
	))
	cases := []struct {
		path               string
		code, succeedAfter int
		want, tries        int
	}{
		{"/retry/code-500-attempts-3", 500, 2, 200, 3},
		{"/retry/code-500-attempts-3", 500, 4, 500, 4},
		{"/retry/code-500-attempts-3", 503, 2, 503, 1},
		{"/retry/code-all-attempts-2", 500, 1, 200, 2},
		{"/retry/code-all-attempts-2", 500, 3, 500, 3},
		{"/retry/code-all-attempts-2", 502, 1, 200, 2},
		{"/retry/code-all-attempts-2", 502, 3, 502, 3},
		{"/retry/code-all-attempts-2", 503, 1, 200, 2},
		{"/retry/code-all-attempts-2", 503, 3, 503, 3},
		{"/retry/code-all-attempts-2", 504, 1, 200, 2},
		{"/retry/code-all-attempts-2", 504, 3, 504, 3},
	}
	c := client()
	body := []byte(strings.Repeat("b", 300))
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, tc := range cases {
			var rb []byte
			if method == http.MethodPost {
				rb = body
			}
			req, id := simRequest(t, method, port, tc.path, url.Values{"responseCode": {strconv.Itoa(tc.code)}, "succeedAfter": {strconv.Itoa(tc.succeedAfter)}}, rb, false)
			res := do(t, c, req)
			tries := sim.tries(id)
			if res.code != tc.want || len(tries) != tc.tries {
				t.Errorf("%s %s, %d until try %d: %d after %d tries, want %d after %d", method, tc.path, tc.code, tc.succeedAfter, res.code, len(tries), tc.want, tc.tries)
			}
			for i, n := range tries {
				if n != int64(len(rb)) {
					t.Errorf("%s %s: try %d carried %d body bytes, want %d", method, tc.path, i+1, n, len(rb))
				}
			}
		}
	}
	if p.fastServed(port) == 0 {
		t.Error("the fast path served none of the GETs")
	}
	// 500 until try 2 (2 retries), until try 4 (3), 503 (none), per method.
	if got := metricValue(t, p, "coxswain_proxy_retries_total", "route", "code-500-attempts-3", "reason", "status"); got != 10 {
		t.Errorf("retries counted for code-500-attempts-3: %v, want 10", got)
	}
	want := [][2]int{{200, 2}, {500, 3}, {503, 0}, {200, 2}, {500, 3}, {503, 0}}
	if got := accessLogRetries(t, p, "code-500-attempts-3"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("access log (status, retries) of code-500-attempts-3: %v, want %v", got, want)
	}
}

// TestRetryConnectionErrors: a reset before any answer is retried when
// the policy retries connection errors, and answered 502 after one try
// when it does not; a refused connection to one endpoint is retried on
// the other.
func TestRetryConnectionErrors(t *testing.T) {
	b, sim := startRetrySim(t)
	dead := testkit.FreePortInt32(t) // nothing listens there
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	both := &snapshot.EndpointSet{Name: "ns/both:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: dead}, {Address: "127.0.0.1", Port: b.port}}}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/sim:80", b), both},
		retryRoute("conn", "/conn", snapshot.Retry{Attempts: 3, ConnectionErrors: true}, "ns/sim:80"),
		retryRoute("codes-only", "/codes-only", snapshot.Retry{Attempts: 3, Codes: []int32{500}}, "ns/sim:80"),
		retryRoute("two", "/two", snapshot.Retry{Attempts: 1, ConnectionErrors: true}, "ns/both:80"),
	))
	c := client()
	reset := url.Values{"mode": {"reset"}, "succeedAfter": {"2"}, "close": {"1"}}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var body []byte
		if method == http.MethodPost {
			body = []byte("payload")
		}
		req, id := simRequest(t, method, port, "/conn", reset, body, false)
		if res, tries := do(t, c, req), sim.tries(id); res.code != 200 || len(tries) != 3 {
			t.Errorf("%s reset twice, connection errors retried: %d after %d tries, want 200 after 3", method, res.code, len(tries))
		}
		req, id = simRequest(t, method, port, "/codes-only", reset, body, false)
		if res, tries := do(t, c, req), sim.tries(id); res.code != http.StatusBadGateway || len(tries) != 1 {
			t.Errorf("%s reset, connection errors not retried: %d after %d tries, want 502 after 1", method, res.code, len(tries))
		}
	}
	if got := metricValue(t, p, "coxswain_proxy_retries_total", "route", "conn", "reason", "connect"); got != 4 {
		t.Errorf("connect retries counted: %v, want 4", got)
	}
	for i := range 6 {
		req, _ := simRequest(t, http.MethodGet, port, "/two", nil, nil, false)
		if res := do(t, c, req); res.code != 200 {
			t.Errorf("request %d to a set with a dead endpoint: %d, want 200 from the live one", i, res.code)
		}
	}
	if got := metricValue(t, p, "coxswain_proxy_retries_total", "route", "two", "reason", "connect"); got < 1 {
		t.Errorf("no connect retry counted for the dead endpoint")
	}
}

// TestRetryBodyReplay: a body within RetryBodyBufferBytes is replayed
// whole on every try, declared or chunked; a larger one is streamed and
// its request sent once, the failure going to the client.
func TestRetryBodyReplay(t *testing.T) {
	b, sim := startRetrySim(t)
	p := newPlaneWith(t, func(o *Options) { o.RetryBodyBufferBytes = 1024 })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/sim:80", b)},
		retryRoute("r", "/", snapshot.Retry{Attempts: 3, Codes: []int32{500}}, "ns/sim:80")))
	c := client()
	fail := url.Values{"responseCode": {"500"}, "succeedAfter": {"2"}}
	for _, tc := range []struct {
		size    int
		chunked bool
		code    int
		tries   int
	}{
		{512, false, 200, 3},
		{512, true, 200, 3},
		{1024, true, 200, 3},
		{1025, false, 500, 1},
		{4096, false, 500, 1},
		{4096, true, 500, 1},
	} {
		body := []byte(strings.Repeat("x", tc.size))
		req, id := simRequest(t, http.MethodPost, port, "/", fail, body, tc.chunked)
		res := do(t, c, req)
		tries := sim.tries(id)
		if res.code != tc.code || len(tries) != tc.tries {
			t.Errorf("%d-byte body (chunked %v): %d after %d tries, want %d after %d", tc.size, tc.chunked, res.code, len(tries), tc.code, tc.tries)
		}
		for i, n := range tries {
			if n != int64(tc.size) {
				t.Errorf("%d-byte body (chunked %v): try %d carried %d bytes", tc.size, tc.chunked, i+1, n)
			}
		}
	}
}

// TestRetryTimeouts: a try past the backend timeout is retried when the
// policy says so (504 after one try when it does not); the request
// timeout bounds the whole exchange, backoffs included; the backoff is
// never shorter than the policy's.
func TestRetryTimeouts(t *testing.T) {
	b, sim := startRetrySim(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/sim:80", b)},
		snapshot.Route{ID: "backend", Match: prefix("/backend"), Backends: to("ns/sim:80"),
			Timeouts: &snapshot.Timeouts{Backend: dur(150 * time.Millisecond)}, Retry: &snapshot.Retry{Attempts: 2, BackendTimeouts: true}},
		snapshot.Route{ID: "backend-not-retried", Match: prefix("/not-retried"), Backends: to("ns/sim:80"),
			Timeouts: &snapshot.Timeouts{Backend: dur(150 * time.Millisecond)}, Retry: &snapshot.Retry{Attempts: 2, ConnectionErrors: true}},
		snapshot.Route{ID: "bounded", Match: prefix("/bounded"), Backends: to("ns/sim:80"),
			Timeouts: &snapshot.Timeouts{Request: dur(400 * time.Millisecond)}, Retry: &snapshot.Retry{Attempts: 10, Codes: []int32{500}, Backoff: dur(100 * time.Millisecond)}},
		snapshot.Route{ID: "backoff", Match: prefix("/backoff"), Backends: to("ns/sim:80"),
			Retry: &snapshot.Retry{Attempts: 2, Codes: []int32{503}, Backoff: dur(100 * time.Millisecond)}},
	))
	c := client()
	slow := url.Values{"mode": {"slow"}, "delay": {"2s"}, "succeedAfter": {"1"}}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		var body []byte
		if method == http.MethodPost {
			body = []byte("payload")
		}
		req, id := simRequest(t, method, port, "/backend", slow, body, false)
		if res, tries := do(t, c, req), sim.tries(id); res.code != 200 || len(tries) != 2 {
			t.Errorf("%s slow once, backend timeouts retried: %d after %d tries, want 200 after 2", method, res.code, len(tries))
		}
		req, id = simRequest(t, method, port, "/not-retried", slow, body, false)
		if res, tries := do(t, c, req), sim.tries(id); res.code != http.StatusGatewayTimeout || len(tries) != 1 {
			t.Errorf("%s slow once, backend timeouts not retried: %d after %d tries, want 504 after 1", method, res.code, len(tries))
		}

		start := time.Now()
		req, id = simRequest(t, method, port, "/bounded", url.Values{"responseCode": {"500"}, "succeedAfter": {"100"}}, body, false)
		res := do(t, c, req)
		took, tries := time.Since(start), sim.tries(id)
		if res.code != http.StatusGatewayTimeout || len(tries) < 2 || len(tries) > 4 || took < 400*time.Millisecond || took > 2*time.Second {
			t.Errorf("%s failing with a 400ms request timeout: %d after %d tries in %v, want 504 after 2 to 4 tries in about 400ms", method, res.code, len(tries), took)
		}

		start = time.Now()
		req, id = simRequest(t, method, port, "/backoff", url.Values{"responseCode": {"503"}, "succeedAfter": {"100"}}, body, false)
		res = do(t, c, req)
		took, tries = time.Since(start), sim.tries(id)
		if res.code != http.StatusServiceUnavailable || len(tries) != 3 || took < 300*time.Millisecond {
			t.Errorf("%s always 503 with a 100ms backoff: %d after %d tries in %v, want 503 after 3 tries and at least 100ms+200ms", method, res.code, len(tries), took)
		}
	}
	if got := metricValue(t, p, "coxswain_proxy_retries_total", "route", "backend", "reason", "timeout"); got != 2 {
		t.Errorf("timeout retries counted: %v, want 2", got)
	}
}

// TestRetryPrefersAnotherEndpoint: a retry goes to another endpoint of
// the set, so one endpoint that always fails costs no request an error,
// whichever balancer picks.
func TestRetryPrefersAnotherEndpoint(t *testing.T) {
	bad := startBackend(t, "bad", false, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	good := startBackend(t, "good", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	rr, lr := epSet("ns/rr:80", bad, good), epSet("ns/lr:80", bad, good)
	lr.LoadBalancer = snapshot.LeastRequest
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{rr, lr},
		retryRoute("rr", "/rr", snapshot.Retry{Attempts: 1, Codes: []int32{503}}, "ns/rr:80"),
		retryRoute("lr", "/lr", snapshot.Retry{Attempts: 1, Codes: []int32{503}}, "ns/lr:80")))
	c := client()
	for _, path := range []string{"/rr", "/lr"} {
		for i := range 20 {
			if res := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d%s", port, path)); res.code != 200 || res.echo.Backend != "good" {
				t.Fatalf("%s request %d: %d from %q, want 200 from the good endpoint", path, i, res.code, res.echo.Backend)
			}
		}
	}
	if bad.hits.Load() == 0 {
		t.Error("the failing endpoint was never tried")
	}
}

// TestRetryMirrorsOnce: the mirrors of a retried request get its first
// try only.
func TestRetryMirrorsOnce(t *testing.T) {
	b, sim := startRetrySim(t)
	mir := startBackend(t, "mirror", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	rt := retryRoute("r", "/", snapshot.Retry{Attempts: 3, Codes: []int32{500}}, "ns/sim:80")
	rt.Mirrors = []snapshot.Mirror{{EndpointSet: "ns/mirror:80"}}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/sim:80", b), epSet("ns/mirror:80", mir)}, rt))
	c := client()
	for i, method := range []string{http.MethodGet, http.MethodPost} {
		var body []byte
		if method == http.MethodPost {
			body = []byte("mirrored body")
		}
		req, id := simRequest(t, method, port, "/", url.Values{"responseCode": {"500"}, "succeedAfter": {"2"}}, body, false)
		if res, tries := do(t, c, req), sim.tries(id); res.code != 200 || len(tries) != 3 {
			t.Fatalf("%s: %d after %d tries", method, res.code, len(tries))
		}
		testkit.Eventually(t, "the mirror of the "+method, func() bool { return mir.hits.Load() >= int64(i+1) })
	}
	// A request that is not retried: once its mirror arrived, any stray
	// mirror of the retried tries would have too.
	req, _ := simRequest(t, http.MethodGet, port, "/", nil, nil, false)
	if res := do(t, c, req); res.code != 200 {
		t.Fatalf("plain request: %d", res.code)
	}
	testkit.Eventually(t, "the third mirror", func() bool { return mir.hits.Load() >= 3 })
	if got := mir.hits.Load(); got != 3 {
		t.Errorf("the mirror got %d copies of 3 requests (two of them tried 3 times), want 3", got)
	}
	if e, ok := mir.last(); !ok || e.Method != http.MethodGet {
		t.Errorf("last mirror copy: %+v", e)
	}
}

// TestRepickAvoidsTheFailedEndpoint: even when the balancer keeps
// choosing the endpoint that failed (least request, the other one
// busier), a retry goes to another one; a set of one retries it.
func TestRepickAvoidsTheFailedEndpoint(t *testing.T) {
	s := retrySnapshot(80, []*snapshot.EndpointSet{
		{Name: "ns/two:80", LoadBalancer: snapshot.LeastRequest, Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}, {Address: "10.0.0.2", Port: 80}}},
		{Name: "ns/one:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.3", Port: 80}}},
	},
		retryRoute("two", "/two", snapshot.Retry{Attempts: 1, Codes: []int32{503}}, "ns/two:80"),
		retryRoute("one", "/one", snapshot.Retry{Attempts: 1, Codes: []int32{503}}, "ns/one:80"))
	st := mustCompile(t, s)
	vh := st.router.ports[80].any
	two, one := vh.routes[0], vh.routes[1]
	eps := st.sets.get("ns/two:80").eps
	eps[1].inflight.Store(100) // least request always prefers eps[0]
	prev := destination{rt: two, b: &two.backends[0], ep: eps[0]}
	for range 20 {
		if next, ok := two.repick(prev, nil, nil, endpointSets{}); !ok || next.ep != eps[1] {
			t.Fatalf("repick after %s failed: %v %v, want %s", eps[0].addr, next.ep, ok, eps[1].addr)
		}
	}
	only := st.sets.get("ns/one:80").eps[0]
	if next, ok := one.repick(destination{rt: one, b: &one.backends[0], ep: only}, nil, nil, endpointSets{}); !ok || next.ep != only {
		t.Errorf("repick in a set of one: %v %v, want its endpoint again", next.ep, ok)
	}
}

// TestRetryUsesTheEndpointsOfTheStateInForce: a request whose first try
// hangs on an endpoint that a newer snapshot removed (a backend pod
// replaced by a rollout) is retried on the endpoints of the state in force
// now, not on those of the snapshot it started under.
func TestRetryUsesTheEndpointsOfTheStateInForce(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	old := startBackend(t, "old", false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	fresh := startBackend(t, "fresh", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	route := snapshot.Route{ID: "r", Match: prefix("/"), Backends: to("ns/b:80"),
		Timeouts: &snapshot.Timeouts{Backend: snapshot.Duration(300 * time.Millisecond)},
		Retry:    &snapshot.Retry{Attempts: 2, BackendTimeouts: true, ConnectionErrors: true}}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", old)}, route))
	done := make(chan result, 1)
	go func() { done <- fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first try never reached the old endpoint")
	}
	// The rollout: the old endpoint is gone, the fresh one serves.
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", fresh)}, route))
	r := <-done
	if r.code != http.StatusOK || r.echo.Backend != "fresh" {
		t.Fatalf("retried request: %d from %q, want 200 from the fresh endpoint (%q)", r.code, r.echo.Backend, r.body)
	}
}

// validateBackendPolicies reads the routes of the hosts that differ from
// the snapshot in force, wherever they sit in the list, and takes the
// others (the very route lists) as checked then.
func TestValidateRetriesOfChangedHostsOnly(t *testing.T) {
	host := func(name string, backoff snapshot.Duration) *snapshot.VirtualHost {
		return &snapshot.VirtualHost{Hostname: name, Routes: []snapshot.Route{{ID: "httproute/default/" + name + ":0", Retry: &snapshot.Retry{Attempts: 1, Backoff: backoff}}}}
	}
	listener := func(hosts ...*snapshot.VirtualHost) snapshot.Listener {
		return snapshot.Listener{Name: "web", Port: 30000, Protocol: snapshot.ProtocolHTTP, VirtualHosts: hosts}
	}
	// In force: b's retry is invalid (never the case in a proxy, which
	// refused it; here it shows which hosts are read again).
	inForce := &snapshot.Snapshot{Listeners: []snapshot.Listener{listener(host("a.example", 0), host("b.example", -1), host("d.example", 0))}}
	old := inForce.Listeners[0].VirtualHosts
	kept := func(hosts ...*snapshot.VirtualHost) *snapshot.Snapshot {
		return &snapshot.Snapshot{Listeners: []snapshot.Listener{listener(hosts...)}}
	}

	// b handed over as it was: not read again.
	if err := validateBackendPolicies(kept(old[0], old[1], host("c.example", 0), old[2]), inForce); err != nil {
		t.Errorf("a host handed over was read again: %v", err)
	}
	// A new host with an invalid retry, before, between and after the
	// hosts handed over.
	for _, s := range []*snapshot.Snapshot{
		kept(host("0.example", -1), old[0], old[2]),
		kept(old[0], host("c.example", -1), old[2]),
		kept(old[0], old[2], host("e.example", -1)),
		// b again, as a new list (its hostname is in force).
		kept(old[0], host("b.example", -1), old[2]),
		// a new listener.
		{Listeners: []snapshot.Listener{listener(old[0]), listener(host("z.example", -1))}},
	} {
		if err := validateBackendPolicies(s, inForce); err == nil {
			t.Errorf("%v: an invalid retry in a host not in force was not refused", s.Listeners)
		}
	}
	// Without a snapshot in force, every route is read.
	if err := validateBackendPolicies(kept(old...), nil); err == nil {
		t.Error("without a snapshot in force, b's invalid retry was not refused")
	}
}
