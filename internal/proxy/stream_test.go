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
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// tcpBackend is a raw TCP server on loopback; handle serves each
// connection.
type tcpBackend struct {
	name  string
	port  int32
	conns atomic.Int64
	// got receives what handlers that report report.
	got chan string
}

func startTCPBackend(t testing.TB, name string, handle func(b *tcpBackend, c net.Conn)) *tcpBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &tcpBackend{name: name, port: int32(ln.Addr().(*net.TCPAddr).Port), got: make(chan string, 16)}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = c.Close() }()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				handle(b, c)
			}()
		}
	}()
	return b
}

// greetEcho writes the backend's name and a newline, then echoes until
// the client half-closes, and half-closes back.
func greetEcho(b *tcpBackend, c net.Conn) {
	if _, err := io.WriteString(c, b.name+"\n"); err != nil {
		return
	}
	_, _ = io.Copy(c, c)
	closeWrite(c)
}

// readAllReply reads until the client half-closes, then answers
// "got:<what it read>".
func readAllReply(b *tcpBackend, c net.Conn) {
	data, err := io.ReadAll(c)
	if err != nil {
		return
	}
	_, _ = io.WriteString(c, "got:"+string(data))
}

// closeFirst writes "early" and half-closes at once, then reports what the
// client sent until it half-closed.
func closeFirst(b *tcpBackend, c net.Conn) {
	if _, err := io.WriteString(c, "early"); err != nil {
		return
	}
	closeWrite(c)
	data, _ := io.ReadAll(c)
	b.got <- string(data)
}

// startTLSBackend terminates TLS with its own certificate, then behaves
// as greetEcho.
func startTLSBackend(t testing.TB, name string, cert snapshot.Certificate) *tcpBackend {
	t.Helper()
	crt, err := tls.X509KeyPair([]byte(cert.CertPEM), []byte(cert.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{crt}, MinVersion: tls.VersionTLS12}
	return startTCPBackend(t, name, func(b *tcpBackend, c net.Conn) {
		tc := tls.Server(c, cfg)
		if tc.Handshake() != nil {
			return
		}
		greetEcho(b, tc)
	})
}

// startUDPEcho answers every datagram with "<name>|<source>|<payload>".
func startUDPEcho(t testing.TB, name string) int32 {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(name+"|"+from.String()+"|"+string(buf[:n])), from)
		}
	}()
	return int32(pc.LocalAddr().(*net.UDPAddr).Port)
}

func portsSet(name string, ports ...int32) *snapshot.EndpointSet {
	es := &snapshot.EndpointSet{Name: name}
	for _, p := range ports {
		es.Endpoints = append(es.Endpoints, snapshot.Endpoint{Address: "127.0.0.1", Port: p})
	}
	return es
}

func weighted(set string, w int32) snapshot.Backend {
	return snapshot.Backend{EndpointSet: set, Weight: w}
}

func sroute(id, host string, terminate bool, backends ...snapshot.Backend) snapshot.StreamRoute {
	return snapshot.StreamRoute{ID: id, Hostname: host, Terminate: terminate, Backends: backends}
}

func streamListenerOf(proto snapshot.Protocol, port int32, routes ...snapshot.StreamRoute) snapshot.Listener {
	l := snapshot.Listener{Port: port, Protocol: proto, StreamRoutes: routes}
	l.Name = "test/" + snapshot.ListenerKey(&l)
	return l
}

func streamSnap(sets []*snapshot.EndpointSet, certs []snapshot.Certificate, ls ...snapshot.Listener) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: sets, Certificates: certs, Listeners: ls}
	snapshot.Normalize(s)
	return s
}

func addr(port int32) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))) }

func dialTCP(t testing.TB, port int32) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr(port), waitFor)
	if err != nil {
		t.Fatalf("dial %d: %v", port, err)
	}
	_ = c.SetDeadline(time.Now().Add(waitFor))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// greeting reads the name a greetEcho backend sends first.
func greeting(t testing.TB, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the greeting: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// resetOnConnect reports whether a connection to port ends with a TCP
// reset: reading it, or already in the dial when the reset came first.
func resetOnConnect(port int32) (bool, error) {
	c, err := net.DialTimeout("tcp", addr(port), waitFor)
	if err == nil {
		defer func() { _ = c.Close() }()
		_ = c.SetReadDeadline(time.Now().Add(waitFor))
		_, err = c.Read(make([]byte, 1))
	}
	return errors.Is(err, syscall.ECONNRESET), err
}

// isReset reports an error of a connection the peer reset (or closed
// before a handshake finished): what the Gateway API conformance suite
// takes for a rejected TLS connection.
func isReset(err error) bool {
	return err != nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "connection reset by peer"))
}

// metricValue is the value of the series of name whose labels include
// the given name/value pairs (0 when there is none).
func metricValue(t testing.TB, p *testPlane, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// streamLogLines are the access log lines of stream connections and UDP
// sessions.
func streamLogLines(t testing.TB, p *testPlane) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		if _, ok := m["outcome"]; ok {
			out = append(out, m)
		}
	}
	return out
}

// TestStreamTCPWeighted: a TCP listener spreads connections over two
// backends by weight (1:3), counts them and their bytes, and logs each.
func TestStreamTCPWeighted(t *testing.T) {
	a, b := startTCPBackend(t, "a", greetEcho), startTCPBackend(t, "b", greetEcho)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/a:1", a.port), portsSet("ns/b:1", b.port)}, nil,
		streamListenerOf(snapshot.ProtocolTCP, port, sroute("tcproute/ns/r:0", "", false, weighted("ns/a:1", 1), weighted("ns/b:1", 3)))))
	const n = 400
	seen := map[string]int{}
	for range n {
		c := dialTCP(t, port)
		seen[greeting(t, bufio.NewReader(c))]++
		_ = c.Close()
	}
	if seen["a"]+seen["b"] != n || seen["a"] < 50 || seen["a"] > 160 {
		t.Errorf("connections per backend = %v, want about 100 for a and 300 for b", seen)
	}
	lbl := []string{"listener", "test/" + strconv.Itoa(int(port)), "route", "tcproute/ns/r:0"}
	if got := metricValue(t, p, "coxswain_proxy_stream_connections_total", append(lbl, "outcome", "forwarded")...); got != n {
		t.Errorf("forwarded connections = %v, want %d", got, n)
	}
	testkit.EventuallyWithin(t, waitFor, "every connection to end and be logged", func() bool {
		return len(streamLogLines(t, p)) == n && metricValue(t, p, "coxswain_proxy_stream_active_connections", lbl[:2]...) == 0
	})
	if got := metricValue(t, p, "coxswain_proxy_stream_bytes_total", append(lbl, "direction", "tx")...); got != 2*n {
		t.Errorf("bytes to clients = %v, want %d", got, 2*n)
	}
	e := streamLogLines(t, p)[0]
	for k, want := range map[string]any{"protocol": "TCP", "route_id": "tcproute/ns/r:0", "client_ip": "127.0.0.1", "outcome": "forwarded", "bytes_tx": 2.0, "bytes_rx": 0.0} {
		if e[k] != want {
			t.Errorf("access log %s = %v, want %v (line %v)", k, e[k], want, e)
		}
	}
	if up, _ := e["upstream_addr"].(string); up != addr(a.port) && up != addr(b.port) {
		t.Errorf("access log upstream_addr = %q", up)
	}
}

// TestStreamTCPRefusedIsReset: no route, no endpoint, an invalid backend
// and an endpoint that refuses the dial each end the client's connection
// with a reset, counted by outcome.
func TestStreamTCPRefusedIsReset(t *testing.T) {
	p := newTestPlane(t)
	dead := testkit.FreePortInt32(t)
	noRoute, empty, invalid, dialErr := testkit.FreePortInt32(t), testkit.FreePortInt32(t), testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{{Name: "ns/empty:1"}, portsSet("ns/dead:1", dead)}, nil,
		streamListenerOf(snapshot.ProtocolTCP, noRoute),
		streamListenerOf(snapshot.ProtocolTCP, empty, sroute("empty", "", false, weighted("ns/empty:1", 1))),
		streamListenerOf(snapshot.ProtocolTCP, invalid, sroute("invalid", "", false, snapshot.Backend{Invalid: true, Weight: 1})),
		streamListenerOf(snapshot.ProtocolTCP, dialErr, sroute("dead", "", false, weighted("ns/dead:1", 1))),
	))
	for _, tc := range []struct {
		name          string
		port          int32
		route, result string
	}{
		{"no route", noRoute, "", "no_route"},
		{"no endpoints", empty, "empty", "refused"},
		{"invalid backend", invalid, "invalid", "refused"},
		{"dial error", dialErr, "dead", "dial_error"},
	} {
		if reset, err := resetOnConnect(tc.port); !reset {
			t.Errorf("%s: read ended with %v, want a connection reset", tc.name, err)
		}
		lbl := []string{"listener", "test/" + strconv.Itoa(int(tc.port)), "route", tc.route, "outcome", tc.result}
		testkit.EventuallyWithin(t, waitFor, tc.name+" counted", func() bool {
			return metricValue(t, p, "coxswain_proxy_stream_connections_total", lbl...) == 1
		})
	}
}

// TestStreamTCPHalfClose: each direction ends on its own. The client's
// half-close reaches the backend while the backend's answer still comes
// back, and the backend's half-close reaches the client while the
// client's bytes still go through.
func TestStreamTCPHalfClose(t *testing.T) {
	reply, first := startTCPBackend(t, "reply", readAllReply), startTCPBackend(t, "first", closeFirst)
	p := newTestPlane(t)
	pr, pf := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/reply:1", reply.port), portsSet("ns/first:1", first.port)}, nil,
		streamListenerOf(snapshot.ProtocolTCP, pr, sroute("reply", "", false, weighted("ns/reply:1", 1))),
		streamListenerOf(snapshot.ProtocolTCP, pf, sroute("first", "", false, weighted("ns/first:1", 1)))))

	c := dialTCP(t, pr)
	if _, err := io.WriteString(c, "hello"); err != nil {
		t.Fatal(err)
	}
	closeWrite(c)
	if got, err := io.ReadAll(c); err != nil || string(got) != "got:hello" {
		t.Errorf("after the client's half-close: read %q, %v; want %q and EOF", got, err, "got:hello")
	}

	c = dialTCP(t, pf)
	if got, err := io.ReadAll(c); err != nil || string(got) != "early" {
		t.Fatalf("the backend's half-close: read %q, %v; want %q and EOF", got, err, "early")
	}
	if _, err := io.WriteString(c, "late"); err != nil {
		t.Fatalf("writing after the backend's half-close: %v", err)
	}
	closeWrite(c)
	select {
	case got := <-first.got:
		if got != "late" {
			t.Errorf("the backend read %q after its half-close, want %q", got, "late")
		}
	case <-time.After(waitFor):
		t.Error("the backend never saw the client's half-close")
	}
}

// tlsClient dials port and handshakes with the given SNI, trusting only
// roots (every certificate when roots is nil).
func tlsClient(port int32, sni string, roots *x509.CertPool, alpn ...string) (*tls.Conn, error) {
	raw, err := net.DialTimeout("tcp", addr(port), waitFor)
	if err != nil {
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(waitFor))
	cfg := &tls.Config{ServerName: sni, RootCAs: roots, InsecureSkipVerify: roots == nil, NextProtos: alpn}
	if sni == "" {
		cfg.ServerName = "127.0.0.1" // an IP: Go's client then sends no SNI
	}
	tc := tls.Client(raw, cfg)
	if err := tc.Handshake(); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return tc, nil
}

func poolOf(certs ...snapshot.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AppendCertsFromPEM([]byte(c.CertPEM))
	}
	return pool
}

// TestTLSRoutePassthroughBySNI: each SNI reaches its own backend, which
// terminates TLS with its own certificate; the client verifies that
// certificate, so the proxy passed the bytes through unopened.
func TestTLSRoutePassthroughBySNI(t *testing.T) {
	certA, certB := testCert(t, "a.example.com"), testCert(t, "b.example.com")
	a, b := startTLSBackend(t, "a", certA), startTLSBackend(t, "b", certB)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/a:443", a.port), portsSet("ns/b:443", b.port)}, nil,
		streamListenerOf(snapshot.ProtocolTLS, port,
			sroute("tlsroute/ns/a:0", "a.example.com", false, weighted("ns/a:443", 1)),
			sroute("tlsroute/ns/b:0", "b.example.com", false, weighted("ns/b:443", 1)))))
	for _, tc := range []struct {
		sni, want string
		cert      snapshot.Certificate
	}{{"a.example.com", "a", certA}, {"b.example.com", "b", certB}, {"A.Example.COM", "a", certA}} {
		c, err := tlsClient(port, tc.sni, poolOf(tc.cert), "h2")
		if err != nil {
			t.Fatalf("SNI %s: handshake through the proxy: %v", tc.sni, err)
		}
		br := bufio.NewReader(c)
		if got := greeting(t, br); got != tc.want {
			t.Errorf("SNI %s reached %q, want %q", tc.sni, got, tc.want)
		}
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			t.Fatal(err)
		}
		if line, _ := br.ReadString('\n'); line != "ping\n" {
			t.Errorf("SNI %s: echo %q", tc.sni, line)
		}
		_ = c.Close()
	}
	testkit.EventuallyWithin(t, waitFor, "the passthrough connections to be logged", func() bool { return len(streamLogLines(t, p)) == 3 })
	for _, e := range streamLogLines(t, p) {
		if e["protocol"] != "TLS" || e["outcome"] != "forwarded" || !strings.HasSuffix(strings.ToLower(e["sni"].(string)), ".example.com") || e["bytes_rx"].(float64) < 100 {
			t.Errorf("access log line %v: want a forwarded TLS connection with its SNI and its ClientHello in bytes_rx", e)
		}
	}
}

// TestTLSRouteSNIPrecedence: the exact name wins, then the longest
// wildcard suffix (one label or more in front of it), then "*", which
// also takes a ClientHello without SNI.
func TestTLSRouteSNIPrecedence(t *testing.T) {
	cert := testCert(t, "any.example")
	names := []string{"exact", "wild", "deep", "any"}
	var sets []*snapshot.EndpointSet
	for _, n := range names {
		sets = append(sets, portsSet("ns/"+n+":443", startTLSBackend(t, n, cert).port))
	}
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTLS, port,
		sroute("exact", "x.example.com", false, weighted("ns/exact:443", 1)),
		sroute("wild", "*.example.com", false, weighted("ns/wild:443", 1)),
		sroute("deep", "*.deep.example.com", false, weighted("ns/deep:443", 1)),
		sroute("any", "*", false, weighted("ns/any:443", 1)))))
	for sni, want := range map[string]string{
		"x.example.com": "exact", "y.example.com": "wild", "a.b.example.com": "wild", "y.deep.example.com": "deep",
		"a.b.deep.example.com": "deep", "deep.example.com": "wild", "example.com": "any", "other.org": "any", "": "any",
	} {
		c, err := tlsClient(port, sni, nil)
		if err != nil {
			t.Errorf("SNI %q: %v", sni, err)
			continue
		}
		if got := greeting(t, bufio.NewReader(c)); got != want {
			t.Errorf("SNI %q reached %q, want %q", sni, got, want)
		}
		_ = c.Close()
	}
}

// TestTLSRouteNoMatchAndPeekErrors: a ClientHello no route serves gets the
// connection reset (what the Gateway API conformance suite takes for a
// rejection, as nginx's ssl_preread without an upstream does); bytes that
// are not a ClientHello, or a ClientHello that does not come in time, get
// the connection closed.
func TestTLSRouteNoMatchAndPeekErrors(t *testing.T) {
	a := startTLSBackend(t, "a", testCert(t, "a.example.com"))
	p := newPlaneWith(t, func(o *Options) { o.HeaderTimeout = 300 * time.Millisecond })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/a:443", a.port)}, nil,
		streamListenerOf(snapshot.ProtocolTLS, port, sroute("a", "a.example.com", false, weighted("ns/a:443", 1)))))
	lbl := []string{"listener", "test/" + strconv.Itoa(int(port)), "route", ""}

	_, err := tlsClient(port, "z.example.com", nil)
	if !isReset(err) {
		t.Errorf("handshake with an SNI no route serves: %v, want the connection reset", err)
	}
	if _, err := tlsClient(port, "", nil); !isReset(err) {
		t.Errorf("handshake without SNI and no \"*\" route: %v, want the connection reset", err)
	}
	// The two connections are refused one after the other, but each is
	// logged once its handler returns: in either order.
	testkit.EventuallyWithin(t, waitFor, "no_route counted and logged with the SNI", func() bool {
		lines := streamLogLines(t, p)
		if metricValue(t, p, "coxswain_proxy_stream_connections_total", append(lbl, "outcome", "no_route")...) != 2 || len(lines) != 2 {
			return false
		}
		snis := map[any]bool{}
		for _, l := range lines {
			if l["outcome"] != "no_route" {
				return false
			}
			snis[l["sni"]] = true
		}
		return snis["z.example.com"]
	})

	c := dialTCP(t, port)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(c); len(got) != 0 {
		t.Errorf("an HTTP request on a TLS listener got %q (%v), want the connection closed", got, err)
	}
	start := time.Now()
	c = dialTCP(t, port)
	if got, _ := io.ReadAll(c); len(got) != 0 || time.Since(start) < 250*time.Millisecond {
		t.Errorf("a silent client got %q after %v, want the connection closed after the header timeout", got, time.Since(start))
	}
	testkit.EventuallyWithin(t, waitFor, "peek errors counted", func() bool {
		return metricValue(t, p, "coxswain_proxy_stream_connections_total", append(lbl, "outcome", "peek_error")...) == 2
	})
	if a.conns.Load() != 0 {
		t.Errorf("the backend saw %d connections, want none", a.conns.Load())
	}
}

// TestTLSRouteTerminate: a terminating route completes the handshake
// with the listener's certificate, offers no ALPN, and relays plaintext
// to a plain TCP backend, half-close included.
func TestTLSRouteTerminate(t *testing.T) {
	cert := testCert(t, "term.example.com")
	b := startTCPBackend(t, "plain", readAllReply)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	l := streamListenerOf(snapshot.ProtocolTLS, port, sroute("term", "term.example.com", true, weighted("ns/plain:80", 1)))
	l.TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Hostname: "term.example.com", Certificate: cert.Name}}}
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/plain:80", b.port)}, []snapshot.Certificate{cert}, l))

	c, err := tlsClient(port, "term.example.com", poolOf(cert), "h2", "http/1.1")
	if err != nil {
		t.Fatalf("handshake with the listener's certificate: %v", err)
	}
	if proto := c.ConnectionState().NegotiatedProtocol; proto != "" {
		t.Errorf("ALPN negotiated %q, want none", proto)
	}
	if _, err := io.WriteString(c, "plain text"); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	closeWrite(c.NetConn())
	if got, err := io.ReadAll(c); err != nil || string(got) != "got:plain text" {
		t.Errorf("through the terminating route: %q, %v; want the backend to have read the plaintext", got, err)
	}
}

// TestTLSRouteMixed: one TLS listener passes one SNI through and
// terminates another.
func TestTLSRouteMixed(t *testing.T) {
	passCert, termCert := testCert(t, "pass.example.com"), testCert(t, "term.example.com")
	pass, plain := startTLSBackend(t, "pass", passCert), startTCPBackend(t, "plain", greetEcho)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	l := streamListenerOf(snapshot.ProtocolTLS, port,
		sroute("pass", "pass.example.com", false, weighted("ns/pass:443", 1)),
		sroute("term", "term.example.com", true, weighted("ns/plain:80", 1)))
	l.TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: termCert.Name}}}
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/pass:443", pass.port), portsSet("ns/plain:80", plain.port)}, []snapshot.Certificate{termCert}, l))
	for _, tc := range []struct {
		sni, want string
		cert      snapshot.Certificate
	}{{"pass.example.com", "pass", passCert}, {"term.example.com", "plain", termCert}} {
		c, err := tlsClient(port, tc.sni, poolOf(tc.cert))
		if err != nil {
			t.Fatalf("SNI %s: %v", tc.sni, err)
		}
		if got := greeting(t, bufio.NewReader(c)); got != tc.want {
			t.Errorf("SNI %s reached %q, want %q", tc.sni, got, tc.want)
		}
		_ = c.Close()
	}
}

// udpClient is a connected UDP socket toward the proxy.
type udpClient struct {
	t testing.TB
	c *net.UDPConn
}

func dialUDP(t testing.TB, port int32) *udpClient {
	t.Helper()
	c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &udpClient{t: t, c: c}
}

// ask sends msg and returns the reply, trying a few times (a datagram may
// be lost); "" when none came.
func (u *udpClient) ask(msg string, wait time.Duration) string {
	buf := make([]byte, 2048)
	for range 3 {
		if _, err := u.c.Write([]byte(msg)); err != nil {
			continue
		}
		_ = u.c.SetReadDeadline(time.Now().Add(wait))
		n, err := u.c.Read(buf)
		if err == nil {
			return string(buf[:n])
		}
	}
	return ""
}

// TestUDPEchoTwoClients: two clients at once each get their own replies,
// from the backend, in sessions of their own.
func TestUDPEchoTwoClients(t *testing.T) {
	echo := startUDPEcho(t, "u")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/u:53", echo)}, nil,
		streamListenerOf(snapshot.ProtocolUDP, port, sroute("udproute/ns/u:0", "", false, weighted("ns/u:53", 1)))))
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	sources := make([]map[string]bool, 2)
	for i := range 2 {
		u := dialUDP(t, port)
		sources[i] = map[string]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				msg := fmt.Sprintf("client%d-%d", i, j)
				parts := strings.SplitN(u.ask(msg, time.Second), "|", 3)
				if len(parts) != 3 || parts[0] != "u" || parts[2] != msg {
					errs <- fmt.Sprintf("client %d asked %q, got %q", i, msg, parts)
					return
				}
				sources[i][parts[1]] = true
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if len(sources[0]) != 1 || len(sources[1]) != 1 || fmt.Sprint(sources[0]) == fmt.Sprint(sources[1]) {
		t.Errorf("backend saw sources %v and %v, want one session socket per client", sources[0], sources[1])
	}
	lbl := []string{"listener", "test/" + strconv.Itoa(int(port)) + "/udp"}
	if got := metricValue(t, p, "coxswain_proxy_udp_sessions_active", lbl...); got != 2 {
		t.Errorf("active sessions = %v, want 2", got)
	}
	if got := metricValue(t, p, "coxswain_proxy_stream_connections_total", append(lbl, "outcome", "forwarded")...); got != 2 {
		t.Errorf("sessions opened = %v, want 2", got)
	}
	if got := metricValue(t, p, "coxswain_proxy_stream_bytes_total", append(lbl, "direction", "rx")...); got < float64(2*20*len("client0-0")) {
		t.Errorf("bytes from clients = %v", got)
	}
}

// TestUDPSessionIdleExpiry: a session without datagrams for the
// listener's UDPIdleTimeout ends and is logged; the next datagram opens a
// new one.
func TestUDPSessionIdleExpiry(t *testing.T) {
	echo := startUDPEcho(t, "u")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	l := streamListenerOf(snapshot.ProtocolUDP, port, sroute("r", "", false, weighted("ns/u:53", 1)))
	l.UDPIdleTimeout = dur(200 * time.Millisecond)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/u:53", echo)}, nil, l))
	u := dialUDP(t, port)
	if got := u.ask("one", time.Second); !strings.HasSuffix(got, "|one") {
		t.Fatalf("reply %q", got)
	}
	lbl := []string{"listener", l.Name}
	testkit.EventuallyWithin(t, waitFor, "the idle session to end and be logged", func() bool {
		lines := streamLogLines(t, p)
		return metricValue(t, p, "coxswain_proxy_udp_sessions_active", lbl...) == 0 && len(lines) == 1 &&
			lines[0]["protocol"] == "UDP" && lines[0]["bytes_rx"] == 3.0 && lines[0]["bytes_tx"].(float64) > 3
	})
	if got := u.ask("two", time.Second); !strings.HasSuffix(got, "|two") {
		t.Fatalf("reply after the expiry %q", got)
	}
	if got := metricValue(t, p, "coxswain_proxy_stream_connections_total", append(lbl, "outcome", "forwarded")...); got != 2 {
		t.Errorf("sessions opened = %v, want 2", got)
	}
}

// TestUDPSessionCap: beyond UDPMaxSessions a new client's datagrams are
// dropped and counted, until a session ends.
func TestUDPSessionCap(t *testing.T) {
	echo := startUDPEcho(t, "u")
	p := newPlaneWith(t, func(o *Options) { o.UDPMaxSessions = 2 })
	port := testkit.FreePortInt32(t)
	l := streamListenerOf(snapshot.ProtocolUDP, port, sroute("r", "", false, weighted("ns/u:53", 1)))
	l.UDPIdleTimeout = dur(time.Second)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/u:53", echo)}, nil, l))
	for i := range 2 {
		if got := dialUDP(t, port).ask("hi", time.Second); got == "" {
			t.Fatalf("client %d got no reply", i)
		}
	}
	third := dialUDP(t, port)
	if _, err := third.c.Write([]byte("me too")); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the third client's datagram to be dropped", func() bool {
		return metricValue(t, p, "coxswain_proxy_udp_datagrams_dropped_total", "listener", l.Name, "reason", "session_limit") >= 1
	})
	testkit.EventuallyWithin(t, waitFor, "the third client to be served once the others' sessions end", func() bool {
		return strings.HasSuffix(third.ask("me too", 200*time.Millisecond), "|me too")
	})
}

// TestStreamSwapKeepsOpenConnection: a spliced connection keeps its
// backend across a swap; new connections go to the new one.
func TestStreamSwapKeepsOpenConnection(t *testing.T) {
	a, b := startTCPBackend(t, "a", greetEcho), startTCPBackend(t, "b", greetEcho)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{portsSet("ns/a:1", a.port), portsSet("ns/b:1", b.port)}
	p.mustApply(t, streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTCP, port, sroute("r", "", false, weighted("ns/a:1", 1)))))
	old := dialTCP(t, port)
	br := bufio.NewReader(old)
	if got := greeting(t, br); got != "a" {
		t.Fatalf("first connection reached %q", got)
	}
	p.mustApply(t, streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTCP, port, sroute("r", "", false, weighted("ns/b:1", 1)))))
	if got := greeting(t, bufio.NewReader(dialTCP(t, port))); got != "b" {
		t.Errorf("a connection after the swap reached %q, want b", got)
	}
	if _, err := io.WriteString(old, "still there\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); line != "still there\n" {
		t.Errorf("the connection opened before the swap echoed %q, %v", line, err)
	}
}

// TestStreamTCPAndUDPOnOnePort: a port number carries a TCP and a UDP
// listener at once, is listed once in BoundPorts, and keeps one when the
// other goes.
func TestStreamTCPAndUDPOnOnePort(t *testing.T) {
	tb, ub := startTCPBackend(t, "t", greetEcho), startUDPEcho(t, "u")
	p := newTestPlane(t)
	var changes [][]int32
	var mu sync.Mutex
	p.OnBoundPortsChange(func(ports []int32) { mu.Lock(); changes = append(changes, ports); mu.Unlock() })
	port := testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{portsSet("ns/t:1", tb.port), portsSet("ns/u:1", ub)}
	tcp := streamListenerOf(snapshot.ProtocolTCP, port, sroute("t", "", false, weighted("ns/t:1", 1)))
	udp := streamListenerOf(snapshot.ProtocolUDP, port, sroute("u", "", false, weighted("ns/u:1", 1)))
	serves := func(when string, wantTCP, wantUDP bool) {
		t.Helper()
		if c, err := net.DialTimeout("tcp", addr(port), waitFor); err != nil {
			if wantTCP {
				t.Errorf("%s: TCP dial: %v", when, err)
			}
		} else {
			_ = c.SetDeadline(time.Now().Add(waitFor))
			line, _ := bufio.NewReader(c).ReadString('\n')
			if (line == "t\n") != wantTCP {
				t.Errorf("%s: TCP greeting %q, want served=%v", when, line, wantTCP)
			}
			_ = c.Close()
		}
		if wantUDP {
			if got := dialUDP(t, port).ask("x", time.Second); !strings.HasPrefix(got, "u|") {
				t.Errorf("%s: UDP reply %q", when, got)
			}
		}
		if got := p.BoundPorts(); fmt.Sprint(got) != fmt.Sprint([]int32{port}) {
			t.Errorf("%s: BoundPorts = %v, want [%d]", when, got, port)
		}
	}
	p.mustApply(t, streamSnap(sets, nil, tcp, udp))
	serves("both", true, true)
	p.mustApply(t, streamSnap(sets, nil, udp))
	testkit.EventuallyWithin(t, waitFor, "the TCP listener to go", func() bool {
		c, err := net.DialTimeout("tcp", addr(port), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	serves("UDP only", false, true)
	p.mustApply(t, streamSnap(sets, nil, tcp))
	serves("TCP only", true, false)
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 3 {
		t.Errorf("bound port callbacks = %v, want one per Apply that bound or unbound a socket", changes)
	}
}

// TestStreamProtocolSwitchHTTPToTCP: a port switches from HTTP to TCP and
// back.
func TestStreamProtocolSwitchHTTPToTCP(t *testing.T) {
	web, raw := startBackend(t, "web", false, nil), startTCPBackend(t, "raw", greetEcho)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{epSet("ns/web:80", web), portsSet("ns/raw:1", raw.port)}
	httpSnap := streamSnap(sets, nil, httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/web:80")}}}))
	tcpSnap := streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTCP, port, sroute("r", "", false, weighted("ns/raw:1", 1))))
	get := func() int {
		c := client()
		defer c.CloseIdleConnections()
		resp, err := c.Get("http://" + addr(port) + "/")
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	p.mustApply(t, httpSnap)
	if code := get(); code != http.StatusOK {
		t.Fatalf("HTTP answered %d", code)
	}
	p.mustApply(t, tcpSnap)
	if got := greeting(t, bufio.NewReader(dialTCP(t, port))); got != "raw" {
		t.Errorf("after the switch to TCP: %q", got)
	}
	p.mustApply(t, httpSnap)
	if code := get(); code != http.StatusOK {
		t.Errorf("after the switch back to HTTP: %d", code)
	}
}

// TestStreamUnbindDrains: a removed TCP listener stops accepting at once;
// its open connection goes on until DrainTimeout, then is closed.
func TestStreamUnbindDrains(t *testing.T) {
	b := startTCPBackend(t, "a", greetEcho)
	p := newPlaneWith(t, func(o *Options) { o.DrainTimeout = 500 * time.Millisecond })
	port, other := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{portsSet("ns/a:1", b.port)}
	r := sroute("r", "", false, weighted("ns/a:1", 1))
	p.mustApply(t, streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTCP, port, r), streamListenerOf(snapshot.ProtocolTCP, other, r)))
	c := dialTCP(t, port)
	br := bufio.NewReader(c)
	greeting(t, br)
	p.mustApply(t, streamSnap(sets, nil, streamListenerOf(snapshot.ProtocolTCP, other, r)))
	if d, err := net.DialTimeout("tcp", addr(port), time.Second); err == nil {
		_ = d.Close()
		t.Error("the removed listener still accepts")
	}
	if _, err := io.WriteString(c, "draining\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); line != "draining\n" {
		t.Errorf("during the drain the open connection echoed %q, %v", line, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("after the drain timeout: read %v, want the connection closed", err)
	}
	if got := greeting(t, bufio.NewReader(dialTCP(t, other))); got != "a" {
		t.Errorf("the listener that stayed: %q", got)
	}
}

// TestStreamShutdownCloses: Shutdown stops every stream listener, lets an
// open connection go on until its context ends, then closes it, and ends
// UDP sessions.
func TestStreamShutdownCloses(t *testing.T) {
	tb, ub := startTCPBackend(t, "t", greetEcho), startUDPEcho(t, "u")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/t:1", tb.port), portsSet("ns/u:1", ub)}, nil,
		streamListenerOf(snapshot.ProtocolTCP, port, sroute("t", "", false, weighted("ns/t:1", 1))),
		streamListenerOf(snapshot.ProtocolUDP, port, sroute("u", "", false, weighted("ns/u:1", 1)))))
	c := dialTCP(t, port)
	greeting(t, bufio.NewReader(c))
	if got := dialUDP(t, port).ask("x", time.Second); got == "" {
		t.Fatal("no UDP reply")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := p.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with an open connection = %v, want it to report the deadline", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the open connection after Shutdown: %v, want it closed", err)
	}
	if d, err := net.DialTimeout("tcp", addr(port), time.Second); err == nil {
		_ = d.Close()
		t.Error("the TCP listener accepts after Shutdown")
	}
	if got := metricValue(t, p, "coxswain_proxy_udp_sessions_active", "listener", "test/"+strconv.Itoa(int(port))+"/udp"); got != 0 {
		t.Errorf("UDP sessions after Shutdown = %v", got)
	}
	if got := p.BoundPorts(); len(got) != 0 {
		t.Errorf("BoundPorts after Shutdown = %v", got)
	}
}

// TestStreamIdleTimeout: a connection silent for StreamIdleTimeout is
// closed; one that moves bytes more often is not.
func TestStreamIdleTimeout(t *testing.T) {
	b := startTCPBackend(t, "a", greetEcho)
	p := newPlaneWith(t, func(o *Options) { o.StreamIdleTimeout = 400 * time.Millisecond })
	port := testkit.FreePortInt32(t)
	p.mustApply(t, streamSnap([]*snapshot.EndpointSet{portsSet("ns/a:1", b.port)}, nil,
		streamListenerOf(snapshot.ProtocolTCP, port, sroute("r", "", false, weighted("ns/a:1", 1)))))

	busy, silent := dialTCP(t, port), dialTCP(t, port)
	bbr, sbr := bufio.NewReader(busy), bufio.NewReader(silent)
	greeting(t, bbr)
	greeting(t, sbr)
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = sbr.ReadByte()
		closed <- time.Since(start)
	}()
	for i := range 15 { // 1.5 s of a byte every 100 ms: never idle
		if _, err := fmt.Fprintf(busy, "%d\n", i); err != nil {
			t.Fatalf("busy connection, write %d: %v", i, err)
		}
		if line, err := bbr.ReadString('\n'); err != nil || line != fmt.Sprintf("%d\n", i) {
			t.Fatalf("busy connection, echo %d: %q, %v", i, line, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case d := <-closed:
		if d < 300*time.Millisecond {
			t.Errorf("the silent connection was closed after %v, before the idle timeout", d)
		}
	case <-time.After(waitFor):
		t.Error("the silent connection was not closed")
	}
}
