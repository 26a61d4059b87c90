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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// httpsClient talks to the proxy's HTTPS listeners with SNI sni,
// presenting cert when it is set, over HTTP/2 when h2 is set, on
// connections of its own.
func httpsClient(sni string, cert *tls.Certificate, h2 bool) *http.Client {
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true}
	if cert != nil {
		// Presented whatever CAs the proxy names, so that a certificate
		// that does not verify reaches the proxy's verification.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	var p http.Protocols
	if h2 {
		p.SetHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return &http.Client{Timeout: waitFor, Transport: &http.Transport{TLSClientConfig: cfg, Protocols: &p}}
}

// clientCertSeen decodes the X-SSL-Client-Cert a backend received to the
// certificate's common name ("" for none).
func clientCertSeen(t testing.TB, e echo) string {
	t.Helper()
	v := e.Header.Get("X-SSL-Client-Cert")
	if v == "" {
		return ""
	}
	raw, err := url.PathUnescape(v)
	if err != nil {
		t.Fatalf("X-SSL-Client-Cert %q does not unescape: %v", v, err)
	}
	blk, _ := pem.Decode([]byte(raw))
	if blk == nil {
		t.Fatalf("X-SSL-Client-Cert %q is not PEM", raw)
	}
	crt, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return crt.Subject.CommonName
}

func clientValidationSnapshot(port, open int32, b *testBackend, srv snapshot.Certificate, cv *snapshot.ClientValidation) *snapshot.Snapshot {
	vhs := []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}}}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{srv},
		EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		Listeners: []snapshot.Listener{
			{Name: "mtls", Port: port, Protocol: snapshot.ProtocolHTTPS, VirtualHosts: vhs,
				TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: srv.Name}}, ClientValidation: cv}},
			{Name: "open", Port: open, Protocol: snapshot.ProtocolHTTPS, VirtualHosts: vhs,
				TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: srv.Name}}}},
		}}
	snapshot.Normalize(s)
	return s
}

// TestClientCertificateValidation: AllowValidOnly refuses a client with
// no certificate or one of another CA and serves one whose certificate
// verifies, passing it upstream in X-SSL-Client-Cert (whatever the client
// sent in that header); AllowInsecureFallback serves all three; a port
// without validation asks for nothing; a swap of the CA bundle applies to
// new handshakes at once while an open connection keeps being served.
func TestClientCertificateValidation(t *testing.T) {
	ca, otherCA := newTestCA(t, "clients"), newTestCA(t, "others")
	alice, bob := keyPair(t, ca.issue(t, "ns/alice", "alice", nil)), keyPair(t, otherCA.issue(t, "ns/bob", "bob", nil))
	srv := testCert(t, "app.example")
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port, open := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	at := func(port int32) string { return fmt.Sprintf("https://127.0.0.1:%d/", port) }
	get := func(c *http.Client, port int32) (result, error) {
		req, _ := http.NewRequest(http.MethodGet, at(port), nil)
		req.Header.Set("X-SSL-Client-Cert", "forged")
		resp, err := c.Do(req)
		if err != nil {
			return result{}, err
		}
		_, _ = io.Copy(io.Discard, resp.Body) // so the connection is kept
		_ = resp.Body.Close()
		e, _ := b.last()
		return result{code: resp.StatusCode, echo: e}, nil
	}
	type clientCase struct {
		name string
		cert *tls.Certificate
		want string // "refused", or the client certificate the backend sees ("" none)
	}
	check := func(mode string, cases []clientCase) {
		t.Helper()
		for _, cc := range cases {
			for _, h2 := range []bool{false, true} {
				res, err := get(httpsClient("app.example", cc.cert, h2), port)
				switch {
				case cc.want == "refused" && err == nil:
					t.Errorf("%s, %s (h2 %v): served %d, want the handshake refused", mode, cc.name, h2, res.code)
				case cc.want == "refused":
				case err != nil:
					t.Errorf("%s, %s (h2 %v): %v", mode, cc.name, h2, err)
				case res.code != 200:
					t.Errorf("%s, %s (h2 %v): %d", mode, cc.name, h2, res.code)
				case clientCertSeen(t, res.echo) != cc.want:
					t.Errorf("%s, %s (h2 %v): backend saw client certificate %q, want %q", mode, cc.name, h2, clientCertSeen(t, res.echo), cc.want)
				}
			}
		}
	}

	p.mustApply(t, clientValidationSnapshot(port, open, b, srv, &snapshot.ClientValidation{CAPEM: ca.pem}))
	check("AllowValidOnly", []clientCase{{"no certificate", nil, "refused"}, {"another CA's", &bob, "refused"}, {"a valid one", &alice, "alice"}})
	if res, err := get(httpsClient("app.example", nil, false), open); err != nil || res.code != 200 || clientCertSeen(t, res.echo) != "" {
		t.Errorf("a port without validation: %v %d, client certificate %q", err, res.code, clientCertSeen(t, res.echo))
	}

	// A connection made under the old bundle, kept open across the swap.
	kept := httpsClient("app.example", &alice, false)
	if res, err := get(kept, port); err != nil || res.code != 200 {
		t.Fatalf("before the swap: %v %d", err, res.code)
	}
	bound := p.BoundPorts()
	p.mustApply(t, clientValidationSnapshot(port, open, b, srv, &snapshot.ClientValidation{CAPEM: otherCA.pem}))
	check("after the CA swap", []clientCase{{"the old CA's", &alice, "refused"}, {"the new CA's", &bob, "bob"}})
	if res, err := get(kept, port); err != nil || res.code != 200 {
		t.Errorf("the connection opened before the swap: %v %d, want it still served", err, res.code)
	}
	if got := p.BoundPorts(); fmt.Sprint(got) != fmt.Sprint(bound) {
		t.Errorf("bound ports changed across the swap: %v → %v", bound, got)
	}

	p.mustApply(t, clientValidationSnapshot(port, open, b, srv, &snapshot.ClientValidation{CAPEM: ca.pem, AllowInsecureFallback: true}))
	check("AllowInsecureFallback", []clientCase{{"no certificate", nil, ""}, {"another CA's", &bob, ""}, {"a valid one", &alice, ""}})
}

// TestClientCertHeaderStripped: a client cannot hand the upstream an
// X-SSL-Client-Cert of its own on any path: the fast path with the lean
// client writing the client's headers, net/http's with a header map.
func TestClientCertHeaderStripped(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}})
	for path, mk := range leanAndTransport(t, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
		req := mk()
		req.Header.Set("X-SSL-Client-Cert", "forged")
		req.Header.Set("x-ssl-client-cert", "forged too")
		if res := do(t, client(), req); res.code != 200 || len(res.echo.Header["X-Ssl-Client-Cert"]) != 0 {
			t.Errorf("via %s: %d, upstream saw X-SSL-Client-Cert %q", path, res.code, res.echo.Header["X-Ssl-Client-Cert"])
		}
	}
	if p.fastServed(port) == 0 {
		t.Error("the fast path served none of them")
	}
}

// TestSNIClientCertificateValidation: client certificates verified for
// one SNI entry of a port only (Ingress auth-tls-secret): that host's
// handshakes need a valid certificate, the other host's need none, and a
// request for the validating host over the other SNI gets 400 (its route
// requires a verified certificate), so the check cannot be gone around.
func TestSNIClientCertificateValidation(t *testing.T) {
	ca, otherCA := newTestCA(t, "clients"), newTestCA(t, "others")
	alice, bob := keyPair(t, ca.issue(t, "ns/alice", "alice", nil)), keyPair(t, otherCA.issue(t, "ns/bob", "bob", nil))
	srv := testCert(t, "mtls.example", "open.example")
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	cv := &snapshot.ClientValidation{CAPEM: ca.pem, VerifyDepth: 1}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{srv},
		EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		Listeners: []snapshot.Listener{{Name: "ingress/443", Port: port, Protocol: snapshot.ProtocolHTTPS,
			TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{
				{Hostname: "mtls.example", Certificate: srv.Name, ClientValidation: cv},
				{Hostname: "open.example", Certificate: srv.Name},
			}},
			VirtualHosts: []*snapshot.VirtualHost{
				{Hostname: "mtls.example", Routes: []snapshot.Route{{ID: "mtls", Backends: to("ns/b:80"), RequireClientCertificate: true}}},
				{Hostname: "open.example", Routes: []snapshot.Route{{ID: "open", Backends: to("ns/b:80")}}},
			}}}}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	get := func(sni, host string, cert *tls.Certificate) (result, error) {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil)
		req.Host = host
		resp, err := httpsClient(sni, cert, false).Do(req)
		if err != nil {
			return result{}, err
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		e, _ := b.last()
		return result{code: resp.StatusCode, echo: e}, nil
	}
	if _, err := get("mtls.example", "mtls.example", nil); err == nil {
		t.Error("mtls.example without a certificate: served, want the handshake refused")
	}
	if _, err := get("mtls.example", "mtls.example", &bob); err == nil {
		t.Error("mtls.example with another CA's certificate: served, want the handshake refused")
	}
	if res, err := get("mtls.example", "mtls.example", &alice); err != nil || res.code != 200 || clientCertSeen(t, res.echo) != "alice" {
		t.Errorf("mtls.example with a valid certificate: %v %d, backend saw %q", err, res.code, clientCertSeen(t, res.echo))
	}
	if res, err := get("open.example", "open.example", nil); err != nil || res.code != 200 {
		t.Errorf("open.example without a certificate: %v %d, want 200", err, res.code)
	}
	// The other SNI with mtls.example's Host: 421 (another entry of the
	// port), and even where that check does not apply (plain HTTP, the
	// Ingress's port 80) the route's requirement answers 400.
	if res, err := get("open.example", "mtls.example", nil); err != nil || (res.code != http.StatusMisdirectedRequest && res.code != http.StatusBadRequest) {
		t.Errorf("mtls.example's route over open.example's handshake: %v %d, want 421 or 400", err, res.code)
	}
	plain := testkit.FreePortInt32(t)
	s.Listeners = append(s.Listeners, httpListener(plain, snapshot.VirtualHost{Hostname: "*",
		Routes: []snapshot.Route{{ID: "mtls-http", Backends: to("ns/b:80"), RequireClientCertificate: true}}}))
	snapshot.Normalize(s)
	p.mustApply(t, s)
	if res := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", plain)); res.code != http.StatusBadRequest {
		t.Errorf("a route that requires a client certificate over plain HTTP: %d, want 400", res.code)
	}
}

// intermediate is a CA signed by ca.
func (ca *testCA) intermediate(t testing.TB, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	crt, _ := x509.ParseCertificate(der)
	return &testCA{cert: crt, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// TestClientCertificateVerifyDepth: a client certificate issued by an
// intermediate CA (chain leaf, intermediate, root) is refused at verify
// depth 1 and accepted at depth 2; one issued by the root passes both.
func TestClientCertificateVerifyDepth(t *testing.T) {
	root := newTestCA(t, "root")
	mid := root.intermediate(t, "intermediate")
	deep := keyPair(t, mid.issue(t, "ns/deep", "deep", nil))
	deep.Certificate = append(deep.Certificate, mid.cert.Raw)
	direct := keyPair(t, root.issue(t, "ns/direct", "direct", nil))
	srv := testCert(t, "app.example")
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port, open := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	served := func(cert *tls.Certificate) bool {
		resp, err := httpsClient("app.example", cert, false).Get(fmt.Sprintf("https://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	for _, tc := range []struct {
		depth        int32
		deep, direct bool
	}{{1, false, true}, {2, true, true}} {
		p.mustApply(t, clientValidationSnapshot(port, open, b, srv, &snapshot.ClientValidation{CAPEM: root.pem, VerifyDepth: tc.depth}))
		if got := served(&deep); got != tc.deep {
			t.Errorf("depth %d, intermediate-issued certificate: served %v, want %v", tc.depth, got, tc.deep)
		}
		if got := served(&direct); got != tc.direct {
			t.Errorf("depth %d, root-issued certificate: served %v, want %v", tc.depth, got, tc.direct)
		}
	}
}
