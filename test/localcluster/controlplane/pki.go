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

package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is the per-run key material: a CA, the apiserver's serving
// certificate, an admin client certificate (group system:masters), the
// kubelet's serving certificate and the apiserver's client certificate for
// the kubelet API, and the service-account signing key pair. Everything is
// generated at every start.
type PKI struct {
	// CACertPEM is the cluster CA; the kubelet API accepts only clients
	// with a certificate from it.
	CACertPEM []byte
	// KubeletCertFile and KubeletKeyFile are the kubelet's serving
	// certificate (for the node IP) and key.
	KubeletCertFile, KubeletKeyFile string

	caCertFile, serverCertFile, serverKeyFile   string
	adminCertFile, adminKeyFile                 string
	saKeyFile, saPubFile                        string
	adminCertPEM, adminKeyPEM                   []byte
	kubeletClientCertFile, kubeletClientKeyFile string
}

// newPKI writes fresh keys and certificates into dir. ips and dnsNames are
// what the serving certificates must cover.
func newPKI(dir string, ips []net.IP, dnsNames []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &PKI{
		caCertFile:     filepath.Join(dir, "ca.crt"),
		serverCertFile: filepath.Join(dir, "apiserver.crt"),
		serverKeyFile:  filepath.Join(dir, "apiserver.key"),
		adminCertFile:  filepath.Join(dir, "admin.crt"),
		adminKeyFile:   filepath.Join(dir, "admin.key"),
		saKeyFile:      filepath.Join(dir, "sa.key"),
		saPubFile:      filepath.Join(dir, "sa.pub"),

		KubeletCertFile:       filepath.Join(dir, "kubelet.crt"),
		KubeletKeyFile:        filepath.Join(dir, "kubelet.key"),
		kubeletClientCertFile: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKeyFile:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	ca, err := newCA(ips, dnsNames)
	if err != nil {
		return nil, err
	}
	p.CACertPEM = ca.certPEM
	if err := os.WriteFile(p.caCertFile, p.CACertPEM, 0o600); err != nil {
		return nil, err
	}
	if err := p.issueCertificates(ca); err != nil {
		return nil, err
	}
	if err := p.writeServiceAccountKeys(); err != nil {
		return nil, fmt.Errorf("service-account keys: %w", err)
	}
	return p, nil
}

// issueCertificates issues every certificate but the CA's.
func (p *PKI) issueCertificates(ca *certAuthority) error {
	if _, _, err := ca.issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, p.serverCertFile, p.serverKeyFile); err != nil {
		return fmt.Errorf("apiserver certificate: %w", err)
	}
	var err error
	p.adminCertPEM, p.adminKeyPEM, err = ca.issue(3, pkix.Name{CommonName: "localcluster-admin", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, p.adminCertFile, p.adminKeyFile)
	if err != nil {
		return fmt.Errorf("admin certificate: %w", err)
	}
	if _, _, err := ca.issue(4, pkix.Name{CommonName: "localcluster-kubelet"}, x509.ExtKeyUsageServerAuth, p.KubeletCertFile, p.KubeletKeyFile); err != nil {
		return fmt.Errorf("kubelet certificate: %w", err)
	}
	if _, _, err := ca.issue(5, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, p.kubeletClientCertFile, p.kubeletClientKeyFile); err != nil {
		return fmt.Errorf("apiserver kubelet-client certificate: %w", err)
	}
	return nil
}

// writeServiceAccountKeys writes the RSA key pair service-account tokens
// are signed and verified with.
func (p *PKI) writeServiceAccountKeys() error {
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.saKeyFile, saKeyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.saPubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}), 0o600)
}

// certAuthority is the run's CA and what its serving certificates cover.
type certAuthority struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPEM  []byte
	ips      []net.IP
	dnsNames []string
}

func newCA(ips []net.IP, dnsNames []string) (*certAuthority, error) {
	now := time.Now().Add(-time.Hour)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "coxswain-localcluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certAuthority{
		cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ips: ips, dnsNames: dnsNames,
	}, nil
}

// issue writes a certificate for subject with one extended key usage (a
// server certificate covers the CA's IPs and DNS names) and its key, and
// returns both as PEM.
func (ca *certAuthority) issue(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, certFile, keyFile string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      subject,
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.IPAddresses = ca.ips
		tmpl.DNSNames = ca.dnsNames
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
