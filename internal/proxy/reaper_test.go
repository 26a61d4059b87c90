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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open file descriptors: %v", err)
	}
	return len(ents)
}

// waitFDs waits up to 5s for the open descriptors to fall to at most want.
func waitFDs(t testing.TB, what string, want int) {
	t.Helper()
	testkit.EventuallyExplained(t, waitFor, func() string {
		if got := openFDs(t); got > want {
			return fmt.Sprintf("%s: %d open file descriptors, want at most %d", what, got, want)
		}
		return ""
	})
}

// poolTraffic opens n upstream connections in each of the lean client's
// and http.Transport's pools: n concurrent GETs and n concurrent POSTs,
// held at the backends until all 2n have arrived.
func poolTraffic(t *testing.T, url string, n int, arrived *sync.WaitGroup) {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * n}}
	defer c.CloseIdleConnections()
	arrived.Add(2 * n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < 2*n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp *http.Response
			var err error
			if i%2 == 0 {
				resp, err = c.Get(url)
			} else {
				resp, err = c.Post(url, "text/plain", strings.NewReader("body"))
			}
			if err != nil {
				errs <- err
				return
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestIdleUpstreamConnsReleased: the upstream sockets pooled by both
// upstream clients are closed when their endpoints leave the snapshot,
// when the upstream closes them, and after the idle timeout, as the
// process's open file descriptors show.
func TestIdleUpstreamConnsReleased(t *testing.T) {
	const n = 8
	cases := []struct {
		name          string
		idle, reap    time.Duration
		leave, hangUp bool
	}{
		// Only Apply can release these: no reaping within the test.
		{name: "endpoints leave the snapshot", idle: time.Hour, reap: time.Hour, leave: true},
		{name: "endpoints leave and backends hang up", idle: time.Hour, reap: time.Hour, leave: true, hangUp: true},
		// Only the reaper's probe can: the endpoints stay, no idle timeout.
		{name: "backends hang up", idle: time.Hour, reap: 50 * time.Millisecond, hangUp: true},
		{name: "idle timeout", idle: 300 * time.Millisecond, reap: 50 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var arrived sync.WaitGroup
			hold := func(w http.ResponseWriter, r *http.Request) {
				arrived.Done()
				arrived.Wait() // every request holds its own upstream connection
				w.WriteHeader(http.StatusOK)
			}
			a, b := startBackend(t, "a", false, hold), startBackend(t, "b", false, hold)
			p := newPlaneWith(t, func(o *Options) { o.UpstreamIdleTimeout, o.reapInterval = tc.idle, tc.reap })
			port := testkit.FreePortInt32(t)
			mk := func(sets ...*snapshot.EndpointSet) *snapshot.Snapshot {
				s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: sets,
					Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/app:80")}}})}}
				snapshot.Normalize(s)
				return s
			}
			p.mustApply(t, mk(epSet("ns/app:80", a, b)))
			baseline := openFDs(t)
			poolTraffic(t, fmt.Sprintf("http://127.0.0.1:%d/", port), n, &arrived)
			// 2n proxy-side and 2n backend-side sockets stay open per pool.
			if got := openFDs(t); got < baseline+4*n {
				t.Fatalf("%d open file descriptors after the traffic, want at least %d: the pools did not fill", got, baseline+4*n)
			}
			want := baseline
			if tc.leave {
				p.mustApply(t, mk(&snapshot.EndpointSet{Name: "ns/app:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: 1}}}))
			}
			if tc.hangUp {
				_ = a.srv.Close()
				_ = b.srv.Close()
				want -= 2 // their listeners
			}
			waitFDs(t, tc.name, want)
		})
	}
}

// TestLeanClientReap: reap closes exactly the idle connections that are
// expired, closed by the upstream, or to an address that is not live,
// and keeps the healthy ones pooled.
func TestLeanClientReap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	addr := ln.Addr().String()
	c := newH1Client(&net.Dialer{Timeout: time.Second}, 16, time.Minute, 1<<20)
	t.Cleanup(c.closeIdle)
	pooled := func(idleAt time.Time) (*h1Conn, net.Conn) {
		pc, err := c.dial(t.Context(), &endpoint{addr: addr, key: addr})
		if err != nil {
			t.Fatal(err)
		}
		c.put(pc)
		pc.idleAt = idleAt
		return pc, <-accepted
	}
	now := time.Now()
	healthy, _ := pooled(now)
	expired, _ := pooled(now.Add(-2 * time.Minute))
	hungUp, upstreamSide := pooled(now)
	_ = upstreamSide.Close()
	chatty, upstreamSide2 := pooled(now)
	if _, err := upstreamSide2.Write([]byte("HTTP/1.1 408 Request Timeout\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the upstream's close and bytes to arrive", func() bool { return peerClosed(hungUp.nc) && peerClosed(chatty.nc) })
	if peerClosed(healthy.nc) || peerClosed(expired.nc) {
		t.Fatal("an open, quiet connection probes as closed")
	}
	live := map[string]struct{}{addr: {}}
	c.reap(now, live)
	c.mu.Lock()
	got := append([]*h1Conn(nil), c.idle[addr]...)
	c.mu.Unlock()
	if len(got) != 1 || got[0] != healthy {
		t.Fatalf("pool after reap holds %d connections, want only the healthy one", len(got))
	}
	for name, pc := range map[string]*h1Conn{"expired": expired, "hung up": hungUp, "chatty": chatty} {
		if _, err := pc.nc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s connection is still open (read: %v)", name, err)
		}
	}
	c.reap(now, map[string]struct{}{})
	c.mu.Lock()
	left := len(c.idle)
	c.mu.Unlock()
	if left != 0 {
		t.Errorf("pools of an address that is not live survive the reap: %d", left)
	}
}
