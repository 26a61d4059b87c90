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
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// misdirectedSnapshot is the Gateway of the conformance test
// HTTPRouteHTTPSListenerDetectMisdirectedRequests as the translator
// compiles it: four HTTPS listeners on one port (no hostname,
// second-example.org, *.wildcard.org, fourth-example.wildcard.org), all
// with the same certificate, and a route on each.
func misdirectedSnapshot(port int32, cert snapshot.Certificate, v1, v2, v3 *testBackend) *snapshot.Snapshot {
	route := func(id, set string) []snapshot.Route {
		return []snapshot.Route{{ID: id, Match: prefix("/detect-misdirected-requests"), Backends: to(set)}}
	}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{cert},
		EndpointSets: []*snapshot.EndpointSet{epSet("ns/v1:8080", v1), epSet("ns/v2:8080", v2), epSet("ns/v3:8080", v3)},
		Listeners: []snapshot.Listener{{Name: "gw/443", Port: port, Protocol: snapshot.ProtocolHTTPS,
			TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{
				{Certificate: cert.Name},
				{Hostname: "second-example.org", Certificate: cert.Name},
				{Hostname: "*.wildcard.org", Certificate: cert.Name},
				{Hostname: "fourth-example.wildcard.org", Certificate: cert.Name},
			}},
			VirtualHosts: []*snapshot.VirtualHost{
				{Hostname: "example.org", Routes: route("test-1", "ns/v1:8080")},
				{Hostname: "second-example.org", Routes: route("test-2", "ns/v2:8080")},
				{Hostname: "*.wildcard.org", Routes: route("test-3", "ns/v3:8080")},
				{Hostname: "fourth-example.wildcard.org", Routes: route("test-4", "ns/v1:8080")},
			}}}}
	snapshot.Normalize(s)
	return s
}

// TestMisdirectedRequests is the conformance matrix of
// HTTPRouteHTTPSListenerDetectMisdirectedRequests, over HTTP/2 and
// HTTP/1.1, plus the requests that must not be refused on that ground: no
// SNI, a Host that is an IP address, a Host in another case or with its
// port.
func TestMisdirectedRequests(t *testing.T) {
	v1, v2, v3 := startBackend(t, "v1", false, nil), startBackend(t, "v2", false, nil), startBackend(t, "v3", false, nil)
	cert := testCert(t, "example.org", "second-example.org", "*.wildcard.org")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, misdirectedSnapshot(port, cert, v1, v2, v3))
	cases := []struct {
		serverName, host string
		code             int
		backend          string
	}{
		{"example.org", "example.org", 200, "v1"},
		{"example.org", "second-example.org", 421, ""},
		{"example.org", "unknown-example.org", 404, ""},

		{"second-example.org", "second-example.org", 200, "v2"},
		{"second-example.org", "example.org", 421, ""},
		{"second-example.org", "unknown-example.org", 421, ""},

		{"third-example.wildcard.org", "third-example.wildcard.org", 200, "v3"},
		{"third-example.wildcard.org", "fith-example.wildcard.org", 200, "v3"},
		{"third-example.wildcard.org", "fourth-example.wildcard.org", 421, ""},
		{"third-example.wildcard.org", "second-example.org", 421, ""},
		{"third-example.wildcard.org", "unknown-example.org", 421, ""},

		{"fourth-example.wildcard.org", "fourth-example.wildcard.org", 200, "v1"},
		{"fourth-example.wildcard.org", "fith-example.wildcard.org", 421, ""},

		{"unknown-example.org", "example.org", 200, "v1"},
		{"unknown-example.org", "unknown-example.org", 404, ""},

		// Not refused on this ground.
		{"", "second-example.org", 200, "v2"}, // no SNI
		{"second-example.org", "SECOND-example.org:443", 200, "v2"},
		{"Second-Example.org", "second-example.org", 200, "v2"},
		{"second-example.org", fmt.Sprintf("127.0.0.1:%d", port), 404, ""},
	}
	for _, h2 := range []bool{true, false} {
		for _, tc := range cases {
			sni := tc.serverName
			if sni == "" {
				sni = "127.0.0.1" // an IP: Go's client then sends no SNI
			}
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/detect-misdirected-requests", port), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			res := do(t, httpsClient(sni, nil, h2), req)
			if res.code != tc.code || res.echo.Backend != tc.backend {
				t.Errorf("h2 %v, SNI %q, Host %q: %d from %q, want %d from %q (%s)", h2, tc.serverName, tc.host, res.code, res.echo.Backend, tc.code, tc.backend, res.body)
			}
		}
	}
}

// TestMisdirectedNeedsSeveralListeners: a port whose certificates share
// one hostname has one listener: nothing is misdirected, whatever the
// Host.
func TestMisdirectedNeedsSeveralListeners(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	cert := testCert(t, "a.example")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{cert},
		EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		Listeners: []snapshot.Listener{{Name: "gw/443", Port: port, Protocol: snapshot.ProtocolHTTPS,
			TLS:          &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Hostname: "a.example", Certificate: cert.Name}}},
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}}}}}})
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", port), nil)
	req.Host = "b.example"
	resp, err := httpsClient("a.example", nil, true).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("Host b.example on an a.example connection of a one-listener port: %d, want 200", resp.StatusCode)
	}
}

// TestListenerHostsPickDoesNotAllocate: the 421 check costs no
// allocation, upper-case names included.
func TestListenerHostsPickDoesNotAllocate(t *testing.T) {
	lh := compileListenerHosts([]snapshot.SNICertificate{{}, {Hostname: "a.example"}, {Hostname: "*.w.example"}})
	names := []string{"a.example", "A.Example:443", "x.y.w.example", "X.W.EXAMPLE", "other.example", "[::1]:443"}
	want := []int{1, 1, 2, 2, 0, 0}
	for i, n := range names {
		if got := lh.pick(n); got != want[i] {
			t.Errorf("pick(%q) = %d, want %d", n, got, want[i])
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			_ = lh.pick(n)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per round of picks, want 0", allocs)
	}
}
