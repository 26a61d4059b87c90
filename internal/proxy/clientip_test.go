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
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestClientIPDetection walks forwarding headers: trusted and untrusted
// peers, skipped trusted hops, hop counting, several field lines, invalid
// and empty entries, ports and custom headers.
func TestClientIPDetection(t *testing.T) {
	trusted := []string{"10.0.0.0/8", "127.0.0.1"}
	cases := []struct {
		name string
		det  snapshot.ClientIPDetection
		peer string
		xff  []string
		hdr  http.Header
		want string
	}{
		{name: "untrusted peer", peer: "203.0.113.9:1000", xff: []string{"1.2.3.4"}, want: "203.0.113.9"},
		{name: "trusted peer, one entry", xff: []string{"1.2.3.4"}, want: "1.2.3.4"},
		{name: "trusted hop skipped", xff: []string{"1.2.3.4, 10.0.0.2"}, want: "1.2.3.4"},
		{name: "spoofed left entry ignored", xff: []string{"5.6.7.8, 1.2.3.4, 10.0.0.2"}, want: "1.2.3.4"},
		{name: "field lines joined", xff: []string{"5.6.7.8, 1.2.3.4", "10.0.0.2"}, want: "1.2.3.4"},
		{name: "all trusted: leftmost", xff: []string{"10.0.0.3, 10.0.0.2"}, want: "10.0.0.3"},
		{name: "no header: peer", want: "127.0.0.1"},
		{name: "invalid entry ends the walk", xff: []string{"1.2.3.4, garbage, 10.0.0.2"}, want: "10.0.0.2"},
		{name: "invalid rightmost entry: peer", xff: []string{"1.2.3.4, unknown"}, want: "127.0.0.1"},
		{name: "empty entries skipped", xff: []string{"1.2.3.4,, 10.0.0.2 ,"}, want: "1.2.3.4"},
		{name: "v6 with port", xff: []string{"[2001:db8::1]:443, 10.0.0.2"}, want: "2001:db8::1"},
		{name: "v6 in brackets", xff: []string{"[2001:db8::2]"}, want: "2001:db8::2"},
		{name: "v4 with port", xff: []string{"1.2.3.4:5678"}, want: "1.2.3.4"},
		{name: "mapped v4 unmapped", xff: []string{"::ffff:1.2.3.4"}, want: "1.2.3.4"},
		{name: "mapped trusted hop", xff: []string{"1.2.3.4, ::ffff:10.0.0.2"}, want: "1.2.3.4"},
		{name: "hops alone: 1 is the rightmost", det: snapshot.ClientIPDetection{TrustedHops: 1}, peer: "203.0.113.9:1", xff: []string{"5.6.7.8, 1.2.3.4"}, want: "1.2.3.4"},
		{name: "hops alone: 2", det: snapshot.ClientIPDetection{TrustedHops: 2}, peer: "203.0.113.9:1", xff: []string{"9.9.9.9, 5.6.7.8, 1.2.3.4"}, want: "5.6.7.8"},
		{name: "hops alone: bounded by the list", det: snapshot.ClientIPDetection{TrustedHops: 3}, peer: "203.0.113.9:1", xff: []string{"5.6.7.8, 1.2.3.4"}, want: "5.6.7.8"},
		{name: "hops and CIDRs: untrusted first", det: snapshot.ClientIPDetection{TrustedCIDRs: trusted, TrustedHops: 3}, xff: []string{"5.6.7.8, 1.2.3.4, 10.0.0.2"}, want: "1.2.3.4"},
		{name: "hops and CIDRs: hop bound first", det: snapshot.ClientIPDetection{TrustedCIDRs: trusted, TrustedHops: 1}, xff: []string{"5.6.7.8, 1.2.3.4, 10.0.0.2"}, want: "10.0.0.2"},
		{name: "custom header", det: snapshot.ClientIPDetection{Header: "x-real-ip", TrustedCIDRs: trusted}, xff: []string{"5.6.7.8"},
			hdr: http.Header{"X-Real-Ip": {"1.2.3.4"}}, want: "1.2.3.4"},
		{name: "custom header absent: peer", det: snapshot.ClientIPDetection{Header: "X-Real-IP", TrustedCIDRs: trusted}, xff: []string{"5.6.7.8"}, want: "127.0.0.1"},
		{name: "nothing trusted: peer", det: snapshot.ClientIPDetection{Header: "X-Real-IP"}, hdr: http.Header{"X-Real-Ip": {"1.2.3.4"}}, want: "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			det := c.det
			if det.TrustedCIDRs == nil && det.TrustedHops == 0 && det.Header == "" {
				det.TrustedCIDRs = trusted
			}
			p, err := compileClientIP(&det, nil)
			if err != nil {
				t.Fatal(err)
			}
			r := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
			if r.RemoteAddr == "" {
				r.RemoteAddr = "127.0.0.1:4000"
			}
			for k, v := range c.hdr {
				r.Header[k] = v
			}
			if c.xff != nil {
				r.Header["X-Forwarded-For"] = c.xff
			}
			if got := p.clientIP(r).String(); got != c.want {
				t.Errorf("client IP %s, want %s", got, c.want)
			}
		})
	}
}

// TestClientIPCompile: malformed detections are errors; a route without
// its own detection shares its listener's.
func TestClientIPCompile(t *testing.T) {
	for _, bad := range []snapshot.ClientIPDetection{
		{TrustedCIDRs: []string{"10.0.0.0/33"}},
		{TrustedCIDRs: []string{"not-an-ip"}},
		{TrustedHops: -1},
		{Header: "X Forwarded", TrustedHops: 1},
	} {
		if _, err := compileClientIP(&bad, nil); err == nil {
			t.Errorf("%+v compiled", bad)
		}
	}
	ct, err := compileClientTraffic(&snapshot.ClientTraffic{ClientIP: &snapshot.ClientIPDetection{TrustedHops: 1}})
	if err != nil {
		t.Fatal(err)
	}
	lr := &listenerRouter{clientTraffic: ct}
	if p, _ := compileClientIP(nil, lr); p != ct.clientIP || p == nil {
		t.Errorf("a route without detection got %p, want its listener's %p", p, ct.clientIP)
	}
	own, _ := compileClientIP(&snapshot.ClientIPDetection{TrustedHops: 2}, lr)
	if own == nil || own == ct.clientIP || own.hops != 2 {
		t.Errorf("a route's own detection was not compiled: %+v", own)
	}
	if p, _ := compileClientIP(nil, &listenerRouter{}); p != nil {
		t.Errorf("no detection anywhere compiled to %+v", p)
	}
}

// accessLogClientIPs are the client_ip fields of the access log lines of
// a path, in order.
func accessLogClientIPs(t testing.TB, p *testPlane, path string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
		var m struct {
			Path     string `json:"path"`
			ClientIP string `json:"client_ip"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			continue
		}
		if m.Path == path {
			out = append(out, m.ClientIP)
		}
	}
	return out
}

// loggedClientIPs waits for n access log lines of a path (a line is
// written once the response is sent) and returns their client_ip fields.
func loggedClientIPs(t testing.TB, p *testPlane, path string, n int) []string {
	t.Helper()
	var ips []string
	testkit.Eventually(t, fmt.Sprintf("%d access log lines of %s", n, path), func() bool {
		ips = accessLogClientIPs(t, p, path)
		return len(ips) >= n
	})
	return ips
}

// TestClientIPThroughProxy: the access log names the detected client, by
// the listener's detection, a route's own, or for a request no route
// takes; the client's forwarding header is not relayed upstream.
func TestClientIPThroughProxy(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	l := httpListener(port, snapshot.VirtualHost{Hostname: "a.example", Routes: []snapshot.Route{
		{ID: "untrusting", Match: prefix("/untrusting"), Backends: to("ns/a:80"), ClientIP: &snapshot.ClientIPDetection{TrustedCIDRs: []string{"192.0.2.0/24"}}},
		{ID: "hops", Match: prefix("/hops"), Backends: to("ns/a:80"), ClientIP: &snapshot.ClientIPDetection{TrustedHops: 2}},
		{ID: "custom", Match: prefix("/custom"), Backends: to("ns/a:80"), ClientIP: &snapshot.ClientIPDetection{Header: "X-Real-IP", TrustedCIDRs: []string{"127.0.0.0/8"}}},
		{ID: "listener", Backends: to("ns/a:80")},
	}})
	l.ClientTraffic = &snapshot.ClientTraffic{ClientIP: &snapshot.ClientIPDetection{TrustedCIDRs: []string{"127.0.0.1/32", "10.0.0.0/8"}}}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)}, Listeners: []snapshot.Listener{l}}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	c := client()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const xff = "198.51.100.1, 203.0.113.7, 10.0.0.1"
	for _, tc := range []struct {
		path, host string
		hdr        []string
		want       string
	}{
		{path: "/listener", want: "203.0.113.7"},
		{path: "/untrusting", want: "127.0.0.1"},
		{path: "/hops", want: "203.0.113.7"},
		{path: "/custom", hdr: []string{"X-Real-IP", "192.0.2.55"}, want: "192.0.2.55"},
		{path: "/not-found", host: "other.example", want: "203.0.113.7"},
	} {
		host := tc.host
		if host == "" {
			host = "a.example"
		}
		hdr := append([]string{"Host", host, "X-Forwarded-For", xff}, tc.hdr...)
		res := fetch(t, c, base+tc.path, hdr...)
		if tc.host == "" {
			if res.code != 200 {
				t.Fatalf("%s: status %d", tc.path, res.code)
			}
			if got := res.echo.Header.Get("X-Forwarded-For"); got != "127.0.0.1" {
				t.Errorf("%s: upstream X-Forwarded-For %q, want the peer the proxy appends", tc.path, got)
			}
		} else if res.code != 404 {
			t.Fatalf("%s on %s: status %d, want 404", tc.path, host, res.code)
		}
		if ips := loggedClientIPs(t, p, tc.path, 1); ips[0] != tc.want {
			t.Errorf("%s: access log client_ip %v, want %s", tc.path, ips, tc.want)
		}
	}
}
