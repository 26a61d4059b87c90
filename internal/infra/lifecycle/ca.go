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

package lifecycle

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"time"
)

// AgentSPIFFEID is the identity an agent certificate of project carries as
// its URI SAN.
func AgentSPIFFEID(project, agentID string) string {
	return "spiffe://" + project + "/agent/" + agentID
}

// NewAgentCA makes a self-signed ECDSA P-256 CA for the agents of project.
// A URI name constraint limits it to identities under spiffe://<project>.
// It returns the certificate as PEM and the private key as PKCS #8 DER.
func NewAgentCA(project string, now time.Time, validity time.Duration) (certPEM string, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "coxswain agent CA " + project, Organization: []string{"coxswain"}},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		PermittedURIDomains:   []string{project},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return "", nil, err
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", nil, err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), keyDER, nil
}

// IssueAgentCertificate signs a client certificate for agentID of project
// with the CA (certificate PEM and PKCS #8 key). The project API server does
// this at enrolment; tests use it too.
func IssueAgentCertificate(caCertPEM string, caKeyDER []byte, project, agentID string, pub crypto.PublicKey, now time.Time, validity time.Duration) ([]byte, error) {
	caCert, err := firstCertificate(caCertPEM)
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(caKeyDER)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("CA key cannot sign")
	}
	id, err := url.Parse(AgentSPIFFEID(project, agentID))
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: agentID},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{id},
	}
	return x509.CreateCertificate(rand.Reader, tmpl, caCert, pub, signer)
}

// SplitPEM returns the PEM blocks of s, each re-encoded.
func SplitPEM(s string) []string {
	var out []string
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		out = append(out, string(pem.EncodeToMemory(b)))
	}
}

func firstCertificate(s string) (*x509.Certificate, error) {
	blocks := SplitPEM(s)
	if len(blocks) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	b, _ := pem.Decode([]byte(blocks[0]))
	if b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("PEM block %q is not a certificate", b.Type)
	}
	return x509.ParseCertificate(b.Bytes)
}

func joinPEM(blocks ...string) string {
	var b strings.Builder
	for _, p := range blocks {
		b.WriteString(p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}
