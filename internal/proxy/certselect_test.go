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
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestTLSSNICertificatesSharingAHostname: an HTTPS listener with several
// certificateRefs binds them all to the listener's hostname (here none, and
// a wildcard); the proxy then serves the one whose SANs cover the SNI, and
// the first one when none does.
func TestTLSSNICertificatesSharingAHostname(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	first, second := testCert(t, "a.example.com"), testCert(t, "b.example.com")
	w1, w2 := testCert(t, "x.wild.example"), testCert(t, "y.wild.example")
	sni := []snapshot.SNICertificate{
		{Certificate: first.Name}, {Certificate: second.Name},
		{Hostname: "*.wild.example", Certificate: w1.Name}, {Hostname: "*.wild.example", Certificate: w2.Name},
	}
	p.mustApply(t, tlsSnapshot(port, epSet("ns/a:80", a), []snapshot.Certificate{first, second, w1, w2}, sni))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for name, want := range map[string]snapshot.Certificate{
		"a.example.com": first, "b.example.com": second, "c.example.com": first, "": first,
		"x.wild.example": w1, "y.wild.example": w2, "z.wild.example": w1,
	} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("handshake for %q: %v", name, err)
		}
		got := conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
		_ = conn.Close()
		if got != certSerial(t, want) {
			t.Errorf("SNI %q got certificate %s, want %s", name, got, want.Name)
		}
	}
}
