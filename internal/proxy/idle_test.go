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
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The fast path parks a keep-alive connection between requests: on Linux
// in an idle lot (an epoll set, no goroutine per connection), elsewhere
// on a goroutine per connection. These tests run both ways on Linux.

var idleWaits = map[string]bool{"lot": false, "goroutine": true}

// idlePlane is a plane with one fast-path listener in front of a backend
// that answers "ok" ("/delay" after 300 ms), and "/slow" only when its
// request is canceled (or after 20 s), reporting the cancellation on
// canceled.
func idlePlane(t *testing.T, goroutines bool, ct *snapshot.ClientTraffic) (*testPlane, int32, string, chan string) {
	t.Helper()
	canceled := make(chan string, 8)
	b := startBackend(t, "b", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/delay" {
			time.Sleep(300 * time.Millisecond)
		}
		if r.URL.Path != "/slow" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		select {
		case <-r.Context().Done():
			canceled <- r.URL.RawQuery
		case <-time.After(20 * time.Second):
			w.WriteHeader(http.StatusOK)
		}
	})
	p := newPlaneWith(t, func(o *Options) { o.goroutineIdleWait = goroutines })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, ppSnapshot(port, epSet("ns/b:80", b), ct, nil))
	return p, port, fmt.Sprintf("127.0.0.1:%d", port), canceled
}

// TestParkedConnectionsServe: keep-alive requests after idle pauses (the
// session parks and wakes), pipelined requests (it does not park), and a
// client that leaves during a request, first or later on its connection:
// the upstream request is canceled.
func TestParkedConnectionsServe(t *testing.T) {
	for name, goroutines := range idleWaits {
		t.Run(name, func(t *testing.T) {
			p, port, addr, canceled := idlePlane(t, goroutines, nil)
			rc := dialRaw(t, addr)
			for i := range 4 {
				resp, body, err := rc.roundTrip(fastHead)
				if err != nil || resp.StatusCode != 200 || body != "ok" || resp.Close {
					t.Fatalf("request %d: %v %v %q", i, err, resp, body)
				}
				time.Sleep(time.Duration(i) * 50 * time.Millisecond)
			}
			if got := p.fastServed(port); got < 4 {
				t.Errorf("the fast path served %d requests, want 4", got)
			}

			pl := dialRaw(t, addr)
			_ = pl.c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(pl.c, strings.Repeat(fastHead+"\r\n", 3)); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				resp, err := http.ReadResponse(pl.br, nil)
				if err != nil {
					t.Fatalf("pipelined response %d: %v", i, err)
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(body) != "ok" {
					t.Fatalf("pipelined response %d: %d %q", i, resp.StatusCode, body)
				}
			}

			for after := range 3 {
				c := dialRaw(t, addr)
				for range after {
					if resp, _, err := c.roundTrip(fastHead); err != nil || resp.StatusCode != 200 {
						t.Fatalf("request before the slow one: %v %v", err, resp)
					}
				}
				_ = c.c.SetDeadline(time.Now().Add(5 * time.Second))
				q := fmt.Sprintf("after=%d", after)
				if _, err := io.WriteString(c.c, "GET /slow?"+q+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // the request reaches the backend
				_ = c.c.Close()
				select {
				case got := <-canceled:
					if got != q {
						t.Errorf("canceled %q, want %q", got, q)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: the upstream request was not canceled after the client left", q)
				}
			}
		})
	}
}

// TestBytesWhileNothingWatches: bytes of the next request that come in two
// pieces while a request is served (the first ends the request's client
// watch, the second finds no watch: in an idle lot an edge-triggered
// event that nothing takes) are read and served, and the next request's
// watch still sees the client leave: its upstream request is canceled.
// A request whose body the fast path reads to its last byte, with the
// next request sent in the same write (bytes no later edge announces),
// gets both answered at once.
func TestBytesWhileNothingWatches(t *testing.T) {
	for name, goroutines := range idleWaits {
		t.Run(name, func(t *testing.T) {
			_, _, addr, canceled := idlePlane(t, goroutines, nil)
			rc := dialRaw(t, addr)
			_ = rc.c.SetDeadline(time.Now().Add(10 * time.Second))
			write := func(s string) {
				t.Helper()
				if _, err := io.WriteString(rc.c, s); err != nil {
					t.Fatal(err)
				}
			}
			write("GET /delay HTTP/1.1\r\nHost: a\r\n\r\n")
			time.Sleep(50 * time.Millisecond) // served now: its watch is armed
			write("G")
			time.Sleep(50 * time.Millisecond) // the watch ended with the "G"
			write("ET /slow?q=second HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, err := http.ReadResponse(rc.br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("first response: %d %q", resp.StatusCode, body)
			}
			time.Sleep(100 * time.Millisecond) // the second request reaches the backend
			_ = rc.c.Close()
			select {
			case got := <-canceled:
				if got != "q=second" {
					t.Errorf("canceled %q, want q=second", got)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the second request's upstream request was not canceled after the client left")
			}

			pc := dialRaw(t, addr)
			_ = pc.c.SetDeadline(time.Now().Add(5 * time.Second))
			big := strings.Repeat("x", 16<<10)
			if _, err := io.WriteString(pc.c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 16384\r\n\r\n"+big+fastHead+"\r\n"); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				resp, err := http.ReadResponse(pc.br, nil)
				if err != nil {
					t.Fatalf("response %d after a 16 KiB body and a pipelined request: %v", i, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(b) != "ok" {
					t.Fatalf("response %d: %d %q", i, resp.StatusCode, b)
				}
			}
		})
	}
}

// TestParkedConnectionsEnd: the idle timeout closes a parked keep-alive
// connection and a new one that never sends a request; a drain closes
// parked connections at once, and Shutdown does not wait for them.
func TestParkedConnectionsEnd(t *testing.T) {
	for name, goroutines := range idleWaits {
		t.Run(name, func(t *testing.T) {
			const idle = 300 * time.Millisecond
			_, _, addr, _ := idlePlane(t, goroutines, &snapshot.ClientTraffic{IdleTimeout: snapshot.Duration(idle)})
			rc := dialRaw(t, addr)
			if resp, _, err := rc.roundTrip(fastHead); err != nil || resp.StatusCode != 200 {
				t.Fatalf("request: %v %v", err, resp)
			}
			start := time.Now()
			if took, _ := closedWithin(t, rc.c, start, 5*time.Second); took < idle/2 {
				t.Errorf("a parked connection closed after %v, before its idle timeout %v", took, idle)
			}
			fresh := dialRaw(t, addr)
			if took, got := closedWithin(t, fresh.c, time.Now(), 5*time.Second); took < idle/2 || got != "" {
				t.Errorf("a silent new connection closed after %v (answer %q), want its idle timeout %v and nothing", took, got, idle)
			}

			p, _, addr, _ := idlePlane(t, goroutines, nil) // the default idle timeout: 120 s
			parked := []*rawConn{dialRaw(t, addr), dialRaw(t, addr)}
			for _, c := range parked {
				if resp, _, err := c.roundTrip(fastHead); err != nil || resp.StatusCode != 200 {
					t.Fatalf("request: %v %v", err, resp)
				}
			}
			silent := dialRaw(t, addr)
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start = time.Now()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Shutdown took %v with only parked connections", took)
			}
			for i, c := range append(parked, silent) {
				if _, got := closedWithin(t, c.c, time.Now(), 2*time.Second); got != "" {
					t.Errorf("connection %d got %q at the drain", i, got)
				}
			}
		})
	}
}

// TestParkedConnectionsHoldNoGoroutine: in an idle lot (Linux), a parked
// keep-alive connection holds no goroutine; waiting on goroutines, each
// holds one.
func TestParkedConnectionsHoldNoGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("idle lots are Linux only")
	}
	const n = 200
	for name, goroutines := range idleWaits {
		t.Run(name, func(t *testing.T) {
			_, _, addr, _ := idlePlane(t, goroutines, nil)
			if resp, _, err := dialRaw(t, addr).roundTrip(fastHead); err != nil || resp.StatusCode != 200 {
				t.Fatalf("warm-up request: %v %v", err, resp)
			}
			time.Sleep(100 * time.Millisecond)
			before := runtime.NumGoroutine()
			for range n {
				if resp, _, err := dialRaw(t, addr).roundTrip(fastHead); err != nil || resp.StatusCode != 200 {
					t.Fatalf("request: %v %v", err, resp)
				}
			}
			time.Sleep(200 * time.Millisecond)
			grew := runtime.NumGoroutine() - before
			t.Logf("%d parked connections: %d more goroutines", n, grew)
			if !goroutines && grew > n/10 {
				t.Errorf("%d parked connections hold %d goroutines, want (almost) none", n, grew)
			}
			if goroutines && (grew < n*9/10 || grew > n+n/10) {
				t.Errorf("%d connections parked on goroutines hold %d goroutines, want one each", n, grew)
			}
		})
	}
}
