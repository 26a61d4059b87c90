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

package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// applyFixture is a snapshot with hosts on listeners whose keys are
// prefixes of one another (80, 8080, 800), an HTTPS listener and endpoint
// sets, split into resources.
func applyFixture(t *testing.T) []Resource {
	t.Helper()
	s := &Snapshot{Scope: SharedPool(), Certificates: []Certificate{{Name: "default/tls", CertPEM: "c", KeyPEM: "k"}}}
	for _, port := range []int32{80, 8080, 800, 443} {
		l := Listener{Name: fmt.Sprintf("l%d", port), Port: port, Protocol: ProtocolHTTP}
		if port == 443 {
			l.Protocol = ProtocolHTTPS
			l.TLS = &ListenerTLS{Certificates: []SNICertificate{{Certificate: "default/tls"}}}
		}
		for i := 0; i < 8; i++ {
			l.VirtualHosts = append(l.VirtualHosts, applyHost(fmt.Sprintf("h%d.example.com", i), fmt.Sprintf("default/svc-%d:80", i), "0"))
		}
		s.Listeners = append(s.Listeners, l)
	}
	for i := 0; i < 8; i++ {
		s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: fmt.Sprintf("default/svc-%d:80", i), Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}})
	}
	s.Gateways = []GatewayRef{{Namespace: "default", Name: "web", Generation: 1, Ports: []int32{80, 8080, 800, 443}}}
	Normalize(s)
	res, err := ResourcesIn(LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func applyHost(host, set, tag string) *VirtualHost {
	return &VirtualHost{Hostname: host, Routes: []Route{{
		ID: "httproute/default/" + host + ":" + tag, Match: Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
		Backends: []Backend{{EndpointSet: set, Weight: 1}},
	}}}
}

// TestApplyEqualsAssemble drives one Assembler through random deltas, as
// discovery sends them, each of one to five changes: hosts rerouted
// (sometimes to a set that does not exist), added and removed, on every
// listener; endpoint sets changed (sometimes to an address that is not
// one), added and removed while routes name them; a listener changed; a
// body that does not decode; a key listed twice, or both upserted and
// removed. After every delta Apply must agree with a new Assembler given
// the merged resources: the same error or none, and then the same
// snapshot and version. A refused delta is dropped, as a proxy keeps its
// last good resources, and the next delta applies to what was before it.
// Both with the bodies kept and with digests only (DigestsOnly, which
// tells an unchanged body by hashing it and assembles a merge whose kept
// resources come without theirs).
func TestApplyEqualsAssemble(t *testing.T) {
	for _, layout := range perHostLayouts {
		for _, digestsOnly := range []bool{false, true} {
			name := layout.String()
			if digestsOnly {
				name += "/digests-only"
			}
			t.Run(name, func(t *testing.T) { testApplyEqualsAssemble(t, layout, digestsOnly) })
		}
	}
}

func testApplyEqualsAssemble(t *testing.T, layout Layout, digestsOnly bool) {
	rng := rand.New(rand.NewSource(29))
	good := applyFixture(t)
	body := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ports := []string{"80", "8080", "800", "443"}
	setName := func() string { return fmt.Sprintf("default/svc-%d:80", rng.Intn(10)) }
	host := func() string { return fmt.Sprintf("h%d.example.com", rng.Intn(12)) }
	a := &Assembler{Scope: SharedPool(), Layout: layout, DigestsOnly: digestsOnly}
	if _, _, err := a.Apply(nil, nil); err == nil {
		t.Fatal("Apply without a baseline succeeded")
	}
	if _, _, err := a.Assemble(good); err != nil {
		t.Fatal(err)
	}
	var failures, fast int
	for step := 0; step < 1500; step++ {
		var upserts []Resource
		var removed []string
		for range 1 + rng.Intn(5) {
			switch rng.Intn(12) {
			case 0, 1, 2: // reroute or add a host
				h := host()
				upserts = append(upserts, Resource{Key: VirtualHostKey(ports[rng.Intn(len(ports))], h), Body: body(applyHost(h, setName(), fmt.Sprint(step)))})
			case 3, 4: // remove a host
				removed = append(removed, VirtualHostKey(ports[rng.Intn(len(ports))], host()))
			case 5: // change or add a set
				name := setName()
				addr := fmt.Sprintf("10.1.0.%d", step%250)
				if rng.Intn(8) == 0 {
					addr = "not-an-address"
				}
				upserts = append(upserts, Resource{Key: "endpoints|" + name, Body: body(EndpointSet{Name: name, Endpoints: []Endpoint{{Address: addr, Port: 8080}}})})
			case 6: // remove a set
				removed = append(removed, "endpoints|"+setName())
			case 7: // a listener changed
				upserts = append(upserts, Resource{Key: "listener|9090", Body: body(Listener{Name: "l9090", Port: 9090, Protocol: ProtocolHTTP})})
			case 8: // a body that does not decode, or a host on no listener
				if rng.Intn(2) == 0 {
					upserts = append(upserts, Resource{Key: VirtualHostKey("80", host()), Body: []byte(`{"hostname":`)})
				} else {
					h := host()
					upserts = append(upserts, Resource{Key: VirtualHostKey("7070", h), Body: body(applyHost(h, setName(), "x"))})
				}
			case 9: // a key upserted twice, and both upserted and removed
				h, p := host(), ports[rng.Intn(len(ports))]
				upserts = append(upserts,
					Resource{Key: VirtualHostKey(p, h), Body: body(applyHost(h, setName(), "first"))},
					Resource{Key: VirtualHostKey(p, h), Body: body(applyHost(h, setName(), "second"))})
				if rng.Intn(2) == 0 {
					removed = append(removed, VirtualHostKey(p, h))
				}
			case 10: // an unchanged body in fresh memory
				r := good[rng.Intn(len(good))]
				upserts = append(upserts, Resource{Key: r.Key, Body: bytes.Clone(r.Body)})
			case 11: // removing what is not there
				removed = append(removed, VirtualHostKey("80", "absent.example.com"))
			}
		}
		next := mergeDelta(good, upserts, removed)
		want, wantV, wantErr := (&Assembler{Scope: SharedPool(), Layout: layout}).Assemble(next)
		before, index := a.last, reflect.ValueOf(a.listenerAt).Pointer()
		beforeJSON := encodeOrFail(t, before)
		got, gotV, gotErr := a.Apply(slices.Clone(upserts), slices.Clone(removed))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("step %d: error %v, a fresh Assembler's %v", step, gotErr, wantErr)
		}
		if wantErr != nil {
			if a.last != before {
				t.Fatalf("step %d: a refused delta changed the baseline", step)
			}
			failures++
			continue
		}
		if gotV != wantV || !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: the snapshot differs from a fresh Assembler's:\n got %s\nwant %s", step, encodeOrFail(t, got), encodeOrFail(t, want))
		}
		if !bytes.Equal(beforeJSON, encodeOrFail(t, before)) {
			t.Fatalf("step %d: Apply modified the snapshot it patched", step)
		}
		if !applyFallsBack(upserts, removed) {
			// Patched, not assembled in full (which indexes the
			// listeners anew).
			if reflect.ValueOf(a.listenerAt).Pointer() != index {
				t.Fatalf("step %d: a delta of hosts and sets was assembled in full", step)
			}
			fast++
		}
		good = next
	}
	if failures == 0 || failures > 900 || fast < 300 {
		t.Fatalf("%d of 1500 deltas failed, %d patched: the test exercises too little", failures, fast)
	}
	for _, k := range a.decoded {
		if kept := k.d.body != nil; kept == digestsOnly {
			t.Fatalf("%s: body kept %v with DigestsOnly %v", k.key, kept, digestsOnly)
		}
	}
	t.Logf("%d of 1500 deltas were refused; %d could be patched", failures, fast)
}

// applyFallsBack reports a delta Apply assembles in full whatever the
// baseline: a kind other than hosts and sets changed, or a set removed.
func applyFallsBack(upserts []Resource, removed []string) bool {
	for _, r := range upserts {
		if !strings.HasPrefix(r.Key, vhostKind+"|") && !strings.HasPrefix(r.Key, "endpoints|") {
			return true
		}
	}
	for _, k := range removed {
		if strings.HasPrefix(k, "endpoints|") {
			return true
		}
	}
	return false
}

// mergeDelta is res with upserts put in (the last of a key wins) and
// removed taken out, in key order, as discovery's client merges a delta.
func mergeDelta(res, upserts []Resource, removed []string) []Resource {
	m := map[string][]byte{}
	for _, r := range res {
		m[r.Key] = r.Body
	}
	for _, r := range upserts {
		m[r.Key] = r.Body
	}
	for _, k := range removed {
		delete(m, k)
	}
	out := make([]Resource, 0, len(m))
	for k, b := range m {
		out = append(out, Resource{Key: k, Body: b})
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// TestApplyLeavesThePatchedSnapshotAlone: the snapshot an Apply patched
// (and which a data plane may still serve) keeps its hosts and sets.
func TestApplyLeavesThePatchedSnapshotAlone(t *testing.T) {
	a := &Assembler{Scope: SharedPool(), Layout: LayoutVirtualHosts}
	first, _, err := a.Assemble(applyFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	before := encodeOrFail(t, first)
	h := applyHost("h3.example.com", "default/svc-1:80", "moved")
	b, _ := json.Marshal(h)
	set, _ := json.Marshal(EndpointSet{Name: "default/svc-2:80", Endpoints: []Endpoint{{Address: "10.2.0.1", Port: 80}}})
	_, _, err = a.Apply([]Resource{
		{Key: VirtualHostKey("80", "h3.example.com"), Body: b},
		{Key: VirtualHostKey("80", "new.example.com"), Body: b[:0:0]},
		{Key: "endpoints|default/svc-2:80", Body: set},
	}, []string{VirtualHostKey("8080", "h1.example.com")})
	if err == nil {
		t.Fatal("a host with an empty body was applied")
	}
	second, _, err := a.Apply([]Resource{
		{Key: VirtualHostKey("80", "h3.example.com"), Body: b},
		{Key: "endpoints|default/svc-2:80", Body: set},
	}, []string{VirtualHostKey("8080", "h1.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, encodeOrFail(t, first)) {
		t.Fatal("Apply modified the snapshot it patched")
	}
	if bytes.Equal(before, encodeOrFail(t, second)) {
		t.Fatal("Apply changed nothing")
	}
}

// BenchmarkApplyDelta is BenchmarkAssembleDelta's change (one virtual host
// among n, its body in fresh memory) through Apply: what a proxy pays per
// route change since deltas are patched.
func BenchmarkApplyDelta(b *testing.B) {
	for _, layout := range perHostLayouts {
		for _, n := range []int{1000, 10000} {
			s := scaled(n)
			for _, kind := range []string{vhostKind, "endpoints"} {
				b.Run(fmt.Sprintf("%s/hosts=%d/%s", layout, n, kind), func(b *testing.B) {
					res, err := ResourcesIn(layout, s)
					if err != nil {
						b.Fatal(err)
					}
					a := &Assembler{Scope: s.Scope, Layout: layout}
					if _, _, err := a.Assemble(res); err != nil {
						b.Fatal(err)
					}
					// Each resource of the kind in turn, with a body of
					// the same value but other bytes (a space after its
					// opening brace, then without again): a change to
					// decode, validate and hash.
					var changed [2][]Resource
					for _, r := range res {
						if strings.HasPrefix(r.Key, kind+"|") {
							changed[0] = append(changed[0], Resource{Key: r.Key, Body: append([]byte("{ "), r.Body[1:]...)})
							changed[1] = append(changed[1], r)
						}
					}
					n := len(changed[0])
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, _, err := a.Apply([]Resource{changed[i/n%2][i%n]}, nil); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestApplyReusesItsList: patching one host among many allocates the
// snapshot's new lists, not the Assembler's own list of every resource
// again (a quarter of a megabyte a change at 10,000 resources, in the
// controller and in every proxy). Bytes, not time.
func TestApplyReusesItsList(t *testing.T) {
	const n = 5000
	s := scaled(n)
	res, err := ResourcesIn(LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	a := &Assembler{Scope: s.Scope, Layout: LayoutVirtualHosts}
	if _, _, err := a.Assemble(res); err != nil {
		t.Fatal(err)
	}
	var hosts []Resource
	for _, r := range res {
		if strings.HasPrefix(r.Key, vhostKind+"|") {
			hosts = append(hosts, r)
		}
	}
	apply := func(i int) {
		r := hosts[i%len(hosts)]
		if _, _, err := a.Apply([]Resource{{Key: r.Key, Body: bytes.Clone(r.Body)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	apply(0) // the first patch makes the spare list
	const calls = 8
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range calls {
		apply(i + 1)
	}
	runtime.ReadMemStats(&after)
	// The patched host list is a VirtualHost (48 bytes) and a mark a
	// host; the Assembler's list of resources was another 48 (two per
	// host: the host and its endpoint set).
	if perHost := float64(after.TotalAlloc-before.TotalAlloc) / calls / n; perHost > 64 {
		t.Errorf("Apply allocated %.0f bytes a host, want at most 64", perHost)
	}
}

// TestAssemblerCopyLeavesTheOriginal: a change applied to a copy of an
// Assembler (as a discovery client tries one) leaves the original as it
// was: a later change applied to the original gives what a fresh
// Assembler gives.
func TestAssemblerCopyLeavesTheOriginal(t *testing.T) {
	s := scaled(50)
	res, err := ResourcesIn(LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	a := &Assembler{Scope: s.Scope, Layout: LayoutVirtualHosts}
	if _, _, err := a.Assemble(res); err != nil {
		t.Fatal(err)
	}
	changed := func(i int, id string) Resource {
		vh := VirtualHost{Hostname: fmt.Sprintf("h%05d.example.com", i), Routes: []Route{{
			ID: id, Match: Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
			Backends: []Backend{{EndpointSet: fmt.Sprintf("default/svc-%d:80", i), Weight: 1}},
		}}}
		b, err := json.Marshal(vh)
		if err != nil {
			t.Fatal(err)
		}
		return Resource{Key: VirtualHostKey("30000", vh.Hostname), Body: b}
	}
	for round := range 3 { // each copy fills the spare list the original will
		work := *a
		if _, _, err := work.Apply([]Resource{changed(round, fmt.Sprintf("copy-%d", round))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	r := changed(7, "original")
	got, gotV, err := a.Apply([]Resource{r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, wantV, err := (&Assembler{Scope: s.Scope, Layout: LayoutVirtualHosts}).Assemble(upsert(slices.Clone(res), r))
	if err != nil {
		t.Fatal(err)
	}
	if gotV != wantV || !reflect.DeepEqual(got, want) {
		t.Fatal("the original Assembler, after changes to its copies, no longer gives a fresh one's snapshot")
	}
}

// TestApplyVersionResumesItsHash: over changes anywhere in a list of
// thousands of resources (hosts rerouted, added and removed; sets
// changed), with copies of the Assembler trying changes of their own in
// between, Apply's version is ResourceVersion of the resources, though it
// resumes the hash from a mark before the first one changed.
func TestApplyVersionResumesItsHash(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	const n = 1500 // hosts and as many sets: a dozen marks
	s := scaled(n)
	res, err := ResourcesIn(LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	a := &Assembler{Scope: s.Scope, Layout: LayoutVirtualHosts}
	if _, _, err := a.Assemble(res); err != nil {
		t.Fatal(err)
	}
	if len(a.marks) < 10 {
		t.Fatalf("%d marks over %d resources", len(a.marks), len(res))
	}
	host := func(i int, id string) Resource {
		vh := VirtualHost{Hostname: fmt.Sprintf("h%05d.example.com", i), Routes: []Route{{
			ID: id, Match: Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
			Backends: []Backend{{EndpointSet: fmt.Sprintf("default/svc-%d:80", i%n), Weight: 1}},
		}}}
		b, err := json.Marshal(vh)
		if err != nil {
			t.Fatal(err)
		}
		return Resource{Key: VirtualHostKey("30000", vh.Hostname), Body: b}
	}
	for step := range 200 {
		if step%5 == 0 { // a copy tries a change and is dropped
			work := *a
			if _, _, err := work.Apply([]Resource{host(rng.Intn(n), fmt.Sprintf("dropped-%d", step))}, nil); err != nil {
				t.Fatal(err)
			}
		}
		var upserts []Resource
		var removed []string
		switch rng.Intn(5) {
		case 4: // change the resource just before, at or after a mark
			at := (1+rng.Intn(len(res)/digestMarkEvery))*digestMarkEvery + rng.Intn(3) - 1
			r := res[min(at, len(res)-1)]
			switch {
			case strings.HasPrefix(r.Key, vhostKind+"|"):
				var vh VirtualHost
				if err := json.Unmarshal(r.Body, &vh); err != nil {
					t.Fatal(err)
				}
				vh.Routes[0].ID = fmt.Sprintf("m-%d", step)
				b, err := json.Marshal(vh)
				if err != nil {
					t.Fatal(err)
				}
				upserts = append(upserts, Resource{Key: r.Key, Body: b})
			case strings.HasPrefix(r.Key, "endpoints|"):
				b, err := json.Marshal(EndpointSet{Name: strings.TrimPrefix(r.Key, "endpoints|"), Endpoints: []Endpoint{{Address: fmt.Sprintf("10.8.%d.%d", step/250, step%250+1), Port: 8080}}})
				if err != nil {
					t.Fatal(err)
				}
				upserts = append(upserts, Resource{Key: r.Key, Body: b})
			}
		case 0: // reroute a host anywhere
			upserts = append(upserts, host(rng.Intn(n), fmt.Sprintf("r-%d", step)))
		case 1: // add a host after the others, or among them
			upserts = append(upserts, host(n+rng.Intn(n), fmt.Sprintf("a-%d", step)))
		case 2: // remove a host
			i := rng.Intn(len(res))
			if strings.HasPrefix(res[i].Key, vhostKind+"|") {
				removed = append(removed, res[i].Key)
			}
		case 3: // change a set's endpoints
			name := fmt.Sprintf("default/svc-%d:80", rng.Intn(n))
			b, err := json.Marshal(EndpointSet{Name: name, Endpoints: []Endpoint{{Address: fmt.Sprintf("10.9.%d.%d", step/250, step%250+1), Port: 8080}}})
			if err != nil {
				t.Fatal(err)
			}
			upserts = append(upserts, Resource{Key: "endpoints|" + name, Body: b})
		}
		_, got, err := a.Apply(upserts, removed)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, r := range upserts {
			res = upsert(res, r)
		}
		for _, k := range removed {
			res = slices.DeleteFunc(res, func(r Resource) bool { return r.Key == k })
		}
		if want := ResourceVersion(res); got != want {
			t.Fatalf("step %d: version %s, want %s", step, got, want)
		}
	}
}

// TestApplyRefusesAnEmptyBody: an upsert without a body is refused, with
// the bodies kept or not (with digests only, a merged resource without
// its body is one kept as it was: a delta's must never pass for one), and
// the baseline stays.
func TestApplyRefusesAnEmptyBody(t *testing.T) {
	for _, digestsOnly := range []bool{false, true} {
		good := applyFixture(t)
		a := &Assembler{Scope: SharedPool(), Layout: LayoutVirtualHosts, DigestsOnly: digestsOnly}
		if _, _, err := a.Assemble(good); err != nil {
			t.Fatal(err)
		}
		before := a.last
		for _, body := range [][]byte{nil, {}} {
			// With a listener changed too, which Apply assembles in full.
			_, _, err := a.Apply([]Resource{{Key: good[len(good)-1].Key, Body: body},
				{Key: "listener|9090", Body: []byte(`{"name":"l9090","port":9090,"protocol":"HTTP"}`)}}, nil)
			if err == nil || !strings.Contains(err.Error(), "no body") {
				t.Errorf("DigestsOnly %v: an upsert with body %q: error %v, want no body", digestsOnly, body, err)
			}
			if a.last != before {
				t.Errorf("DigestsOnly %v: a refused delta changed the baseline", digestsOnly)
			}
		}
	}
}

// TestPatchSets: random changes (sets replaced and sets put in, in name
// order) made to a list of sets in name order give the list a map of the
// sets by name gives, and the marks say which sets were there before.
func TestPatchSets(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for round := range 200 {
		var sets []*EndpointSet
		for i := range rng.Intn(40) {
			if rng.Intn(3) > 0 {
				sets = append(sets, &EndpointSet{Name: fmt.Sprintf("ns/s%03d:80", 2*i)})
			}
		}
		byName := map[string]*EndpointSet{}
		for _, es := range sets {
			byName[es.Name] = es
		}
		var changes []setChange
		fresh := map[*EndpointSet]bool{}
		for i := range 90 {
			if rng.Intn(6) == 0 {
				es := &EndpointSet{Name: fmt.Sprintf("ns/s%03d:80", i)} // an odd one is new
				changes = append(changes, setChange{name: es.Name, set: es})
				byName[es.Name], fresh[es] = es, true
			}
		}
		got, marks := patchSets(sets, changes)
		want := slices.SortedFunc(maps.Values(byName), func(a, b *EndpointSet) int { return strings.Compare(a.Name, b.Name) })
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: %d sets, want %d", round, len(got), len(want))
		}
		for i, es := range got {
			if marks[i] == fresh[es] {
				t.Fatalf("round %d: set %s marked %v", round, es.Name, marks[i])
			}
		}
	}
}
