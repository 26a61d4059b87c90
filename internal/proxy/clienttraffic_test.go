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
	"encoding/binary"
	"errors"
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

// uriBackend answers with the request target it received and its name.
func uriBackend(t testing.TB, name string) *testBackend {
	t.Helper()
	return startBackend(t, name, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		w.Header().Set("X-Request-Uri", r.RequestURI)
		w.WriteHeader(http.StatusOK)
	})
}

// TestClientTrafficPaths: slashes merge before routing; encoded slashes
// get the port's action (Decode, Keep, Reject, or the proxy's redirect),
// changed with the snapshot on the same socket.
func TestClientTrafficPaths(t *testing.T) {
	ab, rest := uriBackend(t, "ab"), uriBackend(t, "rest")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	snap := func(ct *snapshot.ClientTraffic) *snapshot.Snapshot {
		l := httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "ab", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/a/b"}}, Backends: to("ns/ab:80")},
			{ID: "rest", Backends: to("ns/rest:80")},
		}})
		l.ClientTraffic = ct
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/ab:80", ab), epSet("ns/rest:80", rest)}, Listeners: []snapshot.Listener{l}}
		snapshot.Normalize(s)
		return s
	}
	c := client()
	type want struct {
		code         int
		backend, uri string
		location     string
	}
	check := func(action, target string, w want) {
		t.Helper()
		res := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d%s", port, target))
		if res.code != w.code || res.header.Get("X-Backend") != w.backend || res.header.Get("X-Request-Uri") != w.uri || res.header.Get("Location") != w.location {
			t.Errorf("%s %s: %d backend %q upstream %q location %q, want %d %q %q %q", action, target, res.code,
				res.header.Get("X-Backend"), res.header.Get("X-Request-Uri"), res.header.Get("Location"), w.code, w.backend, w.uri, w.location)
		}
	}
	for _, tc := range []struct {
		ct     *snapshot.ClientTraffic
		action string
		cases  map[string]want
	}{
		{ct: nil, action: "default", cases: map[string]want{
			"/a//b":    {code: 200, backend: "ab", uri: "/a/b"},
			"/a%2Fb":   {code: 307, location: "/a/b"},
			"/a%2fb?q": {code: 307, location: "/a/b?q"},
		}},
		{ct: &snapshot.ClientTraffic{MergeSlashes: true}, action: "MergeSlashes", cases: map[string]want{
			"/a//b":   {code: 200, backend: "ab", uri: "/a/b"},
			"//a///b": {code: 200, backend: "ab", uri: "/a/b"},
		}},
		{ct: &snapshot.ClientTraffic{EncodedSlashes: snapshot.EncodedSlashDecode}, action: "Decode", cases: map[string]want{
			"/a%2Fb":             {code: 200, backend: "ab", uri: "/a/b"},
			"/a%5cb?x=1":         {code: 200, backend: "ab", uri: "/a/b?x=1"},
			"/x%2F..%2Fa%2F%2Fb": {code: 200, backend: "ab", uri: "/a/b"},
			"/a/b%2F..%2F..%2Fz": {code: 200, backend: "rest", uri: "/z"},
		}},
		{ct: &snapshot.ClientTraffic{EncodedSlashes: snapshot.EncodedSlashKeep}, action: "Keep", cases: map[string]want{
			"/a%2Fb": {code: 200, backend: "ab", uri: "/a%2Fb"},
			"/a%2fb": {code: 200, backend: "ab", uri: "/a%2Fb"},
			"/q%2Fr": {code: 200, backend: "rest", uri: "/q%2Fr"},
		}},
		{ct: &snapshot.ClientTraffic{EncodedSlashes: snapshot.EncodedSlashReject}, action: "Reject", cases: map[string]want{
			"/a%2Fb": {code: 400},
			"/a/b":   {code: 200, backend: "ab", uri: "/a/b"},
		}},
		{ct: &snapshot.ClientTraffic{EncodedSlashes: snapshot.EncodedSlashRedirect}, action: "Redirect", cases: map[string]want{
			"/a%2Fb": {code: 307, location: "/a/b"},
		}},
	} {
		p.mustApply(t, snap(tc.ct))
		for target, w := range tc.cases {
			check(tc.action, target, w)
		}
	}
}

// TestClientTrafficUnderscoreHeaders: fields whose names hold "_" are
// dropped by default, refused with 400 under Reject and passed under
// Allow, on the fast path (GET) and through net/http (POST) alike.
func TestClientTrafficUnderscoreHeaders(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	set := epSet("ns/a:80", a)
	send := func(method string) (int, echo) {
		t.Helper()
		c := dialPlane(t, port)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req := method + " / HTTP/1.1\r\nHost: a\r\nX_Custom_Id: 42\r\nX-Plain: 1\r\n"
		if method == http.MethodPost {
			req += "Content-Length: 2\r\n\r\nhi"
		} else {
			req += "\r\n"
		}
		_, _ = io.WriteString(c, req)
		return readEcho(t, bufio.NewReader(c), method)
	}
	for _, tc := range []struct {
		action snapshot.UnderscoreHeaderAction
		code   int
		passed bool
	}{
		{action: "", code: 200},
		{action: snapshot.UnderscoreHeadersDrop, code: 200},
		{action: snapshot.UnderscoreHeadersReject, code: 400},
		{action: snapshot.UnderscoreHeadersAllow, code: 200, passed: true},
		{action: "", code: 200},
	} {
		ct := &snapshot.ClientTraffic{UnderscoreHeaders: tc.action}
		if tc.action == "" {
			ct = nil
		}
		p.mustApply(t, ppSnapshot(port, set, ct, nil))
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			code, e := send(m)
			if code != tc.code {
				t.Errorf("%q %s: status %d, want %d", tc.action, m, code, tc.code)
				continue
			}
			if code != 200 {
				continue
			}
			if got := e.Header.Get("X_Custom_Id"); (got == "42") != tc.passed || e.Header.Get("X-Plain") != "1" {
				t.Errorf("%q %s: upstream X_Custom_Id %q, X-Plain %q (passed: %v)", tc.action, m, got, e.Header.Get("X-Plain"), tc.passed)
			}
		}
	}
}

// TestClientTrafficTimeouts: a port's RequestHeaderTimeout drops a head
// that never completes, and its IdleTimeout closes a keep-alive
// connection, far sooner than the proxy's defaults (30 s, 120 s), on the
// fast path, after a handoff and on TLS (net/http); set after the port
// was bound.
func TestClientTrafficTimeouts(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	httpPort, tlsPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cert := testCert(t, "a.example")
	set := epSet("ns/a:80", a)
	both := func(ct *snapshot.ClientTraffic) *snapshot.Snapshot {
		s := ppSnapshot(httpPort, set, ct, nil)
		s2 := ppSnapshot(tlsPort, set, ct, &cert)
		s2.Listeners[0].Name = "tls"
		s.Listeners = append(s.Listeners, s2.Listeners...)
		s.Certificates = s2.Certificates
		snapshot.Normalize(s)
		return s
	}
	p.mustApply(t, both(nil))
	const short = time.Second
	p.mustApply(t, both(&snapshot.ClientTraffic{RequestHeaderTimeout: snapshot.Duration(short), IdleTimeout: snapshot.Duration(short)}))
	const limit = 15 * time.Second // the defaults would keep them open longer

	dial := func(tlsConn bool) net.Conn {
		if !tlsConn {
			return dialPlane(t, httpPort)
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", tlsPort),
			&tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for name, tc := range map[string]struct {
		tls  bool
		head string
	}{
		"fast path": {head: "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: "},
		"handoff":   {head: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nX-Slow: "},
		"tls":       {tls: true, head: "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: "},
	} {
		t.Run("header/"+name, func(t *testing.T) {
			c := dial(tc.tls)
			start := time.Now()
			_, _ = io.WriteString(c, tc.head)
			if _, got := closedWithin(t, c, start, limit); got != "" && !strings.HasPrefix(got, "HTTP/1.1 408") {
				t.Errorf("a head that timed out was answered %q", got)
			}
		})
	}
	for name, tc := range map[string]struct {
		tls    bool
		method string
	}{
		"fast path": {method: http.MethodGet},
		"net/http":  {method: http.MethodPost},
		"tls":       {tls: true, method: http.MethodGet},
	} {
		t.Run("idle/"+name, func(t *testing.T) {
			c := dial(tc.tls)
			_ = c.SetDeadline(time.Now().Add(limit))
			req := tc.method + " / HTTP/1.1\r\nHost: a\r\n"
			if tc.method == http.MethodPost {
				req += "Content-Length: 2\r\n\r\nhi"
			} else {
				req += "\r\n"
			}
			_, _ = io.WriteString(c, req)
			br := bufio.NewReader(c)
			if code, _ := readEcho(t, br, tc.method); code != 200 {
				t.Fatalf("status %d", code)
			}
			start := time.Now()
			_ = c.SetReadDeadline(start.Add(limit))
			n, err := br.Read(make([]byte, 1))
			var ne net.Error
			switch {
			case n != 0 || err == nil:
				t.Fatalf("read %d bytes, %v on an idle connection", n, err)
			case errors.As(err, &ne) && ne.Timeout():
				t.Fatalf("idle connection still open after %v", limit)
			}
			if took := time.Since(start); took < short/2 {
				t.Errorf("closed after %v, before the idle timeout of %v", took, short)
			}
		})
	}
}

// dialHTTP2Port dials the port of an HTTP/2 client to be: over TLS with ALPN h2
// (server name a.example), else in the clear for h2c with prior
// knowledge; the connection has a deadline 10 s away.
func dialHTTP2Port(t testing.TB, port int32, overTLS bool) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if overTLS {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	} else {
		c, err = net.DialTimeout("tcp", addr, 5*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// h2Settings dials the port (over TLS with ALPN h2, else h2c with prior
// knowledge), sends the client preface and returns the server's first
// SETTINGS and its connection WINDOW_UPDATE increment.
func h2Settings(t testing.TB, port int32, overTLS bool) (map[uint16]uint32, uint32) {
	t.Helper()
	c := dialHTTP2Port(t, port, overTLS)
	defer func() { _ = c.Close() }()
	// The preface, then an empty SETTINGS frame.
	if _, err := c.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 0x4, 0, 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	settings := map[uint16]uint32{}
	var window uint32
	// The server's SETTINGS come first; its WINDOW_UPDATE, when it
	// enlarges the connection's window, follows among the next frames.
	for i := 0; i < 4 && window == 0; i++ {
		var hdr [9]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if i > 0 {
				break // no WINDOW_UPDATE: the default window
			}
			t.Fatalf("reading a frame: %v", err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatal(err)
		}
		stream := binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff
		switch typ, flags := hdr[3], hdr[4]; {
		case i == 0 && (typ != 0x4 || flags&0x1 != 0):
			t.Fatalf("the server's first frame is of type %d, flags %d, not SETTINGS", typ, flags)
		case i == 0:
			for j := 0; j+6 <= len(payload); j += 6 {
				settings[binary.BigEndian.Uint16(payload[j:])] = binary.BigEndian.Uint32(payload[j+2:])
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
		case typ == 0x8 && stream == 0:
			window = binary.BigEndian.Uint32(payload) & 0x7fffffff
		}
	}
	return settings, window
}

// TestClientTrafficHTTP2Settings: the port's HTTP/2 settings are what its
// server advertises, over TLS and h2c (handed off by the fast path), and
// a new connection gets the settings of the snapshot in force.
func TestClientTrafficHTTP2Settings(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	httpPort, tlsPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cert := testCert(t, "a.example")
	set := epSet("ns/a:80", a)
	apply := func(h2 *snapshot.HTTP2Settings) {
		ct := &snapshot.ClientTraffic{HTTP2: h2}
		s := ppSnapshot(httpPort, set, ct, nil)
		s2 := ppSnapshot(tlsPort, set, ct, &cert)
		s2.Listeners[0].Name = "tls"
		s.Listeners = append(s.Listeners, s2.Listeners...)
		s.Certificates = s2.Certificates
		snapshot.Normalize(s)
		p.mustApply(t, s)
	}
	const (
		maxStreams = 0x3
		initWindow = 0x4
	)
	apply(&snapshot.HTTP2Settings{MaxConcurrentStreams: 7, InitialStreamWindowSize: 200000, InitialConnectionWindowSize: 3 << 20})
	for _, overTLS := range []bool{true, false} {
		s, w := h2Settings(t, tlsPortOr(overTLS, tlsPort, httpPort), overTLS)
		if s[maxStreams] != 7 || s[initWindow] != 200000 || w != 3<<20-65535 {
			t.Errorf("tls=%v: SETTINGS %v, connection window increment %d; want 7 streams, a 200000 stream window, a %d increment", overTLS, s, w, 3<<20-65535)
		}
	}
	apply(&snapshot.HTTP2Settings{MaxConcurrentStreams: 9})
	for _, overTLS := range []bool{true, false} {
		if s, _ := h2Settings(t, tlsPortOr(overTLS, tlsPort, httpPort), overTLS); s[maxStreams] != 9 {
			t.Errorf("tls=%v after the change: SETTINGS %v, want 9 streams", overTLS, s)
		}
	}
	// The default server answers too.
	apply(nil)
	if s, _ := h2Settings(t, tlsPort, true); s[maxStreams] == 9 || s[maxStreams] == 7 {
		t.Errorf("without settings: SETTINGS %v", s)
	}
	if res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", httpPort)); res.code != 200 {
		t.Errorf("HTTP/1.1 after the changes: %d", res.code)
	}
}

func tlsPortOr(overTLS bool, tlsPort, httpPort int32) int32 {
	if overTLS {
		return tlsPort
	}
	return httpPort
}

// TestClientTrafficCompile: a malformed ClientTraffic is refused, and the
// state in force stays.
func TestClientTrafficCompile(t *testing.T) {
	for name, ct := range map[string]snapshot.ClientTraffic{
		"empty PROXY sources":  {ProxyProtocol: &snapshot.ProxyProtocol{}},
		"bad PROXY source":     {ProxyProtocol: &snapshot.ProxyProtocol{TrustedCIDRs: []string{"1.2.3.4/40"}}},
		"bad client IP":        {ClientIP: &snapshot.ClientIPDetection{TrustedCIDRs: []string{"x"}}},
		"negative idle":        {IdleTimeout: snapshot.Duration(-time.Second)},
		"negative header":      {RequestHeaderTimeout: snapshot.Duration(-time.Second)},
		"negative streams":     {HTTP2: &snapshot.HTTP2Settings{MaxConcurrentStreams: -1}},
		"small conn window":    {HTTP2: &snapshot.HTTP2Settings{InitialConnectionWindowSize: 1000}},
		"unknown slash action": {EncodedSlashes: "Mangle"},
		"unknown underscore":   {UnderscoreHeaders: "Shout"},
	} {
		if _, err := compileClientTraffic(&ct); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, ppSnapshot(port, epSet("ns/a:80", a), nil, nil))
	if err := p.Apply(ppSnapshot(port, epSet("ns/a:80", a), &snapshot.ClientTraffic{EncodedSlashes: "Mangle"}, nil)); err == nil {
		t.Fatal("a snapshot with an unknown action applied")
	}
	if res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)); res.code != 200 {
		t.Errorf("after the refused snapshot: %d", res.code)
	}
}
