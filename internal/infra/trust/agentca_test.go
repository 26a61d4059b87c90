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

package trust_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

func caPEM(t *testing.T, cn string) string {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestParseAgentCA(t *testing.T) {
	a, b := caPEM(t, "a"), caPEM(t, "b")
	good := map[string]int{
		"one":                 1,
		"two":                 2,
		"surrounding blanks":  2,
		"no trailing newline": 1,
	}
	inputs := map[string]string{
		"one":                 a,
		"two":                 a + b,
		"surrounding blanks":  "\n  " + a + "\n\n" + b + "\n\t",
		"no trailing newline": a[:len(a)-1],
	}
	for name, n := range good {
		certs, err := trust.ParseAgentCA(inputs[name])
		if err != nil || len(certs) != n {
			t.Errorf("%s: %d certificates, %v; want %d", name, len(certs), err, n)
		}
	}
	bad := map[string]string{
		"empty":                  "",
		"blank":                  " \n",
		"not base64":             "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
		"base64 of no cert":      "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"valid then garbage":     a + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"valid then text":        a + "trailing text\n",
		"text then valid":        "leading text\n" + a,
		"unterminated":           a + "-----BEGIN CERTIFICATE-----\nAAAA\n",
		"private key block":      a + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		"certificate w/ headers": "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\n" + a[len("-----BEGIN CERTIFICATE-----\n"):],
	}
	for name, s := range bad {
		if certs, err := trust.ParseAgentCA(s); err == nil || !errors.Is(err, trust.ErrInvalidAgentCA) {
			t.Errorf("%s: %d certificates, err %v; want ErrInvalidAgentCA", name, len(certs), err)
		}
	}
}
