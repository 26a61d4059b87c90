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
	"errors"
	"fmt"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

type parsedCert struct {
	certPEM, keyPEM string
	cert            *tls.Certificate
}

// compileCerts parses the snapshot's certificates; one whose PEM is the
// same in prev (may be nil) is taken from it as parsed.
func compileCerts(in []snapshot.Certificate, prev *state) (map[string]*parsedCert, error) {
	certs := make(map[string]*parsedCert, len(in))
	for _, c := range in {
		if prev != nil {
			if pc := prev.certs[c.Name]; pc != nil && pc.certPEM == c.CertPEM && pc.keyPEM == c.KeyPEM {
				certs[c.Name] = pc
				continue
			}
		}
		crt, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("certificate %q: %w", c.Name, err)
		}
		if crt.Leaf == nil && len(crt.Certificate) > 0 {
			// SNI selection among certificates sharing a hostname reads the leaf.
			if leaf, err := x509.ParseCertificate(crt.Certificate[0]); err == nil {
				crt.Leaf = leaf
			}
		}
		certs[c.Name] = &parsedCert{certPEM: c.CertPEM, keyPEM: c.KeyPEM, cert: &crt}
	}
	return certs, nil
}

// compileCertSet indexes an HTTPS listener's certificates by hostname.
func compileCertSet(in []snapshot.SNICertificate, certs map[string]*parsedCert) *certSet {
	cs := &certSet{exact: map[string][]*tls.Certificate{}, wild: map[string][]*tls.Certificate{}}
	for _, sc := range in {
		crt := certs[sc.Certificate].cert
		switch {
		case sc.Hostname == "":
			cs.def = append(cs.def, crt)
		case strings.HasPrefix(sc.Hostname, "*."):
			cs.wild[sc.Hostname[2:]] = append(cs.wild[sc.Hostname[2:]], crt)
		default:
			cs.exact[sc.Hostname] = append(cs.exact[sc.Hostname], crt)
		}
	}
	return cs
}

// certSet selects a certificate by SNI: exact, then the longest wildcard
// suffix, then the default. Several certificates bound to the same
// hostname (an HTTPS listener with more than one certificateRef shares the
// listener's hostname) are told apart by their own names: the first whose
// SANs cover the SNI wins, else the first of them.
type certSet struct {
	exact map[string][]*tls.Certificate
	wild  map[string][]*tls.Certificate
	def   []*tls.Certificate
}

func (c *certSet) get(serverName string) *tls.Certificate {
	h := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if h != "" {
		if crts, ok := c.exact[h]; ok {
			return pickBySAN(crts, h)
		}
		for i := 1; i < len(h); i++ {
			if h[i] == '.' {
				if crts, ok := c.wild[h[i+1:]]; ok {
					return pickBySAN(crts, h)
				}
			}
		}
	}
	return pickBySAN(c.def, h)
}

// pickBySAN returns the first certificate whose leaf covers serverName,
// else the first one (nil for none).
func pickBySAN(crts []*tls.Certificate, serverName string) *tls.Certificate {
	if len(crts) == 0 {
		return nil
	}
	if len(crts) > 1 && serverName != "" {
		for _, crt := range crts {
			if crt.Leaf != nil && crt.Leaf.VerifyHostname(serverName) == nil {
				return crt
			}
		}
	}
	return crts[0]
}

// certificate selects the certificate of an HTTPS listener for an SNI name
// from the current snapshot: new handshakes see new certificates, while
// established connections keep the one they negotiated.
func (d *DataPlane) certificate(port int32, serverName string) (*tls.Certificate, error) {
	st := d.state.Load()
	if st == nil {
		return nil, errors.New("no routing snapshot applied")
	}
	lr := st.router.ports[port]
	if lr == nil || lr.certs == nil {
		return nil, fmt.Errorf("port %d has no TLS certificates", port)
	}
	if c := lr.certs.get(serverName); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("no certificate for server name %q", serverName)
}
