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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// routerFixture is a compiled router with n routes of one shape, the
// requests to look up, and the keys a plain map lookup would use.
type routerFixture struct {
	st       *state
	reqs     []*http.Request
	keys     []string
	baseline map[string]*route
}

const benchRequests = 1024

func newRouterFixture(b testing.TB, shape string, n int) *routerFixture {
	b.Helper()
	direct := &snapshot.DirectResponse{StatusCode: 200}
	l := snapshot.Listener{Name: "bench", Port: 80, Protocol: snapshot.ProtocolHTTP}
	fx := &routerFixture{baseline: make(map[string]*route, n)}
	var hosts, paths, keys []string
	switch shape {
	case "exact-host":
		for i := 0; i < n; i++ {
			h := "host-" + strconv.Itoa(i) + ".example.com"
			l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{ID: h, Match: prefix("/"), DirectResponse: direct}}})
		}
		for i := 0; i < benchRequests; i++ {
			k := "host-" + strconv.Itoa(i*7919%n) + ".example.com"
			hosts, paths, keys = append(hosts, k), append(paths, "/index.html"), append(keys, k)
		}
	case "wildcard-host":
		for i := 0; i < n; i++ {
			h := "*.tenant-" + strconv.Itoa(i) + ".example.com"
			l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{ID: h, Match: prefix("/"), DirectResponse: direct}}})
		}
		for i := 0; i < benchRequests; i++ {
			suffix := "tenant-" + strconv.Itoa(i*7919%n) + ".example.com"
			hosts, paths, keys = append(hosts, "app.eu."+suffix), append(paths, "/"), append(keys, suffix)
		}
	case "deep-prefix":
		vh := &snapshot.VirtualHost{Hostname: "api.example.com"}
		for i := 0; i < n; i++ {
			p := "/api/v1/tenants/t-" + strconv.Itoa(i) + "/resources"
			vh.Routes = append(vh.Routes, snapshot.Route{ID: p, Match: prefix(p), DirectResponse: direct})
		}
		vh.Routes = append(vh.Routes, snapshot.Route{ID: "fallback", Match: prefix("/"), DirectResponse: direct})
		l.VirtualHosts = []*snapshot.VirtualHost{vh}
		for i := 0; i < benchRequests; i++ {
			p := "/api/v1/tenants/t-" + strconv.Itoa(i*7919%n) + "/resources"
			hosts, paths, keys = append(hosts, "api.example.com"), append(paths, p+"/items/42/details"), append(keys, p)
		}
	default:
		b.Fatalf("unknown shape %q", shape)
	}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{l}}
	snapshot.Normalize(s)
	st, err := compile(s, nil, newMetrics(nil))
	if err != nil {
		b.Fatal(err)
	}
	fx.st = st
	for i := range hosts {
		r := &http.Request{Method: http.MethodGet, Host: hosts[i], URL: &url.URL{Path: paths[i]}, Header: http.Header{"User-Agent": {"bench"}}}
		want := st.router.lookup(80, r)
		if want == nil {
			b.Fatalf("%s: %s%s does not route", shape, hosts[i], paths[i])
		}
		fx.reqs = append(fx.reqs, r)
		fx.baseline[keys[i]] = want
	}
	fx.keys = keys
	return fx
}

var sink *route

// BenchmarkRouter measures one routing decision at 10, 1k and 100k routes
// for three shapes, each beside a plain map[string] lookup of the same key
// in the same run; both must report 0 allocs/op.
func BenchmarkRouter(b *testing.B) {
	for _, shape := range []string{"exact-host", "wildcard-host", "deep-prefix"} {
		for _, n := range []int{10, 1000, 100000} {
			fx := newRouterFixture(b, shape, n)
			name := fmt.Sprintf("%s/routes=%d", shape, n)
			b.Run(name+"/router", func(b *testing.B) {
				b.ReportAllocs()
				var r *route
				for i := 0; b.Loop(); i++ {
					r = fx.st.router.lookup(80, fx.reqs[i%benchRequests])
				}
				sink = r
			})
			b.Run(name+"/map", func(b *testing.B) {
				b.ReportAllocs()
				var r *route
				for i := 0; b.Loop(); i++ {
					r = fx.baseline[fx.keys[i%benchRequests]]
				}
				sink = r
			})
			b.Run(name+"/router-parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var r *route
					for i := 0; pb.Next(); i++ {
						r = fx.st.router.lookup(80, fx.reqs[i%benchRequests])
					}
					_ = r
				})
			})
			b.Run(name+"/map-parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var r *route
					for i := 0; pb.Next(); i++ {
						r = fx.baseline[fx.keys[i%benchRequests]]
					}
					_ = r
				})
			})
		}
	}
}

// TestRouterLookupDoesNotAllocate guards the 0 allocs/op goal in the normal
// test run, including a host that needs lower-casing.
func TestRouterLookupDoesNotAllocate(t *testing.T) {
	for _, shape := range []string{"exact-host", "wildcard-host", "deep-prefix"} {
		fx := newRouterFixture(t, shape, 100)
		up := *fx.reqs[0]
		up.Host = "APP.EU.Tenant-1.Example.COM:8080"
		reqs := append(fx.reqs[:8:8], &up)
		allocs := testing.AllocsPerRun(200, func() {
			for _, r := range reqs {
				sink = fx.st.router.lookup(80, r)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per lookup round, want 0", shape, allocs)
		}
	}
}

// rawOKUpstream answers every request head on a keep-alive connection
// with a fixed 200, so a benchmark measures the proxy, not a backend.
func rawOKUpstream(b testing.TB) int32 {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	const resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					if len(line) <= 2 {
						if _, err := io.WriteString(c, resp); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// readRawResponse reads one response with a Content-Length body off br
// without allocating, and returns its status code.
func readRawResponse(br *bufio.Reader, body []byte) (int, error) {
	status, length := 0, 0
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if first {
			if len(line) < 12 {
				return 0, fmt.Errorf("short status line %q", line)
			}
			status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
			continue
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && (line[0] == 'C' || line[0] == 'c') && bytes.EqualFold(line[:15], []byte("content-length:")) {
			for _, c := range line[15:] {
				if c >= '0' && c <= '9' {
					length = length*10 + int(c-'0')
				}
			}
		}
	}
	if length > len(body) {
		return 0, fmt.Errorf("body of %d bytes", length)
	}
	_, err := io.ReadFull(br, body[:length])
	return status, err
}

// BenchmarkFastPathGet is one bodiless GET on a keep-alive connection
// through the fast path and the lean client to a loopback upstream: the
// whole proxy's cost per request (the upstream's and the client's
// reads are in it too, and stay the same across changes to the proxy).
// "retry" is the same route with a Retry policy that never fires.
func BenchmarkFastPathGet(b *testing.B) {
	for _, variant := range []string{"plain", "retry"} {
		b.Run(variant, func(b *testing.B) {
			up := rawOKUpstream(b)
			dp := NewDataPlane(Options{BindHost: "127.0.0.1"})
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = dp.Shutdown(ctx)
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			port := int32(ln.Addr().(*net.TCPAddr).Port)
			_ = ln.Close()
			rt := snapshot.Route{ID: "r", Backends: []snapshot.Backend{{EndpointSet: "ns/up:80", Weight: 1}}}
			if variant == "retry" {
				rt.Retry = &snapshot.Retry{Attempts: 2, Codes: []int32{503}, ConnectionErrors: true}
			}
			s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
				EndpointSets: []*snapshot.EndpointSet{{Name: "ns/up:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: up}}}},
				Listeners: []snapshot.Listener{{Name: "bench", Port: port, Protocol: snapshot.ProtocolHTTP,
					VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{rt}}}}}}
			if err := dp.Apply(s); err != nil {
				b.Skipf("Apply: %v", err) // a Retry the proxy does not know yet
			}
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			br := bufio.NewReaderSize(c, 4<<10)
			req := []byte("GET /index.html HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: bench\r\n\r\n")
			body := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if code, err := readRawResponse(br, body); err != nil || code != 200 {
					b.Fatalf("status %d, %v", code, err)
				}
			}
		})
	}
}

// BenchmarkCompile is what the proxy pays to compile a snapshot of n
// virtual hosts (one redirect route each) into a routing state, with the
// previous state in force, as after a discovery change. one-changed: the
// snapshot shares every other host's routes with the one in force (as
// discovery's Assembler hands them over), so those hosts are taken over;
// unshared: no list is shared, so every host compiles again (the cost
// before compiles reused anything, and still that of a snapshot built
// afresh); one-set-changed: the hosts are shared and one endpoint set,
// which one host routes to, has new endpoints (an endpoint refresh).
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"one-changed", "unshared", "one-set-changed"} {
			b.Run("hosts="+strconv.Itoa(n)+"/"+mode, func(b *testing.B) {
				inputs := []*snapshot.Snapshot{redirectHosts(n), redirectHosts(n)}
				if mode == "one-set-changed" {
					// One host routes to an endpoint set whose endpoints
					// change; both snapshots share every host (an
					// endpoint refresh).
					hosts := inputs[0].Listeners[0].VirtualHosts
					hosts[n/2].Routes = []snapshot.Route{{ID: "httproute/default/api:0", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}},
						Backends: []snapshot.Backend{{EndpointSet: "default/api:80", Weight: 1}}}}
					for i, s := range inputs {
						s.Listeners = inputs[0].Listeners
						s.EndpointSets = []*snapshot.EndpointSet{{Name: "default/api:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0." + strconv.Itoa(i+1), Port: 8080}}}}
					}
				}
				if mode == "one-changed" {
					// The second shares every host's list but one.
					hosts := slices.Clone(inputs[0].Listeners[0].VirtualHosts)
					h := *hosts[n/2] // hosts are shared: a new one
					h.Routes = slices.Clone(h.Routes)
					hosts[n/2] = &h
					inputs[1].Listeners[0].VirtualHosts = hosts
				}
				benchSwaps(b, inputs)
			})
		}
	}
}

// redirectHosts is a snapshot of one listener with n virtual hosts of one
// redirect route each (the routes of test/e2e's propagation test).
func redirectHosts(n int) *snapshot.Snapshot { return redirectListeners(n, 1) }

// redirectListeners is redirectHosts's n hosts spread over listeners
// listeners (one Gateway's each, as test/e2e's SPREAD=1 makes them).
func redirectListeners(n, listeners int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	for j := 0; j < listeners; j++ {
		s.Listeners = append(s.Listeners, snapshot.Listener{Name: "gateway/default/web" + strconv.Itoa(j) + "/80",
			Port: int32(30000 + j), ExternalPort: 80, Protocol: snapshot.ProtocolHTTP})
	}
	for i := 0; i < n; i++ {
		h := "r" + strconv.Itoa(i) + ".example.com"
		l := &s.Listeners[i%listeners]
		l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{
			ID: "httproute/default/" + h + ":0", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}},
			Redirect: &snapshot.Redirect{Hostname: "moved-" + h, StatusCode: 301},
		}}})
	}
	snapshot.Normalize(s)
	return s
}

// BenchmarkCompileRetained reports what the routing state of n virtual
// hosts (on one listener, or spread over many) keeps on the heap beside
// the snapshot it was compiled from, per host (retained-B/host), its
// routes' metric handles included: the proxy
// holds it for as long as that snapshot is in force. A B/op figure would
// count the compile's garbage too; this is what a GC leaves.
func BenchmarkCompileRetained(b *testing.B) {
	for _, shape := range []struct{ hosts, listeners int }{{1000, 1}, {10000, 1}, {10000, 1000}} {
		n := shape.hosts
		name := "hosts=" + strconv.Itoa(n)
		if shape.listeners > 1 {
			name += ",listeners=" + strconv.Itoa(shape.listeners)
		}
		b.Run(name, func(b *testing.B) {
			s := redirectListeners(n, shape.listeners)
			var retained int64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				st, err := compile(s, nil, newMetrics(nil))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(st)
				retained += int64(after.HeapAlloc) - int64(before.HeapAlloc)
			}
			b.ReportMetric(float64(retained)/float64(b.N)/float64(n), "retained-B/host")
		})
	}
}

// BenchmarkCompileManySets: 10,000 hosts, each routing to an endpoint
// set of its own. one-set-changed: one set's endpoints change (an
// endpoint refresh at 10,000 Services), and every host and every other
// set is the very one in force; one-host-changed: one host's routes
// change (a route change), and the set list is the very one in force.
func BenchmarkCompileManySets(b *testing.B) {
	b.Run("one-set-changed", func(b *testing.B) { benchManySets(b, false) })
	b.Run("one-host-changed", func(b *testing.B) { benchManySets(b, true) })
}

func benchManySets(b *testing.B, hostChanged bool) {
	const n = 10000
	first := redirectHosts(n)
	hosts := first.Listeners[0].VirtualHosts
	for i, vh := range hosts {
		name := "default/svc-" + strconv.Itoa(i) + ":80"
		vh.Routes = []snapshot.Route{{ID: vh.Routes[0].ID, Match: vh.Routes[0].Match, Backends: []snapshot.Backend{{EndpointSet: name, Weight: 1}}}}
		first.EndpointSets = append(first.EndpointSets, &snapshot.EndpointSet{Name: name,
			Endpoints: []snapshot.Endpoint{{Address: "10.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1), Port: 8080}}})
	}
	snapshot.Normalize(first)
	second := *first
	if hostChanged {
		second.Listeners = slices.Clone(first.Listeners)
		l := &second.Listeners[0]
		l.VirtualHosts = slices.Clone(l.VirtualHosts)
		h := *l.VirtualHosts[n/2]
		h.Routes = slices.Clone(h.Routes)
		l.VirtualHosts[n/2] = &h
	} else {
		second.EndpointSets = slices.Clone(first.EndpointSets)
		es := *second.EndpointSets[n/2]
		es.Endpoints = []snapshot.Endpoint{{Address: "10.250.0.1", Port: 8080}}
		second.EndpointSets[n/2] = &es
	}
	benchSwaps(b, []*snapshot.Snapshot{first, &second})
}

// BenchmarkCompileManyListeners: 10,000 hosts over 1,000 listeners, the
// second snapshot sharing every listener's hosts but one host's (a route
// change on one Gateway of 1,000): what a swap costs the proxy when
// nearly every listener is taken over as it is.
func BenchmarkCompileManyListeners(b *testing.B) {
	first := redirectListeners(10000, 1000)
	second := *first
	second.Listeners = slices.Clone(first.Listeners)
	l := &second.Listeners[len(second.Listeners)/2]
	l.VirtualHosts = slices.Clone(l.VirtualHosts)
	h := *l.VirtualHosts[0]
	h.Routes = slices.Clone(h.Routes)
	l.VirtualHosts[0] = &h
	inputs := []*snapshot.Snapshot{first, &second}
	benchSwaps(b, inputs)
}

// benchSwaps compiles inputs[0], then swaps between the two inputs, each
// compiled with the state before it in force, as a proxy applies them,
// with a swap's bookkeeping after it (DataPlane.apply): the health
// checkers (none here) and the pool keys gone.
func benchSwaps(b *testing.B, inputs []*snapshot.Snapshot) {
	m := newMetrics(nil)
	prev, err := compile(inputs[0], nil, m)
	if err != nil {
		b.Fatal(err)
	}
	bs, keys := newBackendState(nil), keyCounts{}
	bs.sync(nil, prev)
	keys.move(nil, prev)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := compileEnv(inputs[(i+1)%2], "v", prev, m, nil)
		if err != nil {
			b.Fatal(err)
		}
		bs.sync(prev, st)
		keys.move(prev, st)
		prev = st
	}
}
