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

package discovery

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// memoSnapshot is a shared-pool snapshot with one endpoint set per address.
func memoSnapshot(t *testing.T, addrs ...string) *published {
	t.Helper()
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	for i, a := range addrs {
		s.EndpointSets = append(s.EndpointSets, &snapshot.EndpointSet{
			Name: fmt.Sprintf("apps/svc-%d:80", i), Endpoints: []snapshot.Endpoint{{Address: a, Port: 8080}},
		})
	}
	p, err := (&Server{codecs: map[snapshot.Scope]*scopeCodec{}}).toPublished(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustForm is p in layout.
func mustForm(t *testing.T, p *published, layout snapshot.Layout) *form {
	t.Helper()
	f, err := p.form(layout)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// mustNext is nextMessage that must not fail.
func mustNext(t *testing.T, cur *published, st *streamState, layout snapshot.Layout) *discoveryv1.Snapshot {
	t.Helper()
	m, err := nextMessage(cur, st, layout)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The per-version message resources are computed once and are what the
// per-stream computation gives.
func TestPublishedMessagesAreShared(t *testing.T) {
	basePub := memoSnapshot(t, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	base := mustForm(t, basePub, RichestLayout)
	other := mustForm(t, memoSnapshot(t, "10.0.0.9"), RichestLayout)
	curPub := memoSnapshot(t, "10.0.0.1", "10.0.0.7")
	cur := mustForm(t, curPub, RichestLayout)

	full, res := cur.fullResources(), cur.res.Flat()
	if len(full) != len(res) || &full[0] != &cur.fullResources()[0] {
		t.Fatal("fullResources is not computed once")
	}
	for i, r := range full {
		if r.GetKey() != res[i].Key || string(r.GetBody()) != string(res[i].Body) {
			t.Fatalf("full resource %d = %s, want %s", i, r.GetKey(), res[i].Key)
		}
	}
	for _, b := range []*form{base, other} {
		wantUp, wantRm := delta(b.res, cur.res)
		up, rm := cur.deltaFrom(b)
		up2, _ := cur.deltaFrom(b)
		if len(up) == 0 || &up[0] != &up2[0] {
			t.Fatal("deltaFrom is not computed once per baseline")
		}
		if !slices.Equal(rm, wantRm) || len(up) != len(wantUp) {
			t.Fatalf("deltaFrom = %v upserts, removed %v; want %v, %v", len(up), rm, len(wantUp), wantRm)
		}
		for i := range up {
			if !proto.Equal(up[i], wantUp[i]) {
				t.Fatalf("upsert %d = %v, want %v", i, up[i], wantUp[i])
			}
		}
	}
	// Beyond the cap, deltas are still right, just not kept.
	for i := range maxCachedDeltas + 2 {
		b := mustForm(t, memoSnapshot(t, fmt.Sprintf("10.1.0.%d", i+1)), RichestLayout)
		up, rm := cur.deltaFrom(b)
		wantUp, wantRm := delta(b.res, cur.res)
		if len(up) != len(wantUp) || !slices.Equal(rm, wantRm) {
			t.Fatalf("baseline %d: deltaFrom differs from delta", i)
		}
	}
	if len(cur.deltas) > maxCachedDeltas {
		t.Fatalf("%d deltas kept, at most %d", len(cur.deltas), maxCachedDeltas)
	}
	// The messages of two streams share the resources; each has its nonce.
	a := mustNext(t, curPub, &streamState{baseline: basePub}, RichestLayout)
	b := mustNext(t, curPub, &streamState{baseline: basePub}, RichestLayout)
	a.Nonce, b.Nonce = "1", "2"
	if &a.Resources[0] != &b.Resources[0] || a.Nonce == b.Nonce {
		t.Fatal("two streams of one baseline do not share the delta")
	}
	if got := mustNext(t, curPub, &streamState{}, RichestLayout); !got.GetFull() || len(got.GetResources()) != cur.res.Len() {
		t.Fatalf("full message = %v", got)
	}
}

// A proxy that reads only the listener layout gets that layout's
// resources and version, made once on demand; the published version stays
// the virtual-host layout's.
func TestPublishedListenerLayoutOnDemand(t *testing.T) {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{{
		Name: "l", Port: 30080, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
		VirtualHosts: []*snapshot.VirtualHost{{Hostname: "a.example.com"}, {Hostname: "b.example.com"}},
	}}}
	p, err := (&Server{codecs: map[snapshot.Scope]*scopeCodec{}}).toPublished(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.forms) != 1 {
		t.Fatalf("%d forms made before any proxy asked, want 1", len(p.forms))
	}
	legacy := mustNext(t, p, &streamState{}, snapshot.LayoutListeners)
	if legacy.GetLayout() != discoveryv1.Layout_LAYOUT_LISTENERS || legacy.GetVersion() != mustLegacyVersion(t, s) || legacy.GetVersion() == p.version {
		t.Fatalf("listener-layout message: layout %v version %s (want %s, published %s)", legacy.GetLayout(), legacy.GetVersion(), mustLegacyVersion(t, s), p.version)
	}
	var keys []string
	for _, r := range legacy.GetResources() {
		keys = append(keys, r.GetKey())
	}
	if !slices.Equal(keys, []string{"listener|30080"}) {
		t.Fatalf("listener-layout keys %v", keys)
	}
	first := mustForm(t, p, snapshot.LayoutListeners)
	if again := mustForm(t, p, snapshot.LayoutListeners); again != first {
		t.Fatal("the listener layout is made more than once")
	}
	rich := mustNext(t, p, &streamState{}, RichestLayout)
	if rich.GetLayout() != discoveryv1.Layout_LAYOUT_VERSION_BUCKETS || rich.GetVersion() != p.version || len(rich.GetResources()) != 3 {
		t.Fatalf("version-bucket message: layout %v version %s, %d resources", rich.GetLayout(), rich.GetVersion(), len(rich.GetResources()))
	}
	// The virtual-host layout has the same resources: its form takes
	// them over, and computes only its version.
	res, err := snapshot.ResourcesIn(snapshot.LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	vh := mustNext(t, p, &streamState{}, snapshot.LayoutVirtualHosts)
	if vh.GetLayout() != discoveryv1.Layout_LAYOUT_VIRTUAL_HOSTS || vh.GetVersion() != snapshot.ResourceVersion(res) || len(vh.GetResources()) != 3 {
		t.Fatalf("virtual-host message: layout %v version %s, %d resources", vh.GetLayout(), vh.GetVersion(), len(vh.GetResources()))
	}
	if vhRes, rich := mustForm(t, p, snapshot.LayoutVirtualHosts).res, mustForm(t, p, RichestLayout).res; &vhRes.Rest[0] != &rich.Rest[0] || &vhRes.Runs[0].Resources[0] != &rich.Runs[0].Resources[0] {
		t.Fatal("the virtual-host layout's resources were made again")
	}
}

// mustLegacyVersion is the LayoutListeners version of s.
func mustLegacyVersion(t *testing.T, s *snapshot.Snapshot) string {
	t.Helper()
	res, err := snapshot.Resources(s)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := (&snapshot.Assembler{Scope: s.Scope, Layout: snapshot.LayoutListeners}).Assemble(res)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkPublish is the controller's wire-form cost of one rebuild with
// n virtual hosts, one of them changed: split, marshal, reassemble the
// changed host, version. The idle case adds 999 Gateways with a listener
// and no routes each, as TestPropagationLatency's GATEWAYS=1000 run. The
// endpoints case changes an endpoint set's endpoints instead, and the
// snapshots share their listeners, as translator.RefreshEndpoints makes
// them (TestEndpointChurn).
func BenchmarkPublish(b *testing.B) {
	type shape struct {
		n         int
		shared    bool
		idle      int
		endpoints bool
		sets      int // with endpoints: the sets the snapshots list (1 when 0)
	}
	shapes := []shape{{1000, false, 0, false, 0}, {1000, true, 0, false, 0}, {10000, false, 0, false, 0}, {10000, true, 0, false, 0},
		{10000, true, 999, false, 0}, {10000, true, 0, true, 0}, {10000, true, 0, true, 10000}}
	for _, sh := range shapes {
		n, shared := sh.n, sh.shared
		name := fmt.Sprintf("hosts=%d/shared=%v", n, shared)
		if sh.idle > 0 {
			name += fmt.Sprintf("/idle=%d", sh.idle)
		}
		if sh.endpoints {
			name += "/endpoints"
		}
		if sh.sets > 0 {
			name += fmt.Sprintf(",sets=%d", sh.sets)
		}
		{
			b.Run(name, func(b *testing.B) {
				routes := func(h, to string) []snapshot.Route {
					return []snapshot.Route{{
						ID: "httproute/default/" + h + ":0", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}},
						Redirect: &snapshot.Redirect{Hostname: to, StatusCode: 301},
					}}
				}
				unchanged := make([][]snapshot.Route, n)
				for i := range unchanged {
					h := fmt.Sprintf("r%d.example.com", i)
					unchanged[i] = routes(h, "moved-"+h)
				}
				// The idle listeners' host lists are the same in both
				// snapshots, as the translator's Memo carries a listener
				// no change touched.
				idleHosts := make([][]*snapshot.VirtualHost, sh.idle)
				for i := range idleHosts {
					idleHosts[i] = []*snapshot.VirtualHost{{Hostname: fmt.Sprintf("idle-%d.example.org", i)}}
				}
				// build changes host changed; with shared, the other
				// hosts keep their route lists, as the translator's Memo
				// keeps them.
				build := func(changed int) *snapshot.Snapshot {
					l := snapshot.Listener{Name: "gateway/default/web/80", Port: 30000, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP}
					for i := 0; i < n; i++ {
						h := fmt.Sprintf("r%d.example.com", i)
						rs := unchanged[i]
						switch {
						case i == changed:
							rs = routes(h, "changed-"+h)
						case !shared:
							rs = routes(h, "moved-"+h)
						}
						l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: rs})
					}
					s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{l}}
					s.Gateways = []snapshot.GatewayRef{{Namespace: "default", Name: "web", Generation: 1, Ports: []int32{30000}}}
					for i := range sh.idle {
						port := int32(30001 + i)
						s.Listeners = append(s.Listeners, snapshot.Listener{
							Name: fmt.Sprintf("gateway/default/idle-%d/80", i), Port: port, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
							VirtualHosts: idleHosts[i],
						})
						s.Gateways = append(s.Gateways, snapshot.GatewayRef{Namespace: "default", Name: fmt.Sprintf("idle-%d", i), Generation: 1, Ports: []int32{port}})
					}
					snapshot.Normalize(s)
					return s
				}
				snaps := []*snapshot.Snapshot{build(0), build(1)}
				if sh.endpoints {
					// The other sets are the very ones in both, as a
					// refresh hands them on.
					others := make([]*snapshot.EndpointSet, 0, sh.sets)
					for i := range sh.sets - 1 {
						others = append(others, &snapshot.EndpointSet{Name: fmt.Sprintf("default/svc-%05d:80", i),
							Endpoints: []snapshot.Endpoint{{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), Port: 8080}}})
					}
					set := func(s *snapshot.Snapshot, last byte) *snapshot.Snapshot {
						cp := *s
						cp.EndpointSets = append([]*snapshot.EndpointSet{{Name: "default/api:80",
							Endpoints: []snapshot.Endpoint{{Address: "10.0.0." + string('0'+last), Port: 8080}}}}, others...)
						return &cp
					}
					snaps = []*snapshot.Snapshot{set(snaps[0], 1), set(snaps[0], 2)}
				}
				srv := &Server{codecs: map[snapshot.Scope]*scopeCodec{}}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := srv.toPublished(snaps[i%2]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestPublishPatchesTheLastSnapshot publishes one scope's successive
// snapshots (hosts rerouted, added and removed; sets changed, added and
// removed; now and then a route to a set that does not exist): each is
// refused or published as a fresh split and assembly would have it, with
// the same version, and a published one carries its delta from the last
// one published, which is what the streams of proxies at that version
// send. A refused snapshot changes nothing the next one is patched from.
func TestPublishPatchesTheLastSnapshot(t *testing.T) {
	hosts := map[string]string{} // hostname → set
	sets := map[string]string{}  // set → address
	for i := range 6 {
		sets[fmt.Sprintf("apps/svc-%d:80", i)] = fmt.Sprintf("10.0.0.%d", i+1)
	}
	for i := range 20 {
		hosts[fmt.Sprintf("h%d.example.com", i)] = fmt.Sprintf("apps/svc-%d:80", i%6)
	}
	build := func() *snapshot.Snapshot {
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
		l := snapshot.Listener{Name: "web", Port: 30000, Protocol: snapshot.ProtocolHTTP}
		for _, h := range slices.Sorted(maps.Keys(hosts)) {
			l.VirtualHosts = append(l.VirtualHosts, &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{
				ID: "httproute/apps/" + h + ":0", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}},
				Backends: []snapshot.Backend{{EndpointSet: hosts[h], Weight: 1}},
			}}})
		}
		s.Listeners = []snapshot.Listener{l}
		for _, n := range slices.Sorted(maps.Keys(sets)) {
			s.EndpointSets = append(s.EndpointSets, &snapshot.EndpointSet{Name: n, Endpoints: []snapshot.Endpoint{{Address: sets[n], Port: 8080}}})
		}
		return s
	}
	rng := rand.New(rand.NewPCG(7, 11))
	srv := &Server{codecs: map[snapshot.Scope]*scopeCodec{}}
	var last *published
	refused, patched := 0, 0
	for step := range 600 {
		setNames := slices.Sorted(maps.Keys(sets))
		hostNames := slices.Sorted(maps.Keys(hosts))
		prevHosts, prevSets := maps.Clone(hosts), maps.Clone(sets)
		switch rng.IntN(6) {
		case 0: // reroute a host, now and then to a set that does not exist
			to := setNames[rng.IntN(len(setNames))]
			if rng.IntN(10) == 0 {
				to = "apps/absent:80"
			}
			hosts[hostNames[rng.IntN(len(hostNames))]] = to
		case 1: // add a host
			hosts[fmt.Sprintf("n%d.example.com", step)] = setNames[rng.IntN(len(setNames))]
		case 2: // remove a host
			if len(hosts) > 1 {
				delete(hosts, hostNames[rng.IntN(len(hostNames))])
			}
		case 3: // a set's endpoints change
			sets[setNames[rng.IntN(len(setNames))]] = fmt.Sprintf("10.1.%d.%d", step/250, step%250+1)
		case 4: // add a set
			sets[fmt.Sprintf("apps/new-%d:80", step)] = "10.2.0.1"
		case 5: // remove a set no host uses
			for _, n := range setNames {
				if !slices.Contains(slices.Collect(maps.Values(hosts)), n) {
					delete(sets, n)
					break
				}
			}
		}
		s := build()
		res, err := snapshot.ResourcesIn(RichestLayout, s)
		if err != nil {
			t.Fatal(err)
		}
		_, wantV, wantErr := (&snapshot.Assembler{Scope: s.Scope, Layout: RichestLayout}).Assemble(res)
		p, err := srv.toPublished(s)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("step %d: error %v, a fresh assembly's %v", step, err, wantErr)
		}
		if err != nil {
			refused++
			hosts, sets = prevHosts, prevSets
			continue
		}
		if p.version != wantV {
			t.Fatalf("step %d: version %s, a fresh assembly's %s", step, p.version, wantV)
		}
		f := mustForm(t, p, RichestLayout)
		if last != nil && last.version != p.version {
			kept, ok := f.deltas[last.version]
			if !ok {
				t.Fatalf("step %d: no delta from the last version published", step)
			}
			wantUp, wantRm := delta(mustForm(t, last, RichestLayout).res, f.res)
			if !slices.Equal(kept.removed, wantRm) || len(kept.upserts) != len(wantUp) {
				t.Fatalf("step %d: kept delta %d upserts, removed %v; want %d, %v", step, len(kept.upserts), kept.removed, len(wantUp), wantRm)
			}
			for i := range wantUp {
				if !proto.Equal(kept.upserts[i], wantUp[i]) {
					t.Fatalf("step %d: kept upsert %d = %v, want %v", step, i, kept.upserts[i], wantUp[i])
				}
			}
			patched++
		}
		last = p
	}
	if refused == 0 || patched < 300 {
		t.Fatalf("%d refused, %d patched: the test exercises too little", refused, patched)
	}
}
