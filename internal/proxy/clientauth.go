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
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Frontend client certificate validation (Gateway spec.tls.frontend): an
// HTTPS port with snapshot.ClientValidation asks every client for a
// certificate. AllowValidOnly requires one that verifies against the CA
// bundle (tls.RequireAndVerifyClientCert), else the handshake fails;
// AllowInsecureFallback asks for one but accepts the connection without
// it, or with one that does not verify (tls.RequestClientCert).
//
// The CA bundle belongs to the snapshot like the certificates: each
// compiled listener of such a port holds its own server config (its
// certificates by SNI, the CA pool, the mode), which the port's
// GetConfigForClient picks per handshake from the state in force. A swap
// changes both for new handshakes at once, without rebinding; established
// connections keep what they negotiated, and crypto/tls verifies a
// resumed session's client chain against the pool in force.
//
// A certificate crypto/tls verified (AllowValidOnly) is passed to the
// upstream in X-SSL-Client-Cert, URL-escaped PEM as nginx's
// $ssl_client_escaped_cert; the header is always stripped from what
// clients send (isClientForwarding, hopheaders.go).

// clientCertHeader carries the client's verified certificate upstream
// (canonical form of X-SSL-Client-Cert).
const clientCertHeader = "X-Ssl-Client-Cert"

// compileClientValidation is the server config of an HTTPS listener that
// validates client certificates: lr's certificates by SNI, the CA pool
// and the mode. A bundle with no usable certificate leaves the pool empty:
// AllowValidOnly then fails every handshake.
func compileClientValidation(cv *snapshot.ClientValidation, lr *listenerRouter) *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cv.CAPEM))
	auth := tls.RequireAndVerifyClientCert
	if cv.AllowInsecureFallback {
		auth = tls.RequestClientCert
	}
	certs, port := lr.certs, lr.port
	// VerifyConnection, unlike VerifyPeerCertificate, also runs for resumed
	// sessions.
	var verify func(tls.ConnectionState) error
	if depth := int(cv.VerifyDepth); depth > 0 {
		verify = func(cs tls.ConnectionState) error {
			chains := cs.VerifiedChains
			if len(chains) == 0 {
				return nil // no certificate, or one AllowInsecureFallback let through
			}
			for _, c := range chains {
				// c is leaf, intermediates..., root: depth counts the CAs
				// above the leaf but below the root's issuer.
				if len(c)-1 <= depth {
					return nil
				}
			}
			return fmt.Errorf("client certificate chain is longer than the verify depth %d", depth)
		}
	}
	return &tls.Config{
		VerifyConnection: verify,
		MinVersion:       tls.VersionTLS12,
		NextProtos:       []string{"h2", "http/1.1"},
		ClientAuth:       auth,
		ClientCAs:        pool,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := certs.get(hello.ServerName); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("port %d: no certificate for server name %q", port, hello.ServerName)
		},
	}
}

// clientValidationConfig is the server config of a handshake on port for
// serverName: its listener's when that validates client certificates,
// else that of the SNI entry selected for serverName when it does, else
// nil (the listener's own config, which asks for none).
func (d *DataPlane) clientValidationConfig(port int32, serverName string) *tls.Config {
	if st := d.state.Load(); st != nil {
		if lr := st.router.ports[port]; lr != nil {
			if lr.clientTLS != nil {
				return lr.clientTLS
			}
			return lr.sniClientTLS.get(serverName)
		}
	}
	return nil
}

// sniConfigs select a client-validating server config by SNI as certSet
// selects certificates: exact, then the longest wildcard suffix, then the
// default entry.
type sniConfigs struct {
	exact, wild map[string]*tls.Config
	def         *tls.Config
}

// compileSNIClientValidation compiles the SNI entries that validate client
// certificates; nil when none does.
func compileSNIClientValidation(in []snapshot.SNICertificate, lr *listenerRouter) *sniConfigs {
	var sc *sniConfigs
	for _, e := range in {
		if e.ClientValidation == nil {
			continue
		}
		if sc == nil {
			sc = &sniConfigs{exact: map[string]*tls.Config{}, wild: map[string]*tls.Config{}}
		}
		cfg := compileClientValidation(e.ClientValidation, lr)
		switch h := e.Hostname; {
		case h == "":
			if sc.def == nil {
				sc.def = cfg
			}
		case strings.HasPrefix(h, "*."):
			if sc.wild[h[2:]] == nil {
				sc.wild[h[2:]] = cfg
			}
		default:
			if sc.exact[h] == nil {
				sc.exact[h] = cfg
			}
		}
	}
	return sc
}

// get is the config for serverName; nil for none (or a nil set).
func (sc *sniConfigs) get(serverName string) *tls.Config {
	if sc == nil {
		return nil
	}
	h := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if h != "" {
		if c := sc.exact[h]; c != nil {
			return c
		}
		for i := strings.IndexByte(h, '.'); i >= 0; {
			if c := sc.wild[h[i+1:]]; c != nil {
				return c
			}
			j := strings.IndexByte(h[i+1:], '.')
			if j < 0 {
				break
			}
			i += j + 1
		}
	}
	return sc.def
}

// setClientCertHeader passes the client's verified certificate upstream.
func setClientCertHeader(h http.Header, cs *tls.ConnectionState) {
	if len(cs.PeerCertificates) == 0 {
		return
	}
	h[clientCertHeader] = []string{escapeComponent(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cs.PeerCertificates[0].Raw}))}
}

// escapeComponent percent-encodes every byte but the unreserved ones (RFC
// 3986), so that "+", "/" and "=" of base64 and the newlines of PEM all
// survive any URL decoder.
func escapeComponent(b []byte) string {
	out := make([]byte, 0, len(b)+len(b)/8)
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			out = append(out, c)
		default:
			out = append(out, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&0xf])
		}
	}
	return string(out)
}
