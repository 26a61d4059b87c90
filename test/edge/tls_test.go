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

package edge

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// tlsSnapshot is edgeSnapshot with its listener on HTTPS, under a
// self-signed certificate for a.example.
func tlsSnapshot(t *testing.T) string {
	t.Helper()
	certPEM, keyPEM, _ := testkit.SelfSigned(t, "a.example")
	indent := func(s string) string { return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") }
	certs := "certificates:\n- name: edge/cert\n  certPEM: |\n" + indent(certPEM) + "\n  keyPEM: |\n" + indent(keyPEM) + "\n"
	s := strings.Replace(edgeSnapshot, "  protocol: HTTP\n", "  protocol: HTTPS\n  tls: {certificates: [{certificate: edge/cert}]}\n", 1)
	return strings.Replace(s, "endpointSets:\n", certs+"endpointSets:\n", 1)
}

// TestRawRequestCorpusOverTLS sends every vector of the corpus over TLS
// (ALPN http/1.1) to an HTTPS listener with the same routes: the answers,
// the connection's fate and what the backend sees are the vector's, as on
// a cleartext listener (the fast path serves HTTP/1.1 over TLS too).
func TestRawRequestCorpusOverTLS(t *testing.T) {
	vectors := loadCorpus(t)
	backendRec := newRecorder()
	backend := startBackend(t, backendRec)
	px := startProxy(t, tlsSnapshot(t), backend)

	const quiet = 1500 * time.Millisecond
	outcomes := make([]exchange, len(vectors))
	srcs := make([]string, len(vectors))
	var wg sync.WaitGroup
	for i, v := range vectors {
		srcs[i] = fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250)
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = sendTLS(px.addr, srcs[i], []byte(v.Raw), v.Methods, quiet)
		}()
	}
	wg.Wait()
	for i, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got := outcomes[i]
			want := exchange{statuses: v.Statuses, closed: v.Closed}
			if !slices.Equal(got.statuses, want.statuses) || got.closed != want.closed {
				t.Errorf("over TLS the proxy answered %v, want %v", got, want)
			}
			var lines []string
			for _, s := range backendRec.of(srcs[i]) {
				if !slices.Contains(v.BackendMaySee, s.line) {
					lines = append(lines, s.line)
				}
			}
			if !slices.Equal(lines, v.Backend) && (len(lines) != 0 || len(v.Backend) != 0) {
				t.Errorf("over TLS the backend received %q, want %q", lines, v.Backend)
			}
		})
	}
}
