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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// testCA is a certificate authority for tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newTestCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	crt, _ := x509.ParseCertificate(der)
	return &testCA{cert: crt, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// issue signs a leaf for DNS names and URIs, usable for servers and
// clients, named name in the snapshot.
func (ca *testCA) issue(t testing.TB, name, cn string, dns []string, uris ...string) snapshot.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dns,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot.Certificate{
		Name:    name,
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})),
	}
}

func keyPair(t testing.TB, c snapshot.Certificate) tls.Certificate {
	t.Helper()
	crt, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	return crt
}

// startHTTPSBackend is a testBackend that terminates TLS with cert,
// requires a client certificate from clientCAs when it is set, and
// speaks h2 only when h2 is set (else HTTP/1.1). Without a handler it
// echoes, and reports what it saw of TLS in response headers: X-Sni,
// X-Alpn, X-Client-Cn, X-Client-Serial.
func startHTTPSBackend(t testing.TB, name string, cert snapshot.Certificate, clientCAs *x509.CertPool, h2 bool, handler http.HandlerFunc, adjust ...func(*tls.Config)) *testBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBackend{name: name, addr: ln.Addr().String(), port: int32(ln.Addr().(*net.TCPAddr).Port)}
	inner := &testBackend{name: name}
	b.extra = func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Sni", r.TLS.ServerName)
		h.Set("X-Alpn", r.TLS.NegotiatedProtocol)
		if len(r.TLS.PeerCertificates) > 0 {
			h.Set("X-Client-Cn", r.TLS.PeerCertificates[0].Subject.CommonName)
			h.Set("X-Client-Serial", r.TLS.PeerCertificates[0].SerialNumber.String())
		}
		inner.ServeHTTP(w, r)
	}
	if handler != nil {
		b.extra = handler
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{keyPair(t, cert)}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	for _, f := range adjust {
		f(cfg)
	}
	var p http.Protocols
	if h2 {
		p.SetHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	b.srv = &http.Server{Handler: b, Protocols: &p, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go func() { _ = b.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

func tlsSet(name string, u *snapshot.UpstreamTLS, bs ...*testBackend) *snapshot.EndpointSet {
	es := epSet(name, bs...)
	es.TLS = u
	return es
}

// logPlane is a test plane whose operational log is kept.
func logPlane(t testing.TB, set func(*Options)) (*testPlane, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	p := newPlaneWith(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if set != nil {
			set(o)
		}
	})
	return p, logs
}

// TestUpstreamTLSVerification: every way a BackendTLSPolicy verifies a
// backend, over both upstream clients: the CA bundle and ServerName (SNI
// and hostname check), SubjectAltNames by DNS name (wildcards in the
// certificate) and by URI, and each mismatch, an unknown CA, system roots
// that do not hold the backend's CA and a policy without any CA — each
// failure answered 502 with a warning naming the route, the upstream
// and the crypto/tls reason, counted as kind "tls".
func TestUpstreamTLSVerification(t *testing.T) {
	ca, other := newTestCA(t, "backend-ca"), newTestCA(t, "other-ca")
	srvCert := ca.issue(t, "ns/backend-tls", "backend", []string{"backend.example", "*.wild.example"}, "spiffe://cluster.local/ns/app/sa/backend")
	b := startHTTPSBackend(t, "tls", srvCert, nil, false, nil)
	p, logs := logPlane(t, nil)
	port := testkit.FreePortInt32(t)
	cases := []struct {
		name string
		tls  snapshot.UpstreamTLS
		ok   bool
		why  string // in the logged error of a failure
	}{
		{"ca", snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: ca.pem}, true, ""},
		{"ca-wildcard-name", snapshot.UpstreamTLS{ServerName: "x.wild.example", CAPEM: ca.pem}, true, ""},
		{"unknown-ca", snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: other.pem}, false, "unknown authority"},
		{"wrong-hostname", snapshot.UpstreamTLS{ServerName: "other.example", CAPEM: ca.pem}, false, "other.example"},
		{"san-dns", snapshot.UpstreamTLS{ServerName: "other.example", CAPEM: ca.pem,
			SubjectAltNames: []snapshot.SubjectAltName{{Hostname: "nope.example"}, {Hostname: "backend.example"}}}, true, ""},
		{"san-dns-wildcard", snapshot.UpstreamTLS{ServerName: "other.example", CAPEM: ca.pem,
			SubjectAltNames: []snapshot.SubjectAltName{{Hostname: "a.wild.example"}}}, true, ""},
		{"san-uri", snapshot.UpstreamTLS{ServerName: "other.example", CAPEM: ca.pem,
			SubjectAltNames: []snapshot.SubjectAltName{{URI: "spiffe://cluster.local/ns/app/sa/backend"}}}, true, ""},
		{"san-uri-mismatch", snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: ca.pem,
			SubjectAltNames: []snapshot.SubjectAltName{{URI: "spiffe://cluster.local/ns/app/sa/other"}}}, false, "none of the names"},
		{"san-dns-mismatch", snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: ca.pem,
			SubjectAltNames: []snapshot.SubjectAltName{{Hostname: "a.b.wild.example"}, {Hostname: "nope.example"}}}, false, "none of the names"},
		{"system-roots", snapshot.UpstreamTLS{ServerName: "backend.example", SystemRoots: true}, false, "x509|trust store"},
		{"no-ca", snapshot.UpstreamTLS{ServerName: "backend.example"}, false, "no CA"},
	}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	vh := snapshot.VirtualHost{Hostname: "*"}
	for _, tc := range cases {
		set := "ns/" + tc.name + ":443"
		s.EndpointSets = append(s.EndpointSets, tlsSet(set, &tc.tls, b))
		vh.Routes = append(vh.Routes, snapshot.Route{ID: "r-" + tc.name, Match: prefix("/" + tc.name), Backends: to(set)})
	}
	s.Listeners = []snapshot.Listener{httpListener(port, vh)}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	c := client()
	for _, tc := range cases {
		for path, res := range viaLeanAndTransport(t, c, fmt.Sprintf("http://127.0.0.1:%d/%s", port, tc.name)) {
			if tc.ok {
				if res.code != 200 || res.header.Get("X-Sni") != tc.tls.ServerName || res.header.Get("X-Alpn") != "http/1.1" {
					t.Errorf("%s via %s: %d, SNI %q, ALPN %q; want 200 with SNI %q over http/1.1", tc.name, path, res.code, res.header.Get("X-Sni"), res.header.Get("X-Alpn"), tc.tls.ServerName)
				}
				continue
			}
			if res.code != http.StatusBadGateway || !strings.Contains(res.body, "TLS") {
				t.Errorf("%s via %s: %d %q, want 502 naming TLS", tc.name, path, res.code, res.body)
			}
		}
		if !tc.ok {
			route := "r-" + tc.name
			if got, want := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", route, "kind", "tls"), len(leanAndTransport(t, "")); got != float64(want) {
				t.Errorf("%s: %v TLS upstream errors counted, want %d (one per request)", tc.name, got, want)
			}
			found := false
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "route="+route+" ") && strings.Contains(line, "upstream="+b.addr) {
					for _, why := range strings.Split(tc.why, "|") {
						found = found || strings.Contains(line, why)
					}
				}
			}
			if !found {
				t.Errorf("%s: no warning naming route %s, upstream %s and %q in the log:\n%s", tc.name, route, b.addr, tc.why, logs.String())
			}
		}
	}
}

// TestUpstreamTLSClientCertificate: a backend that requires a client
// certificate gets the one the set names, and refuses the proxy (502)
// when the set names none: over TLS 1.3, where the refusal comes after
// the handshake, and over TLS 1.2, where it fails the handshake (counted
// as kind "tls").
func TestUpstreamTLSClientCertificate(t *testing.T) {
	ca, clientCA := newTestCA(t, "backend-ca"), newTestCA(t, "client-ca")
	srvCert := ca.issue(t, "ns/srv", "srv", []string{"backend.example"})
	b13 := startHTTPSBackend(t, "mtls13", srvCert, clientCA.pool(), false, nil)
	b12 := startHTTPSBackend(t, "mtls12", srvCert, clientCA.pool(), false, nil, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })
	clientCert := clientCA.issue(t, "ns/proxy-client", "coxswain-proxy", nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	with := snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: ca.pem, ClientCertificate: clientCert.Name}
	without := snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: ca.pem}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{clientCert}}
	vh := snapshot.VirtualHost{Hostname: "*"}
	for v, b := range map[string]*testBackend{"13": b13, "12": b12} {
		s.EndpointSets = append(s.EndpointSets, tlsSet("ns/with"+v+":443", &with, b), tlsSet("ns/without"+v+":443", &without, b))
		vh.Routes = append(vh.Routes,
			snapshot.Route{ID: "with" + v, Match: prefix("/with" + v), Backends: to("ns/with" + v + ":443")},
			snapshot.Route{ID: "without" + v, Match: prefix("/without" + v), Backends: to("ns/without" + v + ":443")})
	}
	s.Listeners = []snapshot.Listener{httpListener(port, vh)}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	c := client()
	for _, v := range []string{"13", "12"} {
		for path, res := range viaLeanAndTransport(t, c, fmt.Sprintf("http://127.0.0.1:%d/with%s", port, v)) {
			if res.code != 200 || res.header.Get("X-Client-Cn") != "coxswain-proxy" {
				t.Errorf("TLS 1.%s with a client certificate via %s: %d, client CN %q", v[1:], path, res.code, res.header.Get("X-Client-Cn"))
			}
		}
		for path, res := range viaLeanAndTransport(t, c, fmt.Sprintf("http://127.0.0.1:%d/without%s", port, v)) {
			if res.code != http.StatusBadGateway {
				t.Errorf("TLS 1.%s without a client certificate via %s: %d %q, want 502", v[1:], path, res.code, res.body)
			}
		}
	}
	if got, want := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", "without12", "kind", "tls"), len(leanAndTransport(t, "")); got != float64(want) {
		t.Errorf("%v TLS errors counted for the client a TLS 1.2 backend refused, want %d (one per request)", got, want)
	}
}

// TestUpstreamTLSPoolsFollowSettings: a pooled connection is never reused
// once its set's TLS settings change: a CA that no longer verifies the
// backend fails the next request on both clients, though their pools held
// a verified connection; a rotated client certificate is presented on the
// next request.
func TestUpstreamTLSPoolsFollowSettings(t *testing.T) {
	ca, other, clientCA := newTestCA(t, "backend-ca"), newTestCA(t, "other-ca"), newTestCA(t, "client-ca")
	b := startHTTPSBackend(t, "tls", ca.issue(t, "ns/srv", "srv", []string{"backend.example"}), clientCA.pool(), false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	// A set whose own settings are unchanged is the very one of the last
	// snapshot, as discovery's Assembler hands it over: a rotated client
	// certificate changes only the snapshot's certificates.
	sets := map[string]*snapshot.EndpointSet{} // by CA
	snap := func(caPEM string, client snapshot.Certificate) *snapshot.Snapshot {
		set := sets[caPEM]
		if set == nil {
			u := snapshot.UpstreamTLS{ServerName: "backend.example", CAPEM: caPEM, ClientCertificate: client.Name}
			set = tlsSet("ns/b:443", &u, b)
			sets[caPEM] = set
		}
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{client},
			EndpointSets: []*snapshot.EndpointSet{set},
			Listeners:    []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:443")}}})}}
		snapshot.Normalize(s)
		return s
	}
	clientA := clientCA.issue(t, "ns/client", "client-a", nil)
	clientB := clientCA.issue(t, "ns/client", "client-b", nil) // the same Secret, rotated
	target := fmt.Sprintf("http://127.0.0.1:%d/", port)
	c := client()

	p.mustApply(t, snap(ca.pem, clientA))
	for path, res := range viaLeanAndTransport(t, c, target) {
		if res.code != 200 || res.header.Get("X-Client-Cn") != "client-a" {
			t.Fatalf("before the rotation via %s: %d, client %q", path, res.code, res.header.Get("X-Client-Cn"))
		}
	}
	p.mustApply(t, snap(ca.pem, clientB))
	for path, res := range viaLeanAndTransport(t, c, target) {
		if res.code != 200 || res.header.Get("X-Client-Cn") != "client-b" {
			t.Errorf("after the client certificate rotated via %s: %d, client %q (a connection made with the old one was reused)", path, res.code, res.header.Get("X-Client-Cn"))
		}
	}
	p.mustApply(t, snap(other.pem, clientB))
	for path, res := range viaLeanAndTransport(t, c, target) {
		if res.code != http.StatusBadGateway {
			t.Errorf("after the CA changed via %s: %d, want 502 (a connection verified under the old CA was reused)", path, res.code)
		}
	}
	p.mustApply(t, snap(ca.pem, clientB))
	for path, res := range viaLeanAndTransport(t, c, target) {
		if res.code != 200 {
			t.Errorf("after the CA was restored via %s: %d", path, res.code)
		}
	}
	// The pools of the replaced settings were dropped on Apply: only the
	// current key has idle connections in the lean client.
	p.lean.mu.Lock()
	keys := len(p.lean.idle)
	p.lean.mu.Unlock()
	if keys > 1 {
		t.Errorf("the lean client keeps %d pools for one endpoint, want the current one only", keys)
	}
}

// TestUpstreamTLSH2: a gRPC-style set (AppProtocol kubernetes.io/h2c)
// with TLS speaks HTTP/2 over TLS, negotiated by ALPN h2.
func TestUpstreamTLSH2(t *testing.T) {
	ca := newTestCA(t, "backend-ca")
	b := startHTTPSBackend(t, "h2", ca.issue(t, "ns/srv", "srv", []string{"grpc.example"}), nil, true, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	es := tlsSet("ns/grpc:443", &snapshot.UpstreamTLS{ServerName: "grpc.example", CAPEM: ca.pem}, b)
	es.AppProtocol = snapshot.AppProtocolH2C
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{es},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/grpc:443")}}})}})
	for path, res := range viaLeanAndTransport(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)) {
		if res.code != 200 || res.echo.Proto != "HTTP/2.0" || res.header.Get("X-Alpn") != "h2" {
			t.Errorf("via %s: %d over %q, ALPN %q; want 200 over HTTP/2.0 negotiated as h2", path, res.code, res.echo.Proto, res.header.Get("X-Alpn"))
		}
	}
}

// TestUpstreamTLSWebSocketAndMirror: a WebSocket upgrade and a mirrored
// copy reach TLS backends over TLS.
func TestUpstreamTLSWebSocketAndMirror(t *testing.T) {
	ca := newTestCA(t, "backend-ca")
	srvCert := ca.issue(t, "ns/srv", "srv", []string{"ws.example"})
	ws := startHTTPSBackend(t, "ws", srvCert, nil, false, func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want an upgrade over TLS", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		line, err := brw.ReadString('\n')
		if err == nil {
			_, _ = brw.WriteString("tls:" + line)
			_ = brw.Flush()
		}
	})
	mirrorSeen := make(chan string, 4)
	mir := startHTTPSBackend(t, "mirror", srvCert, nil, false, func(_ http.ResponseWriter, r *http.Request) {
		mirrorSeen <- r.URL.Path + " " + r.TLS.ServerName
	})
	plain := startBackend(t, "plain", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	u := snapshot.UpstreamTLS{ServerName: "ws.example", CAPEM: ca.pem}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{tlsSet("ns/ws:443", &u, ws), tlsSet("ns/mirror:443", &u, mir), epSet("ns/plain:80", plain)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "ws", Match: prefix("/chat"), Backends: to("ns/ws:443")},
			{ID: "mirrored", Match: prefix("/mirrored"), Backends: to("ns/plain:80"), Mirrors: []snapshot.Mirror{{EndpointSet: "ns/mirror:443"}}},
		}})}}
	snapshot.Normalize(s)
	p.mustApply(t, s)

	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), waitFor)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(waitFor))
	_, _ = io.WriteString(conn, "GET /chat HTTP/1.1\r\nHost: ws.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %d", resp.StatusCode)
	}
	_, _ = io.WriteString(conn, "hello\n")
	if got, err := br.ReadString('\n'); err != nil || got != "tls:hello\n" {
		t.Errorf("through the upgraded TLS connection: %q, %v", got, err)
	}

	if res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/mirrored", port)); res.code != 200 || res.echo.Backend != "plain" {
		t.Fatalf("mirrored request: %d from %q", res.code, res.echo.Backend)
	}
	select {
	case got := <-mirrorSeen:
		if got != "/mirrored ws.example" {
			t.Errorf("the TLS mirror saw %q", got)
		}
	case <-time.After(waitFor):
		t.Error("the mirror over TLS never arrived")
	}
}

// TestDialTLSGathersHTTP2: an upstream TLS connection on which ALPN chose
// h2 gathers its writes (coalesce.go); one speaking HTTP/1.1 writes them
// as they come.
func TestDialTLSGathersHTTP2(t *testing.T) {
	ca := newTestCA(t, "backend-ca")
	for _, h2 := range []bool{true, false} {
		b := startHTTPSBackend(t, "b", ca.issue(t, "ns/srv", "srv", []string{"grpc.example"}), nil, h2, nil)
		u := compileUpstreamTLS(&snapshot.UpstreamTLS{ServerName: "grpc.example", CAPEM: ca.pem}, h2, nil, nil)
		nc, _, err := dialTLS(context.Background(), &net.Dialer{Timeout: 5 * time.Second}, b.addr, u)
		if err != nil {
			t.Fatalf("h2=%v: %v", h2, err)
		}
		cc, ok := nc.(*tls.Conn).NetConn().(*coalescingConn)
		if !ok || cc.gathering != h2 {
			t.Errorf("h2=%v: the connection under TLS gathers writes: %v", h2, ok && cc.gathering)
		}
		_ = nc.Close()
	}
}
