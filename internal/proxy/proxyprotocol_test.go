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
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// proxyHeader is a PROXY protocol header of the given version naming
// src ("ip:port") as the client of a connection to the proxy's port.
func proxyHeader(t testing.TB, version byte, src string, port int32) []byte {
	t.Helper()
	s, err := net.ResolveTCPAddr("tcp", src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proxyproto.HeaderProxyFromAddrs(version, s, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)}).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ppSnapshot is one HTTP or HTTPS listener whose routes all go to set,
// with a ClientTraffic.
func ppSnapshot(port int32, set *snapshot.EndpointSet, ct *snapshot.ClientTraffic, cert *snapshot.Certificate) *snapshot.Snapshot {
	l := httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to(set.Name)}}})
	l.ClientTraffic = ct
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{set}, Listeners: []snapshot.Listener{l}}
	if cert != nil {
		s.Certificates = []snapshot.Certificate{*cert}
		s.Listeners[0].Protocol = snapshot.ProtocolHTTPS
		s.Listeners[0].TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: cert.Name}}}
	}
	snapshot.Normalize(s)
	return s
}

func trustPP(cidrs ...string) *snapshot.ClientTraffic {
	return &snapshot.ClientTraffic{ProxyProtocol: &snapshot.ProxyProtocol{TrustedCIDRs: cidrs}}
}

// readEcho reads one response (method: that of its request) and decodes
// the backend's echo from it.
func readEcho(t testing.TB, br *bufio.Reader, method string) (int, echo) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var e echo
	_ = json.Unmarshal(body, &e)
	return resp.StatusCode, e
}

// assertRefused reads from c until it closes: nothing may come back.
func assertRefused(t testing.TB, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection stayed open", what)
	}
	if len(got) > 0 {
		t.Fatalf("%s: answered %q, want the connection closed without an answer", what, got)
	}
}

// TestProxyProtocolHTTP: v1 and v2 headers from a trusted source set the
// client address the backend (X-Forwarded-For) and the access log see,
// on the fast path (GET) and after the handoff to net/http (POST), on
// every request of a keep-alive connection, with and without the fast
// path; a LOCAL header keeps the peer.
func TestProxyProtocolHTTP(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fastpath=%v", fast), func(t *testing.T) {
			p := newTestPlane(t)
			if !fast {
				p = newPlaneWith(t, func(o *Options) { o.DisableFastPath = true })
			}
			port := testkit.FreePortInt32(t)
			p.mustApply(t, ppSnapshot(port, epSet("ns/a:80", a), trustPP("127.0.0.1/32"), nil))
			for _, v := range []byte{1, 2} {
				src := fmt.Sprintf("203.0.113.%d:4%d00", v, v)
				c := dialPlane(t, port)
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				path := fmt.Sprintf("/v%d-fast%v", v, fast)
				// The header and the first request in one write, the next
				// requests on their own.
				_, _ = c.Write(append(proxyHeader(t, v, src, port), "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n"...))
				code, e := readEcho(t, br, "GET")
				want := strings.Split(src, ":")[0]
				if code != 200 || e.Header.Get("X-Forwarded-For") != want {
					t.Fatalf("v%d GET: status %d, upstream X-Forwarded-For %q, want %s", v, code, e.Header.Get("X-Forwarded-For"), want)
				}
				_, _ = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi")
				if code, e := readEcho(t, br, "POST"); code != 200 || e.Header.Get("X-Forwarded-For") != want || e.BodyLen != 2 {
					t.Fatalf("v%d POST: status %d, upstream X-Forwarded-For %q, body %d", v, code, e.Header.Get("X-Forwarded-For"), e.BodyLen)
				}
				for _, ip := range loggedClientIPs(t, p, path, 2) {
					if ip != want {
						t.Errorf("v%d: access log client_ip %s, want %s", v, ip, want)
					}
				}
			}

			// LOCAL: the balancer's own health check, served as from the peer.
			local, err := (&proxyproto.Header{Version: 2, Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}).Format()
			if err != nil {
				t.Fatal(err)
			}
			c := dialPlane(t, port)
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write(append(local, "GET /local HTTP/1.1\r\nHost: a\r\n\r\n"...))
			if code, e := readEcho(t, bufio.NewReader(c), "GET"); code != 200 || e.Header.Get("X-Forwarded-For") != "127.0.0.1" {
				t.Errorf("LOCAL: status %d, upstream X-Forwarded-For %q, want the peer", code, e.Header.Get("X-Forwarded-For"))
			}
		})
	}
}

// TestProxyProtocolRefusals: an untrusted peer is closed whatever it
// sends; a trusted peer without a header, with a malformed one or with
// one that never completes is closed without an answer.
func TestProxyProtocolRefusals(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newPlaneWith(t, func(o *Options) { o.HeaderTimeout = time.Second })
	port := testkit.FreePortInt32(t)
	set := epSet("ns/a:80", a)
	req := "GET / HTTP/1.1\r\nHost: a\r\n\r\n"

	p.mustApply(t, ppSnapshot(port, set, trustPP("192.0.2.0/24"), nil))
	for name, payload := range map[string][]byte{
		"untrusted with a header":    append(proxyHeader(t, 1, "203.0.113.1:1000", port), req...),
		"untrusted without a header": []byte(req),
	} {
		c := dialPlane(t, port)
		_, _ = c.Write(payload)
		assertRefused(t, c, name)
	}
	if a.hits.Load() != 0 {
		t.Fatalf("the backend saw %d requests from refused connections", a.hits.Load())
	}

	p.mustApply(t, ppSnapshot(port, set, trustPP("127.0.0.1"), nil))
	for name, payload := range map[string][]byte{
		"trusted without a header": []byte(req),
		"garbled v1 header":        []byte("PROXY TCP4 not-an-address 127.0.0.1 1 2\r\n" + req),
		"truncated v2 header":      proxyHeader(t, 2, "203.0.113.1:1000", port)[:20],
		"silent":                   nil,
	} {
		c := dialPlane(t, port)
		_, _ = c.Write(payload)
		assertRefused(t, c, name)
	}
	if a.hits.Load() != 0 {
		t.Fatalf("the backend saw %d requests from refused connections", a.hits.Load())
	}
}

// TestProxyProtocolFollowsTheSnapshot: turning the PROXY protocol on and
// off applies to the next connection, on the socket bound before.
func TestProxyProtocolFollowsTheSnapshot(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	set := epSet("ns/a:80", a)
	plain := func() (int, echo) {
		c := dialPlane(t, port)
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		return readEcho(t, bufio.NewReader(c), "GET")
	}
	p.mustApply(t, ppSnapshot(port, set, nil, nil))
	if code, _ := plain(); code != 200 {
		t.Fatalf("without the PROXY protocol: status %d", code)
	}
	bound := p.bound[listenerAddr{port: port}]

	p.mustApply(t, ppSnapshot(port, set, trustPP("127.0.0.0/8"), nil))
	if p.bound[listenerAddr{port: port}] != bound {
		t.Fatal("the listener was rebound")
	}
	c := dialPlane(t, port)
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	assertRefused(t, c, "a connection without a header once the policy requires one")
	c = dialPlane(t, port)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(append(proxyHeader(t, 2, "198.51.100.9:999", port), "GET / HTTP/1.1\r\nHost: a\r\n\r\n"...))
	if code, e := readEcho(t, bufio.NewReader(c), "GET"); code != 200 || e.Header.Get("X-Forwarded-For") != "198.51.100.9" {
		t.Fatalf("with the PROXY protocol: status %d, X-Forwarded-For %q", code, e.Header.Get("X-Forwarded-For"))
	}

	p.mustApply(t, ppSnapshot(port, set, nil, nil))
	if code, e := plain(); code != 200 || e.Header.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Fatalf("after turning it off: status %d, X-Forwarded-For %q", code, e.Header.Get("X-Forwarded-For"))
	}
}

// TestProxyProtocolHTTPS: on an HTTPS listener the header comes before
// the TLS handshake, for HTTP/1.1 and HTTP/2 alike.
func TestProxyProtocolHTTPS(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	cert := testCert(t, "a.example")
	p.mustApply(t, ppSnapshot(port, epSet("ns/a:80", a), trustPP("127.0.0.1/32"), &cert))
	for _, h2 := range []bool{false, true} {
		src := "203.0.113.80:5555"
		var protos http.Protocols
		protos.SetHTTP1(!h2)
		protos.SetHTTP2(h2)
		tr := &http.Transport{
			Protocols:       &protos,
			TLSClientConfig: &tls.Config{ServerName: "a.example", InsecureSkipVerify: true},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				if _, err := c.Write(proxyHeader(t, 2, src, port)); err != nil {
					_ = c.Close()
					return nil, err
				}
				return c, nil
			},
		}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		res := fetch(t, c, fmt.Sprintf("https://127.0.0.1:%d/h2-%v", port, h2))
		if res.code != 200 || res.echo.Header.Get("X-Forwarded-For") != "203.0.113.80" {
			t.Fatalf("h2=%v: status %d, upstream X-Forwarded-For %q", h2, res.code, res.echo.Header.Get("X-Forwarded-For"))
		}
		if ips := loggedClientIPs(t, p, fmt.Sprintf("/h2-%v", h2), 1); ips[0] != "203.0.113.80" {
			t.Errorf("h2=%v: access log client_ip %v", h2, ips)
		}
	}
	// A TLS client that sends no header is closed before its handshake.
	c := dialPlane(t, port)
	tc := tls.Client(c, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS handshake without a PROXY header succeeded")
	}
}
