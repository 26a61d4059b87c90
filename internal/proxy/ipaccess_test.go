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
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestIPAccess sends real requests from 127.0.0.1 through routes that
// allow or deny it: deny wins over allow, an allow list refuses what it
// does not hold, bare and IPv4-mapped entries match, and a refused
// request never reaches the backend.
func TestIPAccess(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	route := func(id string, allow, deny []string) snapshot.Route {
		return snapshot.Route{ID: id, Match: prefix("/" + id), Backends: to("ns/b:80"),
			IPAccess: &snapshot.IPAccess{Allow: allow, Deny: deny}}
	}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b)},
		route("allow-loopback", []string{"127.0.0.0/8"}, nil),
		route("allow-other", []string{"10.0.0.0/8", "2001:db8::/32"}, nil),
		route("allow-host", []string{"127.0.0.1"}, nil),
		route("allow-mapped", []string{"::ffff:127.0.0.0/104"}, nil),
		route("deny-host", nil, []string{"127.0.0.1"}),
		route("deny-other", nil, []string{"192.168.0.0/16"}),
		route("deny-over-allow", []string{"127.0.0.0/8"}, []string{"127.0.0.1/32"}),
	))
	cases := []struct {
		path string
		want int
	}{
		{"/allow-loopback", http.StatusOK},
		{"/allow-other", http.StatusForbidden},
		{"/allow-host", http.StatusOK},
		{"/allow-mapped", http.StatusOK},
		{"/deny-host", http.StatusForbidden},
		{"/deny-other", http.StatusOK},
		{"/deny-over-allow", http.StatusForbidden},
	}
	c := client()
	for _, tc := range cases {
		before := b.hits.Load()
		res := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d%s", port, tc.path))
		if res.code != tc.want {
			t.Errorf("%s: %d, want %d (%q)", tc.path, res.code, tc.want, res.body)
		}
		reached := b.hits.Load() > before
		if reached != (tc.want == http.StatusOK) {
			t.Errorf("%s: backend reached %v, want %v", tc.path, reached, tc.want == http.StatusOK)
		}
	}
}

// TestIPAccessUnknownClient checks the apply half with addresses no
// loopback client has: an unknown client (the zero Addr) is refused by
// an allow list and passes a deny list; IPv6 and mapped clients match.
func TestIPAccessUnknownClient(t *testing.T) {
	allow, err := compileIPAccess(&snapshot.IPAccess{Allow: []string{"10.0.0.0/8", "2001:db8::/32"}})
	if err != nil {
		t.Fatal(err)
	}
	deny, err := compileIPAccess(&snapshot.IPAccess{Deny: []string{"10.0.0.0/8"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p    *ipAccessPolicy
		ip   netip.Addr
		want bool
	}{
		{allow, netip.Addr{}, false},
		{allow, netip.MustParseAddr("10.9.8.7"), true},
		{allow, netip.MustParseAddr("::ffff:10.9.8.7"), true},
		{allow, netip.MustParseAddr("2001:db8::1"), true},
		{allow, netip.MustParseAddr("2001:db9::1"), false},
		{allow, netip.MustParseAddr("11.0.0.1"), false},
		{deny, netip.Addr{}, true},
		{deny, netip.MustParseAddr("::ffff:10.0.0.1"), false},
		{deny, netip.MustParseAddr("11.0.0.1"), true},
		{nil, netip.Addr{}, true},
	}
	for i, tc := range cases {
		rec := httptest.NewRecorder()
		ex := &exchange{w: rec}
		if got := tc.p.admit(ex, tc.ip); got != tc.want {
			t.Errorf("case %d (%v): admitted %v, want %v", i, tc.ip, got, tc.want)
		}
		if !tc.want && rec.Code != http.StatusForbidden {
			t.Errorf("case %d (%v): refused with %d, want 403", i, tc.ip, rec.Code)
		}
	}
}

// TestIPAccessCompileErrors checks that a malformed entry fails the
// snapshot, naming the entry.
func TestIPAccessCompileErrors(t *testing.T) {
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	for _, bad := range []snapshot.IPAccess{
		{Allow: []string{"10.0.0.0/33"}},
		{Deny: []string{"not-an-ip"}},
		{Allow: []string{"10.0.0.0/8", "300.1.1.1"}},
		{Deny: []string{"fe80::1%eth0"}},
	} {
		in := bad
		err := p.Apply(retrySnapshot(port, []*snapshot.EndpointSet{{Name: "ns/b:80"}},
			snapshot.Route{ID: "r", Match: prefix("/"), Backends: to("ns/b:80"), IPAccess: &in}))
		entry := append(in.Allow, in.Deny...)[len(in.Allow)+len(in.Deny)-1]
		if err == nil || !strings.Contains(err.Error(), entry) {
			t.Errorf("%+v: Apply error %v, want one naming %q", in, err, entry)
		}
	}
}
