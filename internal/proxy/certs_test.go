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
	"strconv"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// testCert makes a self-signed certificate for the given names; the
// snapshot certificate is named after the first name and its serial.
func testCert(t testing.TB, names ...string) snapshot.Certificate {
	t.Helper()
	certPEM, keyPEM, cert := testkit.SelfSigned(t, names...)
	return snapshot.Certificate{
		Name:    "ns/" + names[0] + "-" + strconv.FormatUint(cert.SerialNumber.Uint64()%100000, 10),
		CertPEM: certPEM,
		KeyPEM:  keyPEM,
	}
}
