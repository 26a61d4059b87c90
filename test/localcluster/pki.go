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

package localcluster

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

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki is the per-run key material: a CA, the apiserver's serving
// certificate, an admin client certificate (group system:masters) and the
// service-account signing key pair. Everything is generated at every start.
type pki struct {
	caCertPEM []byte

	caCertFile, serverCertFile, serverKeyFile string
	adminCertFile, adminKeyFile               string
	saKeyFile, saPubFile                      string
	adminCertPEM, adminKeyPEM                 []byte
	// The kubelet's serving certificate (the node IP) and the apiserver's
	// client certificate for the kubelet API (pod logs).
	kubeletCertFile, kubeletKeyFile             string
	kubeletClientCertFile, kubeletClientKeyFile string
}

// newPKI writes fresh keys and certificates into dir. hosts are the IP
// addresses and DNS names the serving certificate must cover.
func newPKI(dir string, ips []net.IP, dnsNames []string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		caCertFile:     filepath.Join(dir, "ca.crt"),
		serverCertFile: filepath.Join(dir, "apiserver.crt"),
		serverKeyFile:  filepath.Join(dir, "apiserver.key"),
		adminCertFile:  filepath.Join(dir, "admin.crt"),
		adminKeyFile:   filepath.Join(dir, "admin.key"),
		saKeyFile:      filepath.Join(dir, "sa.key"),
		saPubFile:      filepath.Join(dir, "sa.pub"),

		kubeletCertFile:       filepath.Join(dir, "kubelet.crt"),
		kubeletKeyFile:        filepath.Join(dir, "kubelet.key"),
		kubeletClientCertFile: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKeyFile:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "coxswain-localcluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(p.caCertFile, p.caCertPEM, 0o600); err != nil {
		return nil, err
	}

	issue := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, certFile, keyFile string) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now,
			NotAfter:     now.Add(10 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = ips
			tmpl.DNSNames = dnsNames
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM, err := encodeKey(key)
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
	if _, _, err := issue(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, p.serverCertFile, p.serverKeyFile); err != nil {
		return nil, fmt.Errorf("apiserver certificate: %w", err)
	}
	p.adminCertPEM, p.adminKeyPEM, err = issue(3, pkix.Name{CommonName: "localcluster-admin", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, p.adminCertFile, p.adminKeyFile)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}

	if _, _, err := issue(4, pkix.Name{CommonName: "localcluster-kubelet"}, x509.ExtKeyUsageServerAuth, p.kubeletCertFile, p.kubeletKeyFile); err != nil {
		return nil, fmt.Errorf("kubelet certificate: %w", err)
	}
	if _, _, err := issue(5, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		x509.ExtKeyUsageClientAuth, p.kubeletClientCertFile, p.kubeletClientKeyFile); err != nil {
		return nil, fmt.Errorf("apiserver kubelet-client certificate: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saKeyFile, saKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writeKubeconfig writes an admin kubeconfig for server to path.
func (p *pki) writeKubeconfig(path, server string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["localcluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caCertPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts["localcluster"] = &clientcmdapi.Context{Cluster: "localcluster", AuthInfo: "admin"}
	cfg.CurrentContext = "localcluster"
	return clientcmd.WriteToFile(*cfg, path)
}
