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
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Upstream TLS (BackendTLSPolicy): every connection to an endpoint of a
// set with snapshot.UpstreamTLS is TLS, whichever client opens it (the
// lean client, http.Transport for streamed bodies, upgrades and h2,
// mirrors).
//
// Verification: the chain must verify against the set's CA bundle or the
// system roots, and the leaf must carry ServerName (DNS SAN) or, when
// SubjectAltNames are set, one of those instead (a DNS SAN, wildcards in
// the certificate matching as usual, or a URI SAN, exactly). A set with
// neither a usable CA bundle nor the system roots fails every handshake.
// crypto/tls cannot verify against names other than ServerName, so the
// config turns its own verification off and VerifyConnection does all of
// it, on every connection (resumed ones too).
//
// Pools: an endpoint's connection pools are keyed by poolKey, its address
// plus the fingerprint of the set's TLS settings. Settings that change
// (another CA, SNI, SAN list, a rotated client certificate) give new
// keys, so no request ever reuses a connection made under the old
// settings; the old keys are no longer live and their pools are dropped
// on Apply (dropUpstreams, reaper.go) like those of a departed address.

// upstreamTLS is the compiled TLS settings of one endpoint set. It is
// immutable: a change of settings compiles a new one, with a new
// fingerprint.
type upstreamTLS struct {
	// fp is the fingerprint of the settings; part of every pool key.
	fp         string
	serverName string
	cfg        *tls.Config
	// roots verify the backend's chain; nil with fail set.
	roots *x509.CertPool
	// sans replace serverName in the name check when set.
	sans []snapshot.SubjectAltName
	// fail, when set, fails every handshake (no usable CA).
	fail error
}

// upstreamTLSError is a failed TLS handshake or verification toward an
// upstream: answered 502, counted as kind "tls", logged at Warn.
type upstreamTLSError struct{ err error }

func (e *upstreamTLSError) Error() string { return "upstream TLS handshake: " + e.err.Error() }
func (e *upstreamTLSError) Unwrap() error { return e.err }

// systemRoots is the system trust store, loaded once.
var systemRoots = sync.OnceValues(x509.SystemCertPool)

// compileUpstreamTLS compiles a set's TLS settings; prev (may be nil) is
// returned instead when its fingerprint is the same, so that the
// endpoints keep their pool keys and in-flight counts.
func compileUpstreamTLS(in *snapshot.UpstreamTLS, h2 bool, certs map[string]*parsedCert, prev *upstreamTLS) *upstreamTLS {
	var client *parsedCert
	if in.ClientCertificate != "" {
		client = certs[in.ClientCertificate]
	}
	fp := tlsFingerprint(in, h2, client)
	if prev != nil && prev.fp == fp {
		return prev
	}
	u := &upstreamTLS{fp: fp, serverName: in.ServerName, sans: slices.Clone(in.SubjectAltNames)}
	switch {
	case in.CAPEM != "":
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM([]byte(in.CAPEM)) {
			u.roots = pool
		} else {
			u.fail = errors.New("the backend's CA bundle holds no usable certificate")
		}
	case in.SystemRoots:
		switch pool, err := systemRoots(); {
		case err != nil:
			u.fail = fmt.Errorf("the system trust store is unavailable: %w", err)
		case pool == nil:
			u.fail = errors.New("the system trust store is empty")
		default:
			u.roots = pool
		}
	default:
		u.fail = errors.New("no CA to verify the backend with (the policy's CA references are unusable)")
	}
	alpn := "http/1.1"
	if h2 {
		alpn = "h2"
	}
	u.cfg = &tls.Config{
		ServerName: in.ServerName,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{alpn},
		// crypto/tls can only check ServerName; VerifyConnection verifies
		// the chain and the names (ServerName or the SANs) itself.
		InsecureSkipVerify: true, //nolint:gosec // G402: VerifyConnection verifies the chain against the roots and the names itself
		VerifyConnection:   u.verify,
	}
	if client != nil {
		crt := client.cert
		// Presented whatever CAs the backend names: it decides.
		u.cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return crt, nil }
	}
	return u
}

// tlsFingerprint identifies a set's TLS settings: equal settings (the
// client certificate by its PEM) give equal fingerprints.
func tlsFingerprint(in *snapshot.UpstreamTLS, h2 bool, client *parsedCert) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		_, _ = h.Write(n[:])
		_, _ = h.Write([]byte(s))
	}
	field(in.ServerName)
	field(in.CAPEM)
	field(fmt.Sprint(in.SystemRoots, h2, len(in.SubjectAltNames)))
	for _, san := range in.SubjectAltNames {
		field(san.Hostname)
		field(san.URI)
	}
	if client != nil {
		field(client.certPEM)
		field(client.keyPEM)
	} else {
		field("")
		field("")
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// poolKey names the upstream connection pools of an endpoint: its
// address alone for cleartext, with the TLS fingerprint for TLS.
func poolKey(addr string, u *upstreamTLS) string {
	if u == nil {
		return addr
	}
	return addr + "|tls:" + u.fp
}

// verify is the whole verification of a backend's certificate: the chain
// against the roots, then the names.
func (u *upstreamTLS) verify(cs tls.ConnectionState) error {
	if u.fail != nil {
		return u.fail
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the backend presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	opts := x509.VerifyOptions{Roots: u.roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if len(cs.PeerCertificates) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	if _, err := leaf.Verify(opts); err != nil {
		return err
	}
	return u.verifyNames(leaf)
}

// verifyNames checks that the leaf carries ServerName, or one of the
// SubjectAltNames when they are set.
func (u *upstreamTLS) verifyNames(leaf *x509.Certificate) error {
	if len(u.sans) == 0 {
		return leaf.VerifyHostname(u.serverName)
	}
	for _, san := range u.sans {
		if san.Hostname != "" && leaf.VerifyHostname(san.Hostname) == nil {
			return nil
		}
		if san.URI != "" {
			for _, uri := range leaf.URIs {
				if uri.String() == san.URI {
					return nil
				}
			}
		}
	}
	want := make([]string, 0, len(u.sans))
	for _, san := range u.sans {
		want = append(want, san.Hostname+san.URI)
	}
	return fmt.Errorf("x509: the certificate carries none of the names %s", strings.Join(want, ", "))
}

// dialTLS connects to an upstream: TCP, then with u (nil: cleartext) the
// TLS handshake, bounded by the dial timeout (DialTimeout) besides ctx.
// It returns the connection to use and the socket under it. A handshake
// or verification failure is an *upstreamTLSError.
func dialTLS(ctx context.Context, dialer *net.Dialer, addr string, u *upstreamTLS) (nc, raw net.Conn, err error) {
	raw, err = dialer.DialContext(ctx, "tcp", addr)
	if err != nil || u == nil {
		return raw, raw, err
	}
	// An HTTP/2 connection's writes are gathered once ALPN chose h2
	// (coalesce.go); HTTP/1.1's go to the socket as they come.
	cc := newPassingConn(raw)
	tc := tls.Client(cc, u.cfg)
	hctx := ctx
	if dialer.Timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, dialer.Timeout)
		defer cancel()
	}
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = raw.Close()
		if ctx.Err() != nil {
			return nil, nil, err // the exchange was canceled or timed out, not a TLS failure
		}
		return nil, nil, &upstreamTLSError{err: err}
	}
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		cc.gather()
	}
	return tc, raw, nil
}
