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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The edge's time bounds: one header budget per request, a body read
// timeout, a bounded drain of unread bodies, and upstream cancellation
// when the client leaves. The raw request corpus (test/edge) covers
// framing; these need clocks, so they run in process with short bounds.

func newEdgePlane(t *testing.T, opts Options) (*testPlane, int32) {
	t.Helper()
	opts.BindHost = "127.0.0.1"
	reg := prometheus.NewRegistry()
	opts.Registry = reg
	dp := NewDataPlane(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dp.Shutdown(ctx)
	})
	return &testPlane{DataPlane: dp, reg: reg}, testkit.FreePortInt32(t)
}

func dialPlane(t *testing.T, port int32) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin reads until the server closes the connection and reports
// how long that took from start, failing past limit.
func closedWithin(t *testing.T, c net.Conn, start time.Time, limit time.Duration) (time.Duration, string) {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(limit))
	got, err := io.ReadAll(c)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v (read %q)", limit, got)
		}
	}
	return time.Since(start), string(got)
}

// TestHeaderBudgetOnePerRequest: a trickled head gets one header budget in
// all, also when the fast path hands it to net/http half way (it used to
// get the fast path's 30 s and then net/http's 30 s).
func TestHeaderBudgetOnePerRequest(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	const budget = time.Second
	p, port := newEdgePlane(t, Options{HeaderTimeout: budget})
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}})}})

	for name, parts := range map[string][]string{
		// The fast path waits for the head alone.
		"simple head": {"GET / HTTP/1.1\r\n", "Host: a\r\n", "X-A: 1\r\n", "X-B: 2\r\n", "X-C: 3\r\n", "X-D: 4\r\n", "X-E: 5\r\n", "X-F: 6\r\n"},
		// A bare LF three quarters into the budget hands the rest of the
		// head to net/http, whose own header timeout would start afresh.
		"handed off late": {"GET / HTTP/1.1\r\n", "Host: a\r\n", "X-A: 1\r\n", "X-B: 2\n", "X-C: 3\r\n", "X-D: 4\r\n", "X-E: 5\r\n", "X-F: 6\r\n"},
	} {
		t.Run(name, func(t *testing.T) {
			c := dialPlane(t, port)
			start := time.Now()
			go func() {
				for _, part := range parts {
					if _, err := io.WriteString(c, part); err != nil {
						return
					}
					time.Sleep(budget / 4)
				}
			}()
			took, got := closedWithin(t, c, start, 3*budget)
			if took < budget-50*time.Millisecond {
				t.Errorf("closed after %v, before the budget of %v", took, budget)
			}
			if took > budget+budget/2 {
				t.Errorf("closed after %v: more than the one budget of %v", took, budget)
			}
			if got != "" {
				t.Errorf("a head that timed out was answered %q; net/http closes without an answer", got)
			}
		})
	}
}

// TestBareLFHeadIsAnsweredAtOnce: net/http answers a head with bare LF
// line endings immediately; the fast path used to wait out its header
// timeout before handing it over.
func TestBareLFHeadIsAnsweredAtOnce(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p, port := newEdgePlane(t, Options{HeaderTimeout: 20 * time.Second})
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}})}})
	c := dialPlane(t, port)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second)) // far below the 20 s header timeout
	_, _ = io.WriteString(c, "GET /lf HTTP/1.1\nHost: a\n\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a bare-LF head: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("bare-LF head answered %d", resp.StatusCode)
	}
}

// TestRequestBodyTimeout: a body that stalls is answered 408 and the
// connection closed.
func TestRequestBodyTimeout(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p, port := newEdgePlane(t, Options{RequestBodyTimeout: 500 * time.Millisecond})
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}})}})
	c := dialPlane(t, port)
	start := time.Now()
	_, _ = io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhello")
	took, got := closedWithin(t, c, start, 5*time.Second)
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Errorf("stalled body answered %q, want 408", got)
	}
	if took < 400*time.Millisecond {
		t.Errorf("answered after %v, before the body timeout", took)
	}
}

// TestUnreadBodyDrainIsBounded: after an answer that did not read the body
// (a direct response), a client that keeps the rest of the body back does
// not hold the connection: it is closed once the drain bound passes. (A
// body larger than the fast path reads first streams, and what the
// answer left of it is read away under the same bound, streamedbody.go;
// smaller ones are read before any answer, under the body timeout:
// TestRequestBodyTimeout.)
func TestUnreadBodyDrainIsBounded(t *testing.T) {
	p, port := newEdgePlane(t, Options{BodyDrainTimeout: 500 * time.Millisecond})
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "deny", DirectResponse: &snapshot.DirectResponse{StatusCode: 403}}}})}})
	c := dialPlane(t, port)
	start := time.Now()
	_, _ = io.WriteString(c, "POST /admin HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\nonly-part-of-it")
	took, got := closedWithin(t, c, start, 5*time.Second)
	if !strings.HasPrefix(got, "HTTP/1.1 403 ") {
		t.Errorf("answered %q, want 403 first", got)
	}
	if took < 400*time.Millisecond {
		t.Errorf("closed after %v, before the drain bound", took)
	}
}

// TestClientDisconnectCancelsUpstream: when the client goes away while the
// upstream is still working, the upstream request is canceled, on the
// fast path (a bodiless GET, a small POST, a streamed PUT) and on
// net/http's path (a chunked POST).
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	canceled := make(chan string, 4)
	slow := startBackend(t, "slow", false, func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
			canceled <- r.Method + " " + r.URL.Path
		case <-time.After(20 * time.Second):
			w.WriteHeader(http.StatusOK)
		}
	})
	p, port := newEdgePlane(t, Options{})
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/slow:80", slow)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/slow:80")}}})}})
	for _, req := range []string{
		"GET /fast-path HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /fast-path-body HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
		"POST /net-http HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
		// Streamed (streamedbody.go): watched once the body is sent.
		"PUT /streamed HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 100000),
	} {
		c := dialPlane(t, port)
		_, _ = io.WriteString(c, req)
		// The request must have reached the backend before the client leaves.
		testkit.EventuallyWithin(t, waitFor, "the request to reach the backend", func() bool { return slow.hits.Load() > 0 })
		slow.hits.Store(0)
		_ = c.Close()
		want := strings.SplitN(req, " ", 3)[0] + " " + strings.SplitN(req, " ", 3)[1]
		select {
		case got := <-canceled:
			if got != want {
				t.Errorf("canceled %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the upstream request was not canceled after the client left", want)
		}
	}
}
