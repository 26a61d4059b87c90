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

package trust

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// ErrInvalidAgentCA is wrapped by ParseAgentCA's errors: a Project's
// agentCA.certificates is not a list of PEM certificates.
var ErrInvalidAgentCA = errors.New("agentCA.certificates is not valid PEM certificates")

// ParseAgentCA parses a Project's spec.agentCA.certificates strictly: one or
// more PEM blocks of type CERTIFICATE, each a parseable X.509 certificate,
// with nothing but whitespace around them. x509.CertPool.AppendCertsFromPEM
// would silently skip a bad block and keep the rest; a consumer that trusts
// what it parsed must instead see that the field is broken.
func ParseAgentCA(s string) ([]*x509.Certificate, error) {
	rest := []byte(s)
	var certs []*x509.Certificate
	for {
		// pem.Decode skips any text before a block; a strict parse must not.
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if len(rest) == 0 {
			break
		}
		var b *pem.Block
		if bytes.HasPrefix(rest, []byte("-----BEGIN ")) {
			b, rest = pem.Decode(rest)
		}
		if b == nil {
			return nil, fmt.Errorf("%w: block %d is not PEM", ErrInvalidAgentCA, len(certs)+1)
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) > 0 {
			return nil, fmt.Errorf("%w: block %d is a %q PEM block, not a plain CERTIFICATE", ErrInvalidAgentCA, len(certs)+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: block %d: %w", ErrInvalidAgentCA, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: no certificate", ErrInvalidAgentCA)
	}
	return certs, nil
}
