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
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// seenRequest is what a recording upstream received.
type seenRequest struct {
	method, uri string
	header      http.Header
	body        []byte
	te          []string
	cl          int64
}

// recordingUpstream is a net/http server that keeps every request it
// received, body included.
type recordingUpstream struct {
	port  int32
	mu    sync.Mutex
	seen  []seenRequest
	conns atomic.Int64
	// heads counts the requests whose head arrived, bodies whole or not.
	heads atomic.Int64
}

func startRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &recordingUpstream{port: int32(ln.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.conns.Add(1)
			}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u.heads.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusTeapot)
				return
			}
			u.mu.Lock()
			u.seen = append(u.seen, seenRequest{method: r.Method, uri: r.RequestURI, header: r.Header.Clone(), body: body, te: r.TransferEncoding, cl: r.ContentLength})
			u.mu.Unlock()
			w.Header().Set("X-Got", fmt.Sprint(len(body)))
			_, _ = w.Write(body)
		})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return u
}

func (u *recordingUpstream) last(t *testing.T) seenRequest {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.seen[len(u.seen)-1]
}

func (u *recordingUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.seen)
}

func leanBodySnapshot(port, upstream int32, maxBody int64) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/up:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: upstream}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "limited", Match: prefix("/limited"), Backends: to("ns/up:80"), MaxRequestBodyBytes: maxBody},
			{ID: "r", Match: prefix("/"), Backends: to("ns/up:80")},
		}})}}
	snapshot.Normalize(s)
	return s
}

// TestLeanBodyMatchesTransport: a request with a small body of known
// length is sent by the lean client, and the upstream receives what
// http.Transport sends for it (method, target, headers, Content-Length
// framing, body), over HTTP/1.1 and h2c from the client. So does a larger
// one, which the fast path streams (streamedbody.go); one of unknown
// length still goes through http.Transport.
func TestLeanBodyMatchesTransport(t *testing.T) {
	up := startRecordingUpstream(t)
	lean := newTestPlane(t)
	plain := newPlaneWith(t, func(o *Options) { o.DisableLeanClient = true })
	leanPort, plainPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	lean.mustApply(t, leanBodySnapshot(leanPort, up.port, 0))
	plain.mustApply(t, leanBodySnapshot(plainPort, up.port, 0))
	h1 := client()
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Protocols: &protos}}

	type tc struct {
		name, method string
		size         int
		chunked      bool
		c            *http.Client
		wantLean     bool
	}
	cases := []tc{
		{"POST 4 bytes", http.MethodPost, 4, false, h1, true},
		{"PUT 16 KiB", http.MethodPut, 16 << 10, false, h1, true},
		// Around the 4 KiB write buffer: in it with the head, or sent
		// after the head in the same write (bodyWriter).
		{"POST within the write buffer", http.MethodPost, 3500, false, h1, true},
		{"POST just past the write buffer", http.MethodPost, 4000, false, h1, true},
		{"PATCH at the cap", http.MethodPatch, leanBodyMaxBytes, false, h1, true},
		{"DELETE with a body", http.MethodDelete, 10, false, h1, true},
		{"POST over h2c", http.MethodPost, 5000, false, h2c, true},
		// Past the read-ahead cap the fast path streams the body, and
		// the lean client relays it (streamedbody.go).
		{"POST past the cap, streamed", http.MethodPost, leanBodyMaxBytes + 1, false, h1, true},
		{"PUT of 3 MB, streamed", http.MethodPut, 3 << 20, false, h1, true},
		{"POST chunked", http.MethodPost, 100, true, h1, false},
		{"OPTIONS with a body", http.MethodOptions, 10, false, h1, false},
	}
	for _, c := range cases {
		body := bytes.Repeat([]byte("0123456789abcdef"), c.size/16+1)[:c.size]
		var got [2]seenRequest
		for i, port := range []int32{leanPort, plainPort} {
			var rd io.Reader = bytes.NewReader(body)
			if c.chunked {
				rd = io.MultiReader(rd)
			}
			req, err := http.NewRequest(c.method, fmt.Sprintf("http://127.0.0.1:%d/a/b?x=1", port), rd)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Test", c.name)
			req.Header.Set("User-Agent", "lean-test")
			before := lean.lean.bodies.Load()
			res := do(t, c.c, req)
			if res.code != http.StatusOK || res.body != string(body) {
				t.Fatalf("%s (port %d): %d with %d bytes, want 200 echoing %d", c.name, port, res.code, len(res.body), len(body))
			}
			if i == 0 {
				if sent := lean.lean.bodies.Load() - before; (sent == 1) != c.wantLean {
					t.Errorf("%s: the lean client sent %d bodies, want lean=%v", c.name, sent, c.wantLean)
				}
			}
			got[i] = up.last(t)
		}
		l, p := got[0], got[1]
		if l.method != p.method || l.uri != p.uri || !bytes.Equal(l.body, p.body) || l.cl != p.cl || !slices.Equal(l.te, p.te) {
			t.Errorf("%s: lean sent %s %s CL=%d TE=%v %d bytes; http.Transport %s %s CL=%d TE=%v %d bytes",
				c.name, l.method, l.uri, l.cl, l.te, len(l.body), p.method, p.uri, p.cl, p.te, len(p.body))
		}
		for _, h := range []http.Header{l.header, p.header} {
			// Each plane's own: its address and its request IDs.
			h.Del("X-Forwarded-Host")
			h.Del("X-Request-Id")
		}
		if fmt.Sprint(l.header) != fmt.Sprint(p.header) {
			t.Errorf("%s: upstream headers differ:\nlean      %v\nTransport %v", c.name, l.header, p.header)
		}
	}
}

// TestLeanBodyLimitAndBrokenBodies: the route's body limit answers 413,
// and the upstream sees nothing of a request whose client leaves before
// its body ends (the lean client reads the body first).
func TestLeanBodyLimitAndBrokenBodies(t *testing.T) {
	up := startRecordingUpstream(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, leanBodySnapshot(port, up.port, 100))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/limited", port)
	if res := do(t, c, mustRequest(t, http.MethodPost, url, strings.Repeat("x", 100))); res.code != http.StatusOK {
		t.Errorf("100 bytes, limit 100: %d, want 200", res.code)
	}
	if res := do(t, c, mustRequest(t, http.MethodPost, url, strings.Repeat("x", 101))); res.code != http.StatusRequestEntityTooLarge {
		t.Errorf("101 bytes, limit 100: %d, want 413", res.code)
	}
	heads := up.heads.Load()

	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nonly this"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	_ = conn.Close()
	time.Sleep(200 * time.Millisecond)
	if n := up.heads.Load(); n != heads {
		t.Errorf("the upstream received %d requests for a body cut short, want none", n-heads)
	}
	if res := do(t, c, mustRequest(t, http.MethodPost, url, "after")); res.code != http.StatusOK || res.body != "after" {
		t.Errorf("the next request: %d %q, want 200 after", res.code, res.body)
	}
}

// TestLeanBodyStaleConnection: a pooled connection the upstream closed
// while it idled is retried on a new one, with the body, which arrives
// whole.
func TestLeanBodyStaleConnection(t *testing.T) {
	var conns atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	var bodies []string
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				// One keep-alive answer, then the upstream closes the idle
				// connection behind the proxy's back.
				defer func() { _ = conn.Close() }()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				b, _ := io.ReadAll(req.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, leanBodySnapshot(port, int32(ln.Addr().(*net.TCPAddr).Port), 0))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for i, body := range []string{"first body", "second body"} {
		if res := do(t, c, mustRequest(t, http.MethodPost, url, body)); res.code != http.StatusOK || res.body != "ok" {
			t.Fatalf("request %d: %d %q, want 200 ok", i, res.code, res.body)
		}
		time.Sleep(100 * time.Millisecond) // the upstream has closed
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(bodies, []string{"first body", "second body"}) || conns.Load() != 2 {
		t.Errorf("upstream got %q on %d connections, want both bodies on 2", bodies, conns.Load())
	}
}

// TestLeanBodyEarlyAnswer: an upstream that answers before reading the
// body (413) and closes has its answer relayed, every time.
func TestLeanBodyEarlyAnswer(t *testing.T) {
	upstream := rawUpstreamHead(t, func(conn net.Conn, _ *http.Request) {
		_, _ = io.WriteString(conn, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\n\r\nnope")
		_ = conn.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, conn) // a lingering close
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, leanBodySnapshot(port, upstream, 0))
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	for i := range 2 {
		res := do(t, c, mustRequest(t, http.MethodPost, url, strings.Repeat("y", leanBodyMaxBytes)))
		if res.code != http.StatusRequestEntityTooLarge || res.body != "nope" {
			t.Fatalf("request %d: %d %q, want the upstream's 413 nope", i, res.code, res.body)
		}
	}
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}
