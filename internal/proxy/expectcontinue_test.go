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
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// startExpectUpstream answers each request with what it got: the body's
// length and digest and the Expect field ("n=... sha=... expect=...").
func startExpectUpstream(t *testing.T) (int32, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	port, _ := startConnCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		_, _ = fmt.Fprintf(w, "%s %s n=%d sha=%s expect=%q err=%v", r.Method, r.URL.Path, n, hex.EncodeToString(h.Sum(nil))[:16], r.Header.Get("Expect"), err)
	})
	return port, &requests
}

// startExpectPlane serves a route to upstream, a retrying one, one with a
// 100-byte body limit and a direct 403.
func startExpectPlane(t *testing.T, opts Options, upstream int32) (*testPlane, int32) {
	t.Helper()
	p, port := newEdgePlane(t, opts)
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/up:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: upstream}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "a.example", Routes: []snapshot.Route{
			{ID: "retry", Match: prefix("/retry"), Backends: to("ns/up:80"), Retry: &snapshot.Retry{Attempts: 2, ConnectionErrors: true}},
			{ID: "limited", Match: prefix("/limited"), Backends: to("ns/up:80"), MaxRequestBodyBytes: 100},
			{ID: "deny", Match: prefix("/deny"), DirectResponse: &snapshot.DirectResponse{StatusCode: http.StatusForbidden}},
			{ID: "r", Match: prefix("/"), Backends: to("ns/up:80")},
		}})}}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	return p, port
}

// awaitContinue reads the interim answer a client waits for before it
// sends its body.
func awaitContinue(t *testing.T, br *bufio.Reader) {
	t.Helper()
	var got string
	for range 2 {
		line, err := br.ReadString('\n')
		got += line
		if err != nil {
			t.Fatalf("waiting for 100 Continue: read %q: %v", got, err)
		}
	}
	if got != continueLine {
		t.Fatalf("waiting for 100 Continue: read %q", got)
	}
}

// TestExpectContinueOnTheFastPath: a client that sends "Expect:
// 100-continue" and waits gets the 100 from the proxy, then its body
// reaches the upstream, which never sees the expectation. Small and
// streamed bodies, the lean client and http.Transport (a retrying
// route), all on one keep-alive connection the fast path serves.
func TestExpectContinueOnTheFastPath(t *testing.T) {
	upPort, _ := startExpectUpstream(t)
	p, port := startExpectPlane(t, Options{}, upPort)
	conn := dialPlane(t, port)
	br := bufio.NewReader(conn)
	before := p.fastServed(port)
	cases := []struct {
		method, path, expect string
		size                 int
		spliced              bool
	}{
		{http.MethodPost, "/small", "100-continue", 1000, false},
		{http.MethodPut, "/large", "100-Continue", 3 << 20, true},
		{http.MethodPost, "/retry/x", "100-continue", 5000, false},
		{http.MethodPatch, "/retry/large", "100-continue", 200000, false},
		{http.MethodPost, "/limited/fits", "100-CONTINUE", 100, false},
	}
	for _, tc := range cases {
		_ = conn.SetDeadline(time.Now().Add(waitFor))
		body := spliceTestBody(tc.size)
		streamed := p.lean.streamed.Load()
		if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: a.example\r\nExpect: %s\r\nContent-Length: %d\r\n\r\n", tc.method, tc.path, tc.expect, tc.size); err != nil {
			t.Fatal(err)
		}
		awaitContinue(t, br)
		go func() { _, _ = conn.Write(body) }()
		want := fmt.Sprintf("%s %s n=%d sha=%s expect=\"\" err=<nil>", tc.method, tc.path, tc.size, digestOf(body))
		if got := readBody(t, br); got != want {
			t.Fatalf("%s %s: upstream answered %q, want %q", tc.method, tc.path, got, want)
		}
		if spliced := p.lean.streamed.Load() - streamed; tc.spliced && spliced < int64(tc.size)-8<<10 {
			t.Errorf("%s %s: %d of %d body bytes spliced", tc.method, tc.path, spliced, tc.size)
		}
	}
	// The connection carries on.
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	_, _ = io.WriteString(conn, "GET /next HTTP/1.1\r\nHost: a.example\r\n\r\n")
	if got := readBody(t, br); !strings.HasPrefix(got, "GET /next n=0 ") {
		t.Errorf("after the bodies: %q", got)
	}
	if n := p.fastServed(port) - before; n != uint64(len(cases))+1 {
		t.Errorf("fast path served %d requests, want %d", n, len(cases)+1)
	}
}

// TestExpectContinueWithheld: a request answered before its body is
// needed (a body limit, a direct answer, no route) gets its final answer
// at once, without a 100, with Connection: close; the upstream sees
// nothing, and the proxy closes once the client has (the body never
// came). So on the fast path, and on a connection handed to net/http (a
// chunked body, an escaped target).
func TestExpectContinueWithheld(t *testing.T) {
	upPort, requests := startExpectUpstream(t)
	p, port := startExpectPlane(t, Options{}, upPort)
	const expect = "Expect: 100-continue\r\n"
	for _, tc := range []struct {
		name, head string
		code       int
		fast       bool
	}{
		{"over the body limit", "POST /limited/over HTTP/1.1\r\nHost: a.example\r\n" + expect + "Content-Length: 101\r\n\r\n", http.StatusRequestEntityTooLarge, true},
		{"direct answer", "POST /deny HTTP/1.1\r\nHost: a.example\r\n" + expect + "Content-Length: 10\r\n\r\n", http.StatusForbidden, true},
		{"no route", "POST /x HTTP/1.1\r\nHost: b.example\r\n" + expect + "Content-Length: 1048576\r\n\r\n", http.StatusNotFound, true},
		{"chunked, direct answer", "POST /deny HTTP/1.1\r\nHost: a.example\r\n" + expect + "Transfer-Encoding: chunked\r\n\r\n", http.StatusForbidden, false},
		{"chunked, no route", "POST /x HTTP/1.1\r\nHost: b.example\r\n" + expect + "Transfer-Encoding: chunked\r\n\r\n", http.StatusNotFound, false},
		// net/http's answer waited for the read deadline before
		// continueGuard.
		{"escaped target, over the body limit", "POST /limited/%61 HTTP/1.1\r\nHost: a.example\r\n" + expect + "Content-Length: 101\r\n\r\n", http.StatusRequestEntityTooLarge, false},
	} {
		before := p.fastServed(port)
		c := dialPlane(t, port)
		start := time.Now()
		_ = c.SetDeadline(start.Add(waitFor))
		_, _ = io.WriteString(c, tc.head)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != tc.code || !resp.Close {
			t.Errorf("%s: %d (close %v), want %d with Connection: close and no 100 before it", tc.name, resp.StatusCode, resp.Close, tc.code)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: answered after %v", tc.name, took)
		}
		if served := p.fastServed(port) - before; (served == 1) != tc.fast {
			t.Errorf("%s: the fast path served %d requests", tc.name, served)
		}
		// As curl does after such an answer: it sends nothing more.
		_ = c.(*net.TCPConn).CloseWrite()
		if _, rest := closedWithin(t, c, time.Now(), 5*time.Second); rest != "" {
			t.Errorf("%s: after the answer: %q", tc.name, rest)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

// TestExpectContinueClientStalls: after the 100, a client that does not
// send its body gets 408 once the body timeout passes.
func TestExpectContinueClientStalls(t *testing.T) {
	upPort, _ := startExpectUpstream(t)
	_, port := startExpectPlane(t, Options{RequestBodyTimeout: 300 * time.Millisecond}, upPort)
	c := dialPlane(t, port)
	_ = c.SetDeadline(time.Now().Add(waitFor))
	_, _ = io.WriteString(c, "POST /slow HTTP/1.1\r\nHost: a.example\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
	br := bufio.NewReader(c)
	awaitContinue(t, br)
	_, _ = io.WriteString(c, "12345")
	start := time.Now()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("stalled body: %d, want 408", resp.StatusCode)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("408 after %v, want about the 300ms body timeout", took)
	}
}

// TestExpectContinueHandedOff: expectations the fast path does not serve
// go to net/http with the connection, which answers them as it does:
// another expectation 417, two Expect fields or one without a body as
// net/http's server reads them.
func TestExpectContinueHandedOff(t *testing.T) {
	upPort, _ := startExpectUpstream(t)
	p, port := startExpectPlane(t, Options{}, upPort)
	for _, tc := range []struct {
		name, raw string
		want      []int
	}{
		{"another expectation", "POST /a HTTP/1.1\r\nHost: a.example\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\nhi", []int{417}},
		{"two fields", "POST /a HTTP/1.1\r\nHost: a.example\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", []int{100, 200}},
		{"no body", "POST /a HTTP/1.1\r\nHost: a.example\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n", []int{200}},
	} {
		before := p.fastServed(port)
		c := dialPlane(t, port)
		_ = c.SetDeadline(time.Now().Add(waitFor))
		_, _ = io.WriteString(c, tc.raw)
		br := bufio.NewReader(c)
		var got []int
		for len(got) < len(tc.want) {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: after %v: %v", tc.name, got, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			got = append(got, resp.StatusCode)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if n := p.fastServed(port) - before; n != 0 {
			t.Errorf("%s: the fast path served %d requests, want it handed off", tc.name, n)
		}
	}
	// A chunked body that goes upstream: net/http's 100 before it, then
	// the answer.
	c := dialPlane(t, port)
	_ = c.SetDeadline(time.Now().Add(waitFor))
	_, _ = io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a.example\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
	br := bufio.NewReader(c)
	awaitContinue(t, br)
	_, _ = io.WriteString(c, "5\r\nhello\r\n0\r\n\r\n")
	if got, want := readBody(t, br), "POST /up n=5 sha="+digestOf([]byte("hello")); !strings.HasPrefix(got, want) {
		t.Errorf("chunked body upstream: %q, want %q...", got, want)
	}
}

// TestExpectContinueOverTLS: the same over HTTPS, where the 100 goes out
// through the TLS connection and the body is copied.
func TestExpectContinueOverTLS(t *testing.T) {
	v1 := startBackend(t, "v1", false, nil)
	cert := testCert(t, "example.org", "second-example.org", "*.wildcard.org")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, misdirectedSnapshot(port, cert, v1, v1, v1))
	before := p.fastServed(port)
	c := dialClientTLS(t, port, "example.org", "http/1.1")
	br := bufio.NewReader(c)
	for _, size := range []int{10, 70000} {
		if _, err := fmt.Fprintf(c, "POST /detect-misdirected-requests HTTP/1.1\r\nHost: example.org\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", size); err != nil {
			t.Fatal(err)
		}
		awaitContinue(t, br)
		go func() { _, _ = c.Write(spliceTestBody(size)) }()
		if got := readStatuses(t, br, 1); got[0] != 200 {
			t.Fatalf("%d-byte body: %d, want 200", size, got[0])
		}
		if e, _ := v1.last(); e.BodyLen != int64(size) || e.Header.Get("Expect") != "" {
			t.Errorf("upstream saw %d body bytes and Expect %q, want %d and none", e.BodyLen, e.Header.Get("Expect"), size)
		}
	}
	if n := p.fastServed(port) - before; n != 2 {
		t.Errorf("fast path served %d requests, want 2", n)
	}
}
