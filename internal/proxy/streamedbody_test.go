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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// startDigestUpstream answers each request with the length and digest of
// the body it read ("n=... sha=... err=..."), and counts connections.
func startDigestUpstream(t *testing.T) (port int32, conns *atomic.Int64, seen chan string) {
	t.Helper()
	seen = make(chan string, 16)
	port, conns = startConnCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		got := fmt.Sprintf("%s %s n=%d sha=%s err=%v", r.Method, r.URL.Path, n, hex.EncodeToString(h.Sum(nil))[:16], err)
		select {
		case seen <- got:
		default:
		}
		_, _ = io.WriteString(w, got)
	})
	return port, conns, seen
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:16]
}

// startStreamPlane serves a route to upstream, one that retries and one
// with a body limit of 100,000 bytes.
func startStreamPlane(t *testing.T, opts Options, upstream int32) (*testPlane, int32) {
	t.Helper()
	p, port := newEdgePlane(t, opts)
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/up:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: upstream}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "retry", Match: prefix("/retry"), Backends: to("ns/up:80"), Retry: &snapshot.Retry{Attempts: 2, ConnectionErrors: true}},
			{ID: "limited", Match: prefix("/limited"), Backends: to("ns/up:80"), MaxRequestBodyBytes: 100000},
			{ID: "r", Match: prefix("/"), Backends: to("ns/up:80")},
		}})}}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	return p, port
}

// TestStreamedBodyRelays: bodies past the read-ahead cap stream through
// the fast path, the lean client's in the kernel, over one client
// connection and one upstream connection, with the requests after them
// (pipelined too) read from where each body ends.
func TestStreamedBodyRelays(t *testing.T) {
	upPort, upConns, _ := startDigestUpstream(t)
	p, port := startStreamPlane(t, Options{}, upPort)
	conn := dialPlane(t, port)
	br := bufio.NewReader(conn)
	cases := []struct {
		method, path string
		size         int
		// pipelined sends a GET in the same write, right after the body.
		pipelined bool
		streamed  bool // through the lean client (not a retrying route)
	}{
		{http.MethodPost, "/a", 1 << 20, false, true},
		{http.MethodPut, "/b", leanBodyMaxBytes + 1, true, true},
		{http.MethodPost, "/c", 3000000, true, true},
		{http.MethodPost, "/retry/d", 200000, false, false},
		{http.MethodPatch, "/limited/e", 100000, false, true},
		{http.MethodPost, "/f", leanBodyMaxBytes, false, false}, // read ahead, not streamed
	}
	for _, tc := range cases {
		_ = conn.SetDeadline(time.Now().Add(waitFor))
		body := spliceTestBody(tc.size)
		before := p.lean.streamed.Load()
		msg := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", tc.method, tc.path, tc.size, body)
		if tc.pipelined {
			msg += "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
		}
		go func() { _, _ = io.WriteString(conn, msg) }()
		want := fmt.Sprintf("%s %s n=%d sha=%s err=<nil>", tc.method, tc.path, tc.size, digestOf(body))
		if got := readBody(t, br); got != want {
			t.Fatalf("%s %s: upstream read %q, want %q", tc.method, tc.path, got, want)
		}
		if tc.pipelined {
			if got, want := readBody(t, br), "GET /next n=0 sha="+digestOf(nil)+" err=<nil>"; got != want {
				t.Fatalf("after %s %s: %q, want %q", tc.method, tc.path, got, want)
			}
		}
		spliced := p.lean.streamed.Load() - before
		if tc.streamed && spliced < int64(tc.size)-8<<10 {
			t.Errorf("%s %s: %d of %d body bytes spliced", tc.method, tc.path, spliced, tc.size)
		}
		if !tc.streamed && spliced != 0 {
			t.Errorf("%s %s: %d body bytes spliced, want none", tc.method, tc.path, spliced)
		}
	}
	// One for the lean client, one for http.Transport (the retrying
	// route's): each body left its connection reusable.
	if n := upConns.Load(); n != 2 {
		t.Errorf("upstream accepted %d connections, want 2", n)
	}
	// Over the route's limit: 413 before any of the body is read, which
	// is read away after the answer, and the connection carries on.
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	go func() {
		_, _ = fmt.Fprintf(conn, "POST /limited/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100001\r\n\r\n%sGET /then HTTP/1.1\r\nHost: x\r\n\r\n", spliceTestBody(100001))
	}()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("body over the limit: %d, want 413", resp.StatusCode)
	}
	if got := readBody(t, br); !strings.HasPrefix(got, "GET /then n=0") {
		t.Errorf("after the 413: %q", got)
	}
}

// readBody reads one response and returns its body.
func readBody(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStreamedBodyClientStalls: a streamed body that stalls past the body
// timeout is answered 408 and its connection closed; the upstream sees
// the body cut short.
func TestStreamedBodyClientStalls(t *testing.T) {
	upPort, _, seen := startDigestUpstream(t)
	_, port := startStreamPlane(t, Options{RequestBodyTimeout: 300 * time.Millisecond}, upPort)
	c := dialPlane(t, port)
	start := time.Now()
	_, _ = fmt.Fprintf(c, "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 500000\r\n\r\n%s", spliceTestBody(200000))
	took, got := closedWithin(t, c, start, 5*time.Second)
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Errorf("stalled body answered %q, want 408", got)
	}
	if took < 250*time.Millisecond {
		t.Errorf("answered after %v, before the body timeout", took)
	}
	select {
	case s := <-seen:
		if strings.Contains(s, "err=<nil>") {
			t.Errorf("upstream read the stalled body whole: %q", s)
		}
	case <-time.After(waitFor):
		t.Error("the upstream never saw the request")
	}
}

// TestStreamedBodyClientLeaves: a client that closes within its streamed
// body leaves the upstream a short body, and the proxy serves on.
func TestStreamedBodyClientLeaves(t *testing.T) {
	upPort, _, seen := startDigestUpstream(t)
	_, port := startStreamPlane(t, Options{}, upPort)
	c := dialPlane(t, port)
	_, _ = fmt.Fprintf(c, "POST /gone HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n%s", spliceTestBody(700000))
	time.Sleep(50 * time.Millisecond)
	_ = c.Close()
	select {
	case s := <-seen:
		if !strings.HasPrefix(s, "POST /gone") || strings.Contains(s, "err=<nil>") {
			t.Errorf("upstream saw %q, want the body cut short", s)
		}
	case <-time.After(waitFor):
		t.Error("the upstream never saw the request")
	}
	c2 := dialPlane(t, port)
	_ = c2.SetDeadline(time.Now().Add(waitFor))
	_, _ = io.WriteString(c2, "GET /still HTTP/1.1\r\nHost: a\r\n\r\n")
	if got := readBody(t, bufio.NewReader(c2)); !strings.HasPrefix(got, "GET /still n=0") {
		t.Errorf("next request: %q", got)
	}
}

// TestStreamedBodyEarlyAnswer: an upstream that answers before it reads
// the body, and closes, has its answer relayed; the client, still
// sending, reads it (the rest of its body is read away, not reset) and
// its connection then closes.
func TestStreamedBodyEarlyAnswer(t *testing.T) {
	upPort, _ := startRawUpstream(t, func(conn net.Conn, _ int64) {
		br := bufio.NewReader(conn)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope")
	})
	_, port := startStreamPlane(t, Options{BodyDrainTimeout: 2 * time.Second}, upPort)
	c := dialPlane(t, port)
	_ = c.SetDeadline(time.Now().Add(waitFor))
	sent := make(chan error, 1)
	go func() {
		_, err := fmt.Fprintf(c, "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 8000000\r\n\r\n%s", spliceTestBody(8000000))
		sent <- err
	}()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || string(b) != "nope" {
		t.Errorf("answer %d %q, want the upstream's 413", resp.StatusCode, b)
	}
	if err := <-sent; err != nil {
		t.Errorf("the client's body was refused (%v): the rest should be read away", err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the connection carried on after a body the upstream did not take")
	}
}
