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
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// dialClientTLS opens a TLS connection to the plane's port with SNI sni and the
// ALPN protocols protos.
func dialClientTLS(t *testing.T, port int32, sni string, protos ...string) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitFor))
	return c
}

// readStatuses reads n responses to GETs from br (readEcho) and returns
// their status codes.
func readStatuses(t *testing.T, br *bufio.Reader, n int) []int {
	t.Helper()
	codes := make([]int, 0, n)
	for range n {
		code, _ := readEcho(t, br, http.MethodGet)
		codes = append(codes, code)
	}
	return codes
}

// TestTLSFastPath: on an HTTPS port the fast path answers HTTP/1.1
// requests over TLS, with what depends on the connection's TLS state (the
// 421 of a Host that another listener's SNI names) as net/http has it; a
// request it hands off keeps that state in net/http; ALPN h2 goes to
// net/http's HTTP/2 server; plain HTTP on the port gets net/http's 400.
func TestTLSFastPath(t *testing.T) {
	v1, v2, v3 := startBackend(t, "v1", false, nil), startBackend(t, "v2", false, nil), startBackend(t, "v3", false, nil)
	cert := testCert(t, "example.org", "second-example.org", "*.wildcard.org")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, misdirectedSnapshot(port, cert, v1, v2, v3))
	const path = "/detect-misdirected-requests"

	t.Run("http/1.1 served by the fast path", func(t *testing.T) {
		before := p.fastServed(port)
		c := dialClientTLS(t, port, "example.org", "http/1.1")
		// Pipelined in one write: the second head waits decrypted in the
		// TLS connection, where no readiness event announces it.
		_, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: example.org\r\n\r\n"+
			"GET "+path+" HTTP/1.1\r\nHost: example.org\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if got := readStatuses(t, br, 2); got[0] != 200 || got[1] != 200 {
			t.Fatalf("pipelined GETs: %v, want 200 200", got)
		}
		e, _ := v1.last()
		if e.Header.Get("X-Forwarded-Proto") != "https" {
			t.Errorf("X-Forwarded-Proto %q, want https", e.Header.Get("X-Forwarded-Proto"))
		}
		// A Host that another listener's SNI names: 421 by the TLS state.
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: second-example.org\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if got := readStatuses(t, br, 1); got[0] != http.StatusMisdirectedRequest {
			t.Errorf("Host of another listener: %d, want 421", got[0])
		}
		if n := p.fastServed(port) - before; n != 3 {
			t.Errorf("fast path served %d requests, want 3", n)
		}
	})

	t.Run("handed off with its TLS state", func(t *testing.T) {
		before := p.fastServed(port)
		c := dialClientTLS(t, port, "example.org", "http/1.1")
		br := bufio.NewReader(c)
		// A body past the read-ahead cap streams on the fast path, over
		// TLS too (copied, not spliced: streamedbody.go).
		big := strings.Repeat("x", 70000)
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: example.org\r\n\r\n"+
			"POST "+path+" HTTP/1.1\r\nHost: example.org\r\nContent-Length: 70000\r\n\r\n"+big); err != nil {
			t.Fatal(err)
		}
		if got := readStatuses(t, br, 2); got[0] != 200 || got[1] != 200 {
			t.Errorf("GET, large POST: %v, want [200 200]", got)
		}
		if e, _ := v1.last(); e.Method != http.MethodPost || e.BodyLen != 70000 {
			t.Errorf("upstream saw %s with %d body bytes, want POST with 70000", e.Method, e.BodyLen)
		}
		// A target with an escape is net/http's: the connection is handed
		// off with its unread bytes, and net/http still knows the SNI
		// (the 421 after it).
		if _, err := io.WriteString(c, "GET "+path+"%2e HTTP/1.1\r\nHost: example.org\r\n\r\n"+
			"GET "+path+" HTTP/1.1\r\nHost: second-example.org\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if got := readStatuses(t, br, 2); got[1] != http.StatusMisdirectedRequest {
			t.Errorf("escaped GET, misdirected GET: %v, want [_ 421]", got)
		}
		if n := p.fastServed(port) - before; n != 2 {
			t.Errorf("fast path served %d requests, want 2 (the rest is net/http's)", n)
		}
	})

	t.Run("h2 goes to net/http", func(t *testing.T) {
		before := p.fastServed(port)
		for _, tc := range []struct {
			host string
			code int
		}{{"example.org", 200}, {"second-example.org", 421}} {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
			req.Host = tc.host
			// The client speaks HTTP/2 only.
			if res := do(t, httpsClient("example.org", nil, true), req); res.code != tc.code {
				t.Errorf("h2, Host %s: %d, want %d", tc.host, res.code, tc.code)
			}
		}
		if n := p.fastServed(port) - before; n != 0 {
			t.Errorf("fast path served %d HTTP/2 requests", n)
		}
	})

	t.Run("plain HTTP on the TLS port", func(t *testing.T) {
		c := dialPlane(t, port)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(c)
		if !strings.HasPrefix(string(got), "HTTP/1.0 400 Bad Request\r\n") || !strings.Contains(string(got), "HTTP request to an HTTPS server") {
			t.Errorf("plain HTTP on a TLS port got %q", got)
		}
	})
}

// TestTLSFastPathHandshakeBound: a client that opens a TCP connection to
// an HTTPS port and never finishes the handshake is closed after the
// request header timeout, as net/http bounds a handshake.
func TestTLSFastPathHandshakeBound(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	cert := testCert(t, "example.org")
	p := newPlaneWith(t, func(o *Options) { o.HeaderTimeout = 300 * time.Millisecond })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, misdirectedSnapshot(port, cert, a, a, a))
	c := dialPlane(t, port)
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("read: %v (the proxy did not close the connection)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("silent handshake closed after %v, want about the 300ms header timeout", d)
	}
}

// TestTLSFastPathDrain: when its listener goes, an idle HTTP/1.1
// connection over TLS and one that has not begun its handshake are closed
// at once, not at the end of the drain timeout.
func TestTLSFastPathDrain(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	cert := testCert(t, "example.org")
	p := newPlaneWith(t, func(o *Options) { o.DrainTimeout = 20 * time.Second })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, misdirectedSnapshot(port, cert, a, a, a))
	idle := dialClientTLS(t, port, "example.org", "http/1.1")
	if _, err := io.WriteString(idle, "GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	readStatuses(t, br, 1)
	silent := dialPlane(t, port)
	time.Sleep(50 * time.Millisecond) // accepted, in its handshake

	start := time.Now()
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool()})
	for name, r := range map[string]io.Reader{"idle": br, "in its handshake": silent} {
		if _, err := io.ReadAll(r); err != nil {
			t.Errorf("%s connection: %v (not closed by the drain)", name, err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("connections closed %v after the listener went, want at once", d)
	}
}
