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

// Package identity is the controller's certificate authority for the
// discovery channel: ca.go signs SPIFFE SVIDs with the current authority
// (keeping earlier roots trusted through a rotation), secret.go loads (or
// creates, first writer wins) the CA Secret and hot-reloads an externally
// supplied one, svid.go is the controller's own serving SVID, and
// tokenreview.go authenticates ServiceAccount tokens with a TokenReview.
//
// It is a leaf: it imports nothing of Coxswain but internal/names. The
// bootstrap service that puts these together for proxies is
// internal/discovery/bootstrap.
package identity

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

const (
	// DefaultSVIDTTL is the lifetime of an issued SVID.
	DefaultSVIDTTL = 24 * time.Hour
	// CALifetime is the lifetime of a CA the controller generates.
	CALifetime = 10 * 365 * 24 * time.Hour
	// clockSkew backdates certificates a little.
	clockSkew = time.Minute
)

// CA signs SVIDs with the current discovery authority. It is safe for
// concurrent use; SetAuthority swaps the authority (hot reload), keeping
// earlier roots in the trust bundle until they expire so old and new SVIDs
// overlap during a rotation.
type CA struct {
	td  spiffeid.TrustDomain
	now func() time.Time

	mu         sync.RWMutex
	cert       *x509.Certificate
	key        crypto.Signer
	roots      []*x509.Certificate
	generation uint64
	fingerprt  [32]byte
}

// NewCA returns a CA with no authority yet; load one with SetAuthority.
func NewCA(td spiffeid.TrustDomain) *CA {
	return &CA{td: td, now: time.Now}
}

// TrustDomain of the SVIDs this CA issues.
func (ca *CA) TrustDomain() spiffeid.TrustDomain { return ca.td }

// GenerateAuthority makes a self-signed ECDSA P-256 CA valid for CALifetime
// and returns it as PEM (certificate, PKCS#8 key).
func GenerateAuthority(td spiffeid.TrustDomain, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"Coxswain"}, CommonName: "coxswain discovery CA"},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		URIs:                  []*url.URL{td.ID().URL()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// SetAuthority parses a CA certificate (the first certificate of certPEM;
// further certificates and extraRootsPEM join the trust bundle) and its key,
// and makes it the signing authority. It reports whether anything changed.
func (ca *CA) SetAuthority(certPEM, keyPEM, extraRootsPEM []byte) (bool, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return false, fmt.Errorf("CA certificate: %w", err)
	}
	if len(certs) == 0 {
		return false, errors.New("CA certificate: no PEM certificate found")
	}
	cert := certs[0]
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return false, errors.New("CA certificate is not a CA (needs basicConstraints CA:TRUE and keyCertSign)")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return false, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return false, errors.New("CA key does not match the CA certificate")
	}
	extra, err := parseCerts(extraRootsPEM)
	if err != nil {
		return false, fmt.Errorf("CA bundle: %w", err)
	}
	fp := sha256.Sum256(append(append(append([]byte{}, certPEM...), keyPEM...), extraRootsPEM...))
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.cert != nil && fp == ca.fingerprt {
		return false, nil
	}
	now := ca.now()
	roots := []*x509.Certificate{}
	add := func(c *x509.Certificate) {
		if now.After(c.NotAfter) {
			return
		}
		for _, r := range roots {
			if r.Equal(c) {
				return
			}
		}
		roots = append(roots, c)
	}
	add(cert)
	for _, c := range certs[1:] {
		if c.IsCA {
			add(c)
		}
	}
	for _, c := range extra {
		add(c)
	}
	for _, c := range ca.roots { // keep earlier roots until they expire
		add(c)
	}
	ca.cert, ca.key, ca.roots, ca.fingerprt = cert, key, roots, fp
	ca.generation++
	return true, nil
}

// Ready reports whether an authority is loaded.
func (ca *CA) Ready() bool {
	ca.mu.RLock()
	defer ca.mu.RUnlock()
	return ca.cert != nil
}

// Generation increases with every authority change.
func (ca *CA) Generation() uint64 {
	ca.mu.RLock()
	defer ca.mu.RUnlock()
	return ca.generation
}

// Bundle is the current set of roots.
func (ca *CA) Bundle() *x509bundle.Bundle {
	ca.mu.RLock()
	defer ca.mu.RUnlock()
	return x509bundle.FromX509Authorities(ca.td, ca.roots)
}

// BundlePEM is the current roots as PEM (what proxies put in their trust
// bundle file).
func (ca *CA) BundlePEM() []byte {
	ca.mu.RLock()
	defer ca.mu.RUnlock()
	var buf bytes.Buffer
	for _, r := range ca.roots {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Raw})
	}
	return buf.Bytes()
}

// GetX509BundleForTrustDomain implements x509bundle.Source.
func (ca *CA) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	if td != ca.td {
		return nil, fmt.Errorf("no bundle for trust domain %q", td)
	}
	if !ca.Ready() {
		return nil, errors.New("the discovery CA is not loaded")
	}
	return ca.Bundle(), nil
}

// Sign issues an SVID for id to the public key of the (signature-checked)
// CSR. Whatever subject and SANs the CSR asks for are ignored: the SVID
// carries exactly one URI SAN, id, and both client and server EKUs. The
// lifetime is ttl (DefaultSVIDTTL when zero), cut to the CA's own expiry.
func (ca *CA) Sign(csr *x509.CertificateRequest, id spiffeid.ID, ttl time.Duration) ([]*x509.Certificate, error) {
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("CSR signature: %w", err)
	}
	return ca.SignPublicKey(csr.PublicKey, id, ttl)
}

// SignPublicKey issues an SVID for id to pub (see Sign).
func (ca *CA) SignPublicKey(pub crypto.PublicKey, id spiffeid.ID, ttl time.Duration) ([]*x509.Certificate, error) {
	if !id.MemberOf(ca.td) {
		return nil, fmt.Errorf("SPIFFE ID %s is not in trust domain %s", id, ca.td)
	}
	if ttl <= 0 {
		ttl = DefaultSVIDTTL
	}
	ca.mu.RLock()
	cert, key := ca.cert, ca.key
	now := ca.now()
	ca.mu.RUnlock()
	if cert == nil {
		return nil, errors.New("the discovery CA is not loaded")
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(ttl)
	if notAfter.After(cert.NotAfter) {
		notAfter = cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		URIs:                  []*url.URL{id.URL()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, cert, pub, key)
	if err != nil {
		return nil, fmt.Errorf("signing the SVID: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return []*x509.Certificate{leaf}, nil
}

// EncodeCerts writes certificates as PEM.
func EncodeCerts(certs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var k any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("key cannot sign")
	}
	return s, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}
