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

package discovery_test

import (
	"fmt"
	"slices"
	"testing"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// hosts is a shared-pool snapshot of one listener with a virtual host per
// name, each routed to the one endpoint set; path is the routes' prefix.
func hosts(gen int64, path string, names ...string) *snapshot.Snapshot {
	s := snap(shared, "gw", gen, nil, "10.0.0.1")
	l := snapshot.Listener{Name: "gateway/apps/gw/80", Port: 18090, Protocol: snapshot.ProtocolHTTP}
	for _, n := range names {
		l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: n, Routes: []snapshot.Route{{
			ID:       "httproute/apps/" + n + ":0",
			Match:    snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: path}},
			Backends: []snapshot.Backend{{EndpointSet: "apps/svc:80", Weight: 1}},
		}}})
	}
	s.Listeners = []snapshot.Listener{l}
	s.Gateways[0].Ports = []int32{18090}
	return s
}

// subscribeIn is a Subscribe asking for layout.
func subscribeIn(node string, layout discoveryv1.Layout) *discoveryv1.ClientMessage {
	m := subscribe(node, shared)
	m.GetSubscribe().Layout = layout
	return m
}

// TestVirtualHostLayoutDeltas: a proxy that reads a layout with a resource
// per virtual host (either) gets one resource per virtual host, and a change to one host's routes
// sends that host alone; the message names its layout and a version the
// proxy can recompute from the resources.
func TestVirtualHostLayoutDeltas(t *testing.T) {
	for _, layout := range []snapshot.Layout{snapshot.LayoutVirtualHosts, snapshot.LayoutVersionBuckets} {
		t.Run(layout.String(), func(t *testing.T) {
			p := newPKI(t)
			ts := startServer(t, p, true, "")
			v1 := hosts(1, "/", "a.example.com", "b.example.com", "c.example.com")
			ts.publish(t, v1)
			st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
			if err := st.Send(subscribeIn("proxy-a", discovery.LayoutToProto(layout))); err != nil {
				t.Fatal(err)
			}
			m1 := recvSnapshot(t, st)
			var keys []string
			var res []snapshot.Resource
			for _, r := range m1.GetResources() {
				keys = append(keys, r.GetKey())
				res = append(res, snapshot.Resource{Key: r.GetKey(), Body: r.GetBody()})
			}
			want := []string{"endpoints|apps/svc:80", "gateway|apps/gw", "listener|18090",
				"vhost|18090|a.example.com", "vhost|18090|b.example.com", "vhost|18090|c.example.com"}
			if !m1.GetFull() || m1.GetLayout() != discovery.LayoutToProto(layout) || !slices.Equal(keys, want) {
				t.Fatalf("first message: full=%v layout=%v keys %v, want %v", m1.GetFull(), m1.GetLayout(), keys, want)
			}
			if v, err := snapshot.VersionIn(layout, res); err != nil || m1.GetVersion() != v || m1.GetVersion() != mustVersionIn(t, v1, layout) {
				t.Fatal("the version is not the resources' digest version")
			}
			if err := st.Send(ack(m1)); err != nil {
				t.Fatal(err)
			}

			v2 := hosts(1, "/", "a.example.com", "b.example.com", "c.example.com")
			v2.Listeners[0].VirtualHosts[1].Routes[0].Match.Path.Value = "/v2"
			ts.publish(t, v2)
			m2 := recvSnapshot(t, st)
			if m2.GetFull() || len(m2.GetResources()) != 1 || m2.GetResources()[0].GetKey() != "vhost|18090|b.example.com" || len(m2.GetRemoved()) != 0 {
				t.Fatalf("one host changed: full=%v, %d upserts %v, removed %v", m2.GetFull(), len(m2.GetResources()), m2.GetResources(), m2.GetRemoved())
			}
			if err := st.Send(ack(m2)); err != nil {
				t.Fatal(err)
			}

			v3 := hosts(1, "/", "a.example.com", "c.example.com")
			v3.Listeners[0].VirtualHosts[0].Routes[0].Match.Path.Value = "/"
			ts.publish(t, v3)
			m3 := recvSnapshot(t, st)
			if m3.GetFull() || len(m3.GetResources()) != 0 || !slices.Equal(m3.GetRemoved(), []string{"vhost|18090|b.example.com"}) {
				t.Fatalf("one host removed: %d upserts, removed %v", len(m3.GetResources()), m3.GetRemoved())
			}
		})
	}
}

// TestClientFollowsTheControllersLayout: a proxy reads snapshots from a
// controller that serves only the listener layout (an older release) and,
// after the controller is upgraded, from one that serves virtual hosts,
// then from one that versions them in buckets; the fleet shows each
// stream's layout.
func TestClientFollowsTheControllersLayout(t *testing.T) {
	api.Config(t)
	p := newPKI(t)
	bootstrapAddr, _ := startBootstrap(t, p, 0)
	old := startServer(t, p, true, "", func(s *discovery.Server) { discovery.SetRichestLayoutForTest(s, snapshot.LayoutListeners) })
	v1 := hosts(1, "/", "a.example.com", "b.example.com")
	old.publish(t, v1)
	f := startProxyClient(t, p, bootstrapAddr, names.SharedProxyServiceAccount, shared, old.addr)
	testkit.EventuallyWithin(t, waitFor, "v1 applied from the older controller", func() bool {
		return f.applier.current(t) == mustVersion(t, v1) && f.client.Version() == mustVersionIn(t, v1, snapshot.LayoutListeners)
	})
	if proxies, _ := old.Fleet(); len(proxies) != 1 || proxies[0].Layout != snapshot.LayoutListeners.String() {
		t.Fatalf("fleet of the older controller: %+v", proxies)
	}

	// Upgraded twice: to a release that serves a resource per virtual
	// host, then to this one (its version in buckets).
	addr, gen := old.addr, int64(1)
	old.stop()
	for _, layout := range []snapshot.Layout{snapshot.LayoutVirtualHosts, discovery.RichestLayout} {
		newer := startServer(t, p, true, addr, func(s *discovery.Server) { discovery.SetRichestLayoutForTest(s, layout) })
		for i, path := range []string{"/", "/two", "/three"} {
			gen++
			v := hosts(gen, path, "a.example.com", "b.example.com", fmt.Sprintf("n%d.example.com", i))
			newer.publish(t, v)
			testkit.EventuallyWithin(t, waitFor, fmt.Sprintf("v%d applied from the controller serving %s", gen, layout), func() bool {
				return f.applier.current(t) == mustVersion(t, v) && f.client.Version() == mustVersionIn(t, v, layout)
			})
		}
		if proxies, _ := newer.Fleet(); len(proxies) != 1 || proxies[0].Layout != layout.String() || !proxies[0].InSync {
			t.Fatalf("fleet of the controller serving %s: %+v", layout, proxies)
		}
		addr = newer.addr
		newer.stop()
	}
	if got := metric(t, f.reg, "coxswain_proxy_discovery_nacks_total", nil); got != 0 {
		t.Fatalf("the proxy nacked %v snapshots", got)
	}
}
