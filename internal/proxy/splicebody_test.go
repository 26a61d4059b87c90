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
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// spliceTestBody is n bytes that tell a shifted or repeated stretch from
// the right one.
func spliceTestBody(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// startBodyUpstream serves GET /n/N with N bytes of spliceTestBody,
// framed by Content-Length, or chunked under /chunked/N; it counts the
// connections it accepted.
func startBodyUpstream(t *testing.T) (port int32, conns *atomic.Int64) {
	t.Helper()
	return startConnCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		var chunked bool
		if _, err := fmt.Sscanf(r.URL.Path, "/n/%d", &n); err != nil {
			if _, err := fmt.Sscanf(r.URL.Path, "/chunked/%d", &n); err != nil {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			chunked = true
		}
		body := spliceTestBody(n)
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		_, _ = w.Write(body)
	})
}

// startSplicePlane is a data plane whose one HTTP port proxies every
// path to the upstream on upPort.
func startSplicePlane(t *testing.T, upPort int32) (*testPlane, int32) {
	t.Helper()
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, leanBodySnapshot(port, upPort, 0))
	return p, port
}

// startRawUpstream accepts connections on loopback and hands each to
// serve, with its number (from 1); it counts them.
func startRawUpstream(t *testing.T, serve func(conn net.Conn, n int64)) (port int32, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer func() { _ = conn.Close() }()
				serve(conn, n)
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port), accepted
}

// TestSpliceBodyRelaysLargeBodies: a Content-Length response body of at
// least spliceMin bytes from a plain upstream to a plain client goes
// through the kernel, arrives whole, and leaves both connections
// reusable; smaller, chunked and HEAD answers take the copy as before.
func TestSpliceBodyRelaysLargeBodies(t *testing.T) {
	upPort, upConns := startBodyUpstream(t)
	p, port := startSplicePlane(t, upPort)
	// One client connection carries every request: each answer must
	// leave it ready for the next.
	conn := dialPlane(t, port)
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	br := bufio.NewReader(conn)
	cases := []struct {
		method, path string
		size         int
		spliced      bool
	}{
		{http.MethodGet, "/n/1048576", 1 << 20, true},
		{http.MethodGet, "/n/65536", spliceMin, true},
		{http.MethodGet, "/n/65535", spliceMin - 1, false},
		{http.MethodGet, "/n/3000000", 3000000, true},
		{http.MethodGet, "/chunked/300000", 300000, false},
		{http.MethodHead, "/n/1048576", 0, false},
		{http.MethodGet, "/n/1000", 1000, false},
		{http.MethodGet, "/n/1048577", 1<<20 + 1, true},
	}
	for _, tc := range cases {
		_ = conn.SetDeadline(time.Now().Add(waitFor))
		before := p.lean.spliced.Load()
		if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\n\r\n", tc.method, tc.path); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: tc.method})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading the body: %v", tc.method, tc.path, err)
		}
		want := spliceTestBody(tc.size)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) || resp.Close {
			t.Fatalf("%s %s: %d with %d bytes (equal: %v, close: %v), want 200 with the upstream's %d, kept alive",
				tc.method, tc.path, resp.StatusCode, len(got), bytes.Equal(got, want), resp.Close, tc.size)
		}
		if cl := resp.Header.Get("Content-Length"); tc.method == http.MethodHead && cl != "1048576" {
			t.Errorf("HEAD %s: Content-Length %q, want 1048576", tc.path, cl)
		}
		// The proxy counts what it spliced once the call returns, which
		// may be after the client read the last byte. The upstream's
		// reader may hold the first few KiB: those are copied.
		spliced := p.lean.spliced.Load() - before
		for end := time.Now().Add(waitFor); tc.spliced && spliced < int64(tc.size-8<<10) && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
			spliced = p.lean.spliced.Load() - before
		}
		if tc.spliced && (spliced == 0 || spliced > int64(tc.size) || spliced < int64(tc.size-8<<10)) {
			t.Errorf("%s %s: %d bytes spliced, want about all of %d", tc.method, tc.path, spliced, tc.size)
		}
		if !tc.spliced && spliced != 0 {
			t.Errorf("%s %s: %d bytes spliced, want none", tc.method, tc.path, spliced)
		}
	}
	if n := upConns.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections, want 1 (pooled after every spliced body)", n)
	}
}

// TestSpliceBodyBytesAfterTheBody: an upstream that sends more than the
// body it announced does not get its connection pooled, so the extra
// bytes are never read as the answer to the next request.
func TestSpliceBodyBytesAfterTheBody(t *testing.T) {
	const size = 100 << 10
	upPort, accepted := startRawUpstream(t, func(conn net.Conn, _ int64) {
		br := bufio.NewReader(conn)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/big" {
				// The body and a forged answer in one write.
				out := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
				out = append(out, spliceTestBody(size)...)
				out = append(out, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"...)
				_, _ = conn.Write(out)
				continue
			}
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	p, port := startSplicePlane(t, upPort)
	c := client()
	res := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/big", port))
	if res.code != http.StatusOK || res.body != string(spliceTestBody(size)) {
		t.Fatalf("/big: %d with %d bytes, want 200 with the upstream's %d", res.code, len(res.body), size)
	}
	res = fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/next", port))
	if res.code != http.StatusOK || res.body != "ok" {
		t.Errorf("next request: %d %q, want 200 ok (not the bytes after the last body)", res.code, res.body)
	}
	// The proxy counts once the splice returned, which may be after the
	// client had the last byte.
	for end := time.Now().Add(waitFor); p.lean.spliced.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if p.lean.spliced.Load() == 0 {
		t.Errorf("nothing was spliced: the test did not take the kernel's path")
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("upstream accepted %d connections, want 2 (the one with bytes after the body not pooled)", n)
	}
}

// TestSpliceBodyCutShort: an upstream that closes within the body it
// announced leaves the client with fewer bytes and a closed connection,
// not a response that looks whole, and the next request is served over a
// new upstream connection.
func TestSpliceBodyCutShort(t *testing.T) {
	const announced, sent = 1 << 20, 300 << 10
	upPort, accepted := startRawUpstream(t, func(conn net.Conn, n int64) {
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		if n == 1 {
			_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", announced)
			_, _ = conn.Write(spliceTestBody(announced)[:sent])
			return
		}
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p, port := startSplicePlane(t, upPort)
	conn := dialPlane(t, port)
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	if _, err := io.WriteString(conn, "GET /cut HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err == nil || len(got) >= announced {
		t.Fatalf("read %d bytes (error %v), want fewer than %d and an error", len(got), err, announced)
	}
	if !bytes.Equal(got, spliceTestBody(announced)[:len(got)]) {
		t.Errorf("the %d bytes read are not the upstream's", len(got))
	}
	if p.lean.spliced.Load() == 0 {
		t.Errorf("nothing was spliced: the test did not take the kernel's path")
	}
	res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/next", port))
	if res.code != http.StatusOK || res.body != "ok" {
		t.Errorf("next request: %d %q, want 200 ok", res.code, res.body)
	}
	if n := accepted.Load(); n != 2 {
		t.Errorf("upstream accepted %d connections, want 2 (the cut one not pooled)", n)
	}
}

// TestSpliceBodyClientLeaves: a client that closes its connection in the
// middle of a spliced body ends that relay, and the proxy serves the next
// client as before, over another upstream connection.
func TestSpliceBodyClientLeaves(t *testing.T) {
	upPort, upConns := startBodyUpstream(t)
	p, port := startSplicePlane(t, upPort)
	const size = 8 << 20
	conn := dialPlane(t, port)
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	if _, err := fmt.Fprintf(conn, "GET /n/%d HTTP/1.1\r\nHost: x\r\n\r\n", size); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 256<<10)); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/n/70000", port))
	if res.code != http.StatusOK || res.body != string(spliceTestBody(70000)) {
		t.Fatalf("next request: %d with %d bytes, want 200 with 70000", res.code, len(res.body))
	}
	if n := upConns.Load(); n != 2 {
		t.Errorf("the upstream accepted %d connections, want 2 (the abandoned one never reused)", n)
	}
	// More than the second answer's 70,000 bytes: the abandoned relay
	// was spliced too (what the client read at least, less the few KiB
	// the upstream's reader held).
	const least = 256<<10 - 8<<10
	for end := time.Now().Add(waitFor); p.lean.spliced.Load() < least && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if n := p.lean.spliced.Load(); n < least {
		t.Errorf("%d bytes spliced, want at least %d: the abandoned relay did not take the kernel's path", n, least)
	}
}
