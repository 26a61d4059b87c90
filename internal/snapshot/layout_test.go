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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// scaled is a snapshot with n virtual hosts on one listener, each routed
// to its own endpoint set, plus a TLS stream listener.
func scaled(n int) *Snapshot {
	s := &Snapshot{Scope: SharedPool()}
	l := Listener{Name: "gateway/default/web/80", Port: 30000, ExternalPort: 80, Protocol: ProtocolHTTP}
	for i := 0; i < n; i++ {
		set := fmt.Sprintf("default/svc-%d:80", i)
		l.VirtualHosts = append(l.VirtualHosts, &VirtualHost{
			Hostname: fmt.Sprintf("h%05d.example.com", i),
			Routes: []Route{{
				ID:       fmt.Sprintf("httproute/default/r%d:0", i),
				Match:    Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
				Backends: []Backend{{EndpointSet: set, Weight: 1}},
			}},
		})
		s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: set, Endpoints: []Endpoint{{Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Port: 8080}}})
	}
	s.Listeners = append(s.Listeners, l)
	s.Gateways = []GatewayRef{{Namespace: "default", Name: "web", Generation: 1, Ports: []int32{30000}}}
	Normalize(s)
	return s
}

// encodeOrFail is Encode for a test.
func encodeOrFail(t testing.TB, s *Snapshot) []byte {
	t.Helper()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLayoutsAssembleTheSameSnapshot(t *testing.T) {
	for _, s := range []*Snapshot{sample(), scaled(5)} {
		want := encodeOrFail(t, s)
		for _, layout := range []Layout{LayoutListeners, LayoutVirtualHosts, LayoutVersionBuckets} {
			res, err := ResourcesIn(layout, s)
			if err != nil {
				t.Fatal(err)
			}
			a := &Assembler{Scope: s.Scope, Layout: layout}
			got, version, err := a.Assemble(res)
			if err != nil {
				t.Fatalf("%s: %v", layout, err)
			}
			if b := encodeOrFail(t, got); !bytes.Equal(b, want) {
				t.Errorf("%s: reassembled snapshot differs:\n got %s\nwant %s", layout, b, want)
			}
			if version == "" {
				t.Errorf("%s: empty version", layout)
			}
		}
	}
}

func TestVirtualHostLayoutKeys(t *testing.T) {
	res, err := ResourcesIn(LayoutVirtualHosts, scaled(2))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range res {
		keys = append(keys, r.Key)
		if strings.HasPrefix(r.Key, "listener|") && bytes.Contains(r.Body, []byte("virtualHosts")) {
			t.Errorf("listener resource %s still carries its virtual hosts: %s", r.Key, r.Body)
		}
	}
	want := "endpoints|default/svc-0:80 endpoints|default/svc-1:80 gateway|default/web listener|30000 vhost|30000|h00000.example.com vhost|30000|h00001.example.com"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys:\n got %s\nwant %s", got, want)
	}
}

// TestAssemblerIncrementalEqualsFresh drives one assembler through random
// changes (routes edited, hosts added and removed, endpoints changed) and
// checks every result against a fresh assembler's: the same snapshot, the
// same version, and the version of the same resources however ordered.
func TestAssemblerIncrementalEqualsFresh(t *testing.T) {
	for _, layout := range perHostLayouts {
		t.Run(layout.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(17))
			s := scaled(40)
			inc := &Assembler{Scope: s.Scope, Layout: layout}
			seen := map[string]string{} // version → encoding
			for step := 0; step < 200; step++ {
				s = mutate(rng, s)
				res, err := ResourcesIn(layout, s)
				if err != nil {
					t.Fatal(err)
				}
				got, gotV, err := inc.Assemble(res)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				rng.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
				fresh, freshV, err := (&Assembler{Scope: s.Scope, Layout: layout}).Assemble(res)
				if err != nil {
					t.Fatalf("step %d fresh: %v", step, err)
				}
				g, f := encodeOrFail(t, got), encodeOrFail(t, fresh)
				if !bytes.Equal(g, f) || gotV != freshV {
					t.Fatalf("step %d: incremental and fresh assembly differ (versions %s, %s)", step, gotV, freshV)
				}
				if !bytes.Equal(g, encodeOrFail(t, s)) {
					t.Fatalf("step %d: the assembled snapshot is not the one split", step)
				}
				if v, err := VersionIn(layout, res); err != nil || gotV != v {
					t.Fatalf("step %d: VersionIn disagrees with the assembler (%v)", step, err)
				}
				if prev, ok := seen[gotV]; ok && prev != string(g) {
					t.Fatalf("step %d: version %s names two different snapshots", step, gotV)
				}
				seen[gotV] = string(g)
			}
		})
	}
}

// mutate returns a copy of s with one random change.
func mutate(rng *rand.Rand, s *Snapshot) *Snapshot {
	b, _ := Encode(s)
	c, err := Decode(b)
	if err != nil {
		panic(err)
	}
	vhs := &c.Listeners[0].VirtualHosts
	switch rng.Intn(4) {
	case 0: // edit one route
		if len(*vhs) > 0 {
			vh := (*vhs)[rng.Intn(len(*vhs))] // a decoded copy: ours to change
			vh.Routes[0].Match.Path.Value = fmt.Sprintf("/p%d", rng.Intn(5))
		}
	case 1: // add a host
		n := rng.Intn(1000)
		*vhs = append(*vhs, &VirtualHost{Hostname: fmt.Sprintf("new%d.example.com", n), Routes: []Route{{
			ID: fmt.Sprintf("httproute/default/new%d:0", n), Match: Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
			Backends: []Backend{{EndpointSet: c.EndpointSets[0].Name, Weight: 1}},
		}}})
		dedupHosts(vhs)
	case 2: // remove a host
		if len(*vhs) > 1 {
			i := rng.Intn(len(*vhs))
			*vhs = append((*vhs)[:i], (*vhs)[i+1:]...)
		}
	case 3: // change an endpoint set
		es := c.EndpointSets[rng.Intn(len(c.EndpointSets))] // decoded: ours to change
		es.Endpoints = append(es.Endpoints, Endpoint{Address: fmt.Sprintf("10.9.0.%d", rng.Intn(250)+1), Port: 8080})
		dedupEndpoints(&es.Endpoints)
	}
	Normalize(c)
	return c
}

func dedupHosts(vhs *[]*VirtualHost) {
	seen := map[string]bool{}
	out := (*vhs)[:0]
	for _, vh := range *vhs {
		if !seen[vh.Hostname] {
			seen[vh.Hostname] = true
			out = append(out, vh)
		}
	}
	*vhs = out
}

func dedupEndpoints(eps *[]Endpoint) {
	seen := map[string]bool{}
	out := (*eps)[:0]
	for _, e := range *eps {
		k := fmt.Sprintf("%s:%d", e.Address, e.Port)
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	*eps = out
}

func TestAssemblerRejectsInconsistentResources(t *testing.T) {
	good, err := ResourcesIn(LayoutVirtualHosts, scaled(1))
	if err != nil {
		t.Fatal(err)
	}
	body := func(key string) []byte {
		for _, r := range good {
			if r.Key == key {
				return r.Body
			}
		}
		t.Fatalf("no resource %s", key)
		return nil
	}
	legacy, err := Resources(scaled(1))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]Resource{
		"a virtual host without its listener": {
			{Key: "vhost|30000|h00000.example.com", Body: body("vhost|30000|h00000.example.com")},
			{Key: "endpoints|default/svc-0:80", Body: body("endpoints|default/svc-0:80")},
		},
		"a virtual host under another hostname's key": {
			{Key: "listener|30000", Body: body("listener|30000")},
			{Key: "vhost|30000|other.example.com", Body: body("vhost|30000|h00000.example.com")},
			{Key: "endpoints|default/svc-0:80", Body: body("endpoints|default/svc-0:80")},
		},
		"a listener that still carries its virtual hosts": legacy,
		"an endpoint set under another name": {
			{Key: "listener|30000", Body: body("listener|30000")},
			{Key: "endpoints|default/other:80", Body: body("endpoints|default/svc-0:80")},
		},
		"an unknown kind":  {{Key: "route|x", Body: []byte(`{}`)}},
		"an unknown field": {{Key: "listener|30000", Body: []byte(`{"name":"x","port":30000,"protocol":"HTTP","surprise":1}`)}},
	}
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			a := &Assembler{Scope: SharedPool(), Layout: LayoutVirtualHosts}
			if _, _, err := a.Assemble(good); err != nil {
				t.Fatal(err)
			}
			remembered := len(a.decoded)
			if _, _, err := a.Assemble(res); err == nil {
				t.Fatal("assembled")
			}
			if len(a.decoded) != remembered {
				t.Error("a failed Assemble changed what the assembler remembers")
			}
		})
	}
}

// BenchmarkAssembleDelta is one virtual host changed among n: what a proxy
// pays per route change.
func BenchmarkAssembleDelta(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		s := scaled(n)
		for _, layout := range []Layout{LayoutListeners, LayoutVirtualHosts, LayoutVersionBuckets} {
			b.Run(fmt.Sprintf("hosts=%d/layout=%s", n, layout), func(b *testing.B) {
				res, err := ResourcesIn(layout, s)
				if err != nil {
					b.Fatal(err)
				}
				a := &Assembler{Scope: s.Scope, Layout: layout}
				if _, _, err := a.Assemble(res); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					// A fresh copy of one body, as a delta brings (equal
					// content: decoding the one changed resource is not
					// what grows with n).
					j := i % len(res)
					res[j].Body = append([]byte(nil), res[j].Body...)
					if _, _, err := a.Assemble(res); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestEncoderEqualsResourcesIn drives one Encoder through snapshots that
// share unchanged virtual hosts' route lists with the one before, as the
// translator's Memo makes them, and through the changes a shared list
// must not hide (a shorter list over the same array, a flag, a renamed
// host): every result equals ResourcesIn's, and unchanged hosts keep their
// encoded body. A hostname twice is refused, also when both share the
// list of a host encoded the step before.
func TestEncoderEqualsResourcesIn(t *testing.T) {
	// One chunk for the 30 hosts, mostly, and chunks of 4 on average.
	for _, mask := range []uint32{0, 3} {
		t.Run(fmt.Sprintf("mask=%d", mask), func(t *testing.T) { encoderEqualsResourcesIn(t, mask) })
	}
}

func encoderEqualsResourcesIn(t *testing.T, mask uint32) {
	rng := rand.New(rand.NewSource(5))
	s := scaled(30)
	// A second listener, first by port but last by key ("vhost|4000|"
	// sorts after "vhost|30000|"): its run is taken over at every step.
	quiet := Listener{Name: "gateway/default/quiet/4000", Port: 4000, ExternalPort: 4000, Protocol: ProtocolHTTP,
		VirtualHosts: []*VirtualHost{{Hostname: "a.quiet.example"}, {Hostname: "b.quiet.example"}}}
	s.Listeners = append([]Listener{quiet}, s.Listeners...)
	e := &Encoder{mask: mask}
	var prev map[string][]byte
	var prevEnc Encoded
	prevUnsorted := false
	for step := 0; step < 200; step++ {
		next := *s
		next.Listeners = slices.Clone(s.Listeners)
		l := &next.Listeners[1]
		l.VirtualHosts = slices.Clone(l.VirtualHosts)
		i := rng.Intn(len(l.VirtualHosts))
		vh := l.VirtualHosts[i]
		// own is vh made the step's own copy, to change: hosts are
		// shared with the last snapshot, and never modified.
		own := func() {
			c := *vh
			vh = &c
			l.VirtualHosts[i] = vh
		}
		changed := vh.Hostname
		unsorted, twice := false, false
		switch rng.Intn(9) {
		case 8: // a hostname twice, sharing its list: refused
			l.VirtualHosts = slices.Insert(l.VirtualHosts, i+1, vh)
			twice = true
		case 7: // the very listeners of the last snapshot (an endpoint refresh): taken over
			next.Listeners = s.Listeners
			l = &next.Listeners[1]
		case 0: // a new route list
			own()
			routes := slices.Clone(vh.Routes)
			routes[0].ID += "x"
			vh.Routes = routes
		case 1: // the same array, one route fewer
			if len(vh.Routes) > 1 {
				own()
				vh.Routes = vh.Routes[:len(vh.Routes)-1]
			}
		case 2:
			own()
			vh.SingleLabelWildcard = !vh.SingleLabelWildcard
		case 3: // renamed, keeping its list
			own()
			vh.Hostname = fmt.Sprintf("renamed%d.example.com", step)
			changed = vh.Hostname
			sortVirtualHosts(l.VirtualHosts)
		case 4: // removed: the hosts after it move up
			if len(l.VirtualHosts) > 2 {
				l.VirtualHosts = slices.Delete(l.VirtualHosts, i, i+1)
			}
		case 5: // added, sharing another host's list: the hosts after it move down
			added := *vh
			added.Hostname = fmt.Sprintf("added%d.example.com", step)
			changed = added.Hostname
			l.VirtualHosts = append(l.VirtualHosts, &added)
			sortVirtualHosts(l.VirtualHosts)
		case 6: // out of order (not normalized): nothing may be mistaken
			j := rng.Intn(len(l.VirtualHosts))
			l.VirtualHosts[i], l.VirtualHosts[j] = l.VirtualHosts[j], l.VirtualHosts[i]
			unsorted = true
		}
		enc, err := e.Encode(&next)
		if twice {
			if err == nil || !strings.Contains(err.Error(), "duplicate resource key") {
				t.Fatalf("step %d: a hostname twice: %v", step, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := enc.Flat()
		if step > 0 {
			checkDiff(t, step, prevEnc, enc)
		}
		quietRun := enc.Runs[len(enc.Runs)-1]
		if len(enc.Runs) < 2 || quietRun.Prefix != VirtualHostKey("4000", "") || len(e.listeners[portKey{port: 4000}].chunks) != 1 ||
			&quietRun.Resources[0] != &e.listeners[portKey{port: 4000}].chunks[0][0] ||
			(step > 0 && &quietRun.Resources[0] != &prevEnc.Runs[len(prevEnc.Runs)-1].Resources[0]) {
			t.Fatalf("step %d: the quiet listener's run is not the one encoded first", step)
		}
		if mask != 0 && len(enc.Runs) < 4 {
			t.Fatalf("step %d: %d runs: the busy listener is not cut into chunks", step, len(enc.Runs))
		}
		want, err := ResourcesIn(LayoutVirtualHosts, &next)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d resources, want %d", step, len(got), len(want))
		}
		bodies := map[string][]byte{}
		for j := range want {
			if got[j].Key != want[j].Key || !bytes.Equal(got[j].Body, want[j].Body) {
				t.Fatalf("step %d: resource %s differs from ResourcesIn's", step, want[j].Key)
			}
			bodies[got[j].Key] = got[j].Body
			if b, ok := prev[got[j].Key]; ok && !unsorted && !prevUnsorted && strings.HasPrefix(got[j].Key, vhostKind+"|") &&
				!strings.HasSuffix(got[j].Key, "|"+changed) && &b[0] != &got[j].Body[0] {
				t.Fatalf("step %d: unchanged %s was encoded again", step, got[j].Key)
			}
		}
		prev, s, prevUnsorted, prevEnc = bodies, &next, unsorted, enc
		if unsorted {
			// In order again for the next step, in a new list: the
			// Encoder may take over the one it encoded (snapshots are
			// never modified).
			l.VirtualHosts = slices.Clone(l.VirtualHosts)
			sortVirtualHosts(l.VirtualHosts)
		}
	}
}

// checkDiff fails unless Diff(prev, cur) is what a comparison of their
// resources by key finds.
func checkDiff(t *testing.T, step int, prev, cur Encoded) {
	t.Helper()
	before := map[string][]byte{}
	for r := range prev.All() {
		before[r.Key] = r.Body
	}
	var wantUp []string
	var wantRm []string
	for r := range cur.All() {
		if b, ok := before[r.Key]; !ok || !bytes.Equal(b, r.Body) {
			wantUp = append(wantUp, r.Key)
		}
		delete(before, r.Key)
	}
	for k := range before {
		wantRm = append(wantRm, k)
	}
	slices.Sort(wantRm)
	up, rm := Diff(prev, cur)
	var gotUp []string
	for _, r := range up {
		gotUp = append(gotUp, r.Key)
	}
	if !slices.Equal(gotUp, wantUp) || !slices.Equal(rm, wantRm) {
		t.Fatalf("step %d: Diff upserts %v removes %v, want %v and %v", step, gotUp, rm, wantUp, wantRm)
	}
}

// TestVirtualHostFieldsAreTheEncoders: the Encoder compares a virtual
// host's hostname, flag and route list; a new field must be compared too.
func TestVirtualHostFieldsAreTheEncoders(t *testing.T) {
	if n := reflect.TypeFor[VirtualHost]().NumField(); n != 3 {
		t.Fatalf("VirtualHost has %d fields; teach Encoder.Resources to compare the new one, then update this test", n)
	}
}

// TestAssemblerEqualsAFreshOne drives one Assembler through random
// resource changes, valid and not: hosts rerouted (sometimes to a set
// that does not exist), removed and added; endpoint sets changed
// (sometimes to an address that is not one), removed while routes still
// name them, and added back. After every change it must agree with a new
// Assembler: the same error or none, and then the same snapshot and
// version. A failed change is dropped, as a proxy keeps its last good
// resources.
func TestAssemblerEqualsAFreshOne(t *testing.T) {
	for _, layout := range perHostLayouts {
		t.Run(layout.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(23))
			good, err := ResourcesIn(layout, scaled(20))
			if err != nil {
				t.Fatal(err)
			}
			body := func(v any) []byte {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			setName := func() string { return fmt.Sprintf("default/svc-%d:80", rng.Intn(24)) }
			a := &Assembler{Scope: SharedPool(), Layout: layout}
			failures := 0
			for step := 0; step < 400; step++ {
				next := slices.Clone(good)
				at := rng.Intn(len(next))
				switch rng.Intn(6) {
				case 0, 1: // reroute a host
					host := fmt.Sprintf("h%05d.example.com", rng.Intn(24))
					vh := VirtualHost{Hostname: host, Routes: []Route{{
						ID: "httproute/default/" + host + ":" + fmt.Sprint(step), Match: Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
						Backends: []Backend{{EndpointSet: setName(), Weight: 1}},
					}}}
					next = upsert(next, Resource{Key: VirtualHostKey("30000", host), Body: body(vh)})
				case 2: // change a set's endpoints
					name := setName()
					addr := fmt.Sprintf("10.1.0.%d", step%250)
					if rng.Intn(8) == 0 {
						addr = "not-an-address"
					}
					next = upsert(next, Resource{Key: "endpoints|" + name, Body: body(EndpointSet{Name: name, Endpoints: []Endpoint{{Address: addr, Port: 8080}}})})
				case 3, 4: // remove a resource (any kind but the listeners)
					if !strings.HasPrefix(next[at].Key, "listener|") {
						next = slices.Delete(next, at, at+1)
					}
				case 5: // the same bodies in fresh memory
					for i := range next {
						next[i].Body = bytes.Clone(next[i].Body)
					}
				}
				rng.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
				want, wantV, wantErr := (&Assembler{Scope: SharedPool(), Layout: layout}).Assemble(next)
				got, gotV, gotErr := a.Assemble(next)
				if (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("step %d: error %v, a fresh Assembler's %v", step, gotErr, wantErr)
				}
				if wantErr != nil {
					failures++
					continue
				}
				if gotV != wantV || !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: the snapshot differs from a fresh Assembler's", step)
				}
				good = next
			}
			if failures == 0 || failures > 300 {
				t.Fatalf("%d of 400 changes failed: the test exercises too little", failures)
			}
			t.Logf("%d of 400 changes were refused", failures)
		})
	}
}

// upsert sets the resource of r.Key to r.
func upsert(res []Resource, r Resource) []Resource {
	for i := range res {
		if res[i].Key == r.Key {
			res[i] = r
			return res
		}
	}
	return append(res, r)
}

// TestEncoderKeyOrderAcrossListeners: with listeners on ports whose keys
// are prefixes of one another (80, 8080, 800) and hosts on each, the
// Encoder still lists every resource once, in strictly increasing key
// order, with the bodies the listeners layout's split gives the rest.
func TestEncoderKeyOrderAcrossListeners(t *testing.T) {
	s := &Snapshot{Scope: SharedPool()}
	hosts := 0
	for _, port := range []int32{80, 443, 8080, 800, 30000, 3000} {
		l := Listener{Name: fmt.Sprintf("gateway/default/web/%d", port), Port: port, ExternalPort: port, Protocol: ProtocolHTTP}
		for _, h := range []string{"a.example.com", "b.example.com", "*.example.com", "z"} {
			l.VirtualHosts = append(l.VirtualHosts, &VirtualHost{Hostname: h, Routes: []Route{{
				ID:       fmt.Sprintf("httproute/default/r%d-%s:0", port, h),
				Match:    Match{Path: &PathMatch{Type: PathPrefix, Value: "/"}},
				Backends: []Backend{{EndpointSet: "default/svc:80", Weight: 1}},
			}}})
			hosts++
		}
		s.Listeners = append(s.Listeners, l)
	}
	s.EndpointSets = []*EndpointSet{{Name: "default/svc:80", Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}}}
	s.Gateways = []GatewayRef{{Namespace: "default", Name: "web", Generation: 1, Ports: []int32{80, 443, 8080, 800, 30000, 3000}}}
	Normalize(s)
	e := &Encoder{}
	for round := range 2 { // encoded, then reused
		got, err := e.Resources(s)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1].Key >= got[i].Key {
				t.Fatalf("round %d: %q listed before %q", round, got[i-1].Key, got[i].Key)
			}
		}
		vhosts := 0
		for _, r := range got {
			if strings.HasPrefix(r.Key, vhostKind+"|") {
				vhosts++
			}
		}
		if vhosts != hosts {
			t.Fatalf("round %d: %d virtual host resources, want %d", round, vhosts, hosts)
		}
		if _, _, err := (&Assembler{Scope: s.Scope, Layout: LayoutVirtualHosts}).Assemble(got); err != nil {
			t.Fatalf("round %d: the resources do not assemble: %v", round, err)
		}
	}
}

// TestEncoderRefusesKeysTwice: the Encoder's list is in key order with no
// key twice, which its callers rely on without a walk of their own. Two
// listeners of one key (whose host runs share a key prefix and interleave)
// and a hostname twice on one listener are refused, in the first call and
// in the next, where the hosts would be taken over.
func TestEncoderRefusesKeysTwice(t *testing.T) {
	listener := func(port int32, hosts ...string) Listener {
		l := Listener{Name: fmt.Sprintf("gateway/default/web/%d", port), Port: port, ExternalPort: port, Protocol: ProtocolHTTP}
		for _, h := range hosts {
			l.VirtualHosts = append(l.VirtualHosts, &VirtualHost{Hostname: h})
		}
		return l
	}
	for name, listeners := range map[string][]Listener{
		"two listeners of a key": {listener(80, "a.example.com", "c.example.com"), listener(80, "b.example.com", "d.example.com")},
		"a hostname twice":       {listener(80, "a.example.com", "a.example.com")},
	} {
		s := &Snapshot{Scope: SharedPool(), Listeners: listeners}
		e := &Encoder{}
		for round := range 2 {
			if _, err := e.Resources(s); err == nil || !strings.Contains(err.Error(), "duplicate resource key") {
				t.Errorf("%s, round %d: %v", name, round, err)
			}
		}
	}
	// An endpoint set name twice, in name order and out of it.
	for name, sets := range map[string][]string{"in order": {"ns/a:80", "ns/a:80", "ns/b:80"}, "out of order": {"ns/b:80", "ns/a:80", "ns/b:80"}} {
		s := &Snapshot{Scope: SharedPool()}
		for _, n := range sets {
			s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: n})
		}
		e := &Encoder{}
		for round := range 2 {
			if _, err := e.Resources(s); err == nil || !strings.Contains(err.Error(), "duplicate resource key") {
				t.Errorf("a set twice, %s, round %d: %v", name, round, err)
			}
		}
	}
	// Runs that are out of order but distinct are put in order: "vhost|8080|"
	// sorts before "vhost|80|".
	s := &Snapshot{Scope: SharedPool(), Listeners: []Listener{listener(80, "a.example.com"), listener(8080, "a.example.com")}}
	e := &Encoder{}
	for round := range 2 {
		got, err := e.Resources(s)
		if err != nil || !inStrictOrder(got) {
			t.Fatalf("round %d: %v, in order %v", round, err, inStrictOrder(got))
		}
	}
}

// TestResourceVersionIsItsFormula pins the version proxies and
// controllers of other releases compute: SHA-256 over every key, in
// order, each followed by a zero byte and the SHA-256 of its body.
func TestResourceVersionIsItsFormula(t *testing.T) {
	res, err := ResourcesIn(LayoutVirtualHosts, scaled(3000)) // more than one chunk of the hash
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, r := range res {
		d := sha256.Sum256(r.Body)
		h.Write([]byte(r.Key))
		h.Write([]byte{0})
		h.Write(d[:])
	}
	want := hex.EncodeToString(h.Sum(nil))
	if got := ResourceVersion(res); got != want {
		t.Fatalf("ResourceVersion = %s, want %s", got, want)
	}
	if _, got, err := (&Assembler{Scope: SharedPool(), Layout: LayoutVirtualHosts}).Assemble(res); err != nil || got != want {
		t.Fatalf("Assemble's version = %s (%v), want %s", got, err, want)
	}
}

// TestEncoderReusesItsScratchLists: encoding the next snapshot of a scope
// allocates the result and what changed, not the Encoder's own lists of
// every host again (at 10,000 hosts those were a tenth of what the
// controller allocated per change), and a listener it takes over costs
// nothing per host (its run is handed on: a list of every resource a
// publish was two thirds of what the controller allocated under endpoint
// churn). Bytes, not time: a count of memory the runtime reports, the
// same on any machine.
func TestEncoderReusesItsScratchLists(t *testing.T) {
	const n = 5000
	s := scaled(n)
	s.EndpointSets = nil // the rest of the snapshot out of the count
	e := &Encoder{}
	for range 2 { // the first two calls make both sets of lists
		if _, err := e.Encode(s); err != nil {
			t.Fatal(err)
		}
	}
	// The same snapshot, then snapshots that grow by a host each (routes
	// being added), made before the count.
	const calls = 4
	next := []*Snapshot{s, s, s, s}
	for range calls {
		g := *next[len(next)-1]
		g.Listeners = slices.Clone(g.Listeners)
		l := &g.Listeners[0]
		added := *l.VirtualHosts[0]
		added.Hostname = fmt.Sprintf("zz%d.example.com", len(next))
		l.VirtualHosts = append(slices.Clone(l.VirtualHosts), &added)
		next = append(next, &g)
	}
	for i := 0; i < len(next); i += calls {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, s := range next[i : i+calls] {
			if _, err := e.Encode(s); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		perHost := float64(after.TotalAlloc-before.TotalAlloc) / calls / n
		// A listener encoded again is a run of one Resource (40 bytes) a
		// host; the host lists and the Encoder's record of them were
		// another 120. The same snapshot is taken over whole.
		limit := 64.0
		if i == 0 {
			limit = 1
		}
		if perHost > limit {
			t.Errorf("calls %d to %d: encoding allocated %.1f bytes a host, want at most %.0f", i, i+calls-1, perHost, limit)
		}
	}
}

// TestEncoderHandsOnUnchangedChunks: at 10,000 hosts a change to one host
// makes new chunks for that host's part of the listener only (one, or
// two when a chunk ends at the host added); every other chunk is the
// very list of the last encoding, and Diff finds the one host.
func TestEncoderHandsOnUnchangedChunks(t *testing.T) {
	s := scaled(10000)
	e := &Encoder{}
	prev, err := e.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prev.Runs); n < 20 || n > 400 {
		t.Fatalf("10,000 hosts in %d chunks, want about 78", n)
	}
	rng := rand.New(rand.NewSource(7))
	for step := 0; step < 60; step++ {
		next := *s
		next.Listeners = slices.Clone(s.Listeners)
		l := &next.Listeners[0]
		l.VirtualHosts = slices.Clone(l.VirtualHosts)
		i := rng.Intn(len(l.VirtualHosts))
		switch step % 3 {
		case 0: // a new route list, in a new host (hosts are shared)
			h := *l.VirtualHosts[i]
			h.Routes = slices.Clone(h.Routes)
			h.Routes[0].ID += "x"
			l.VirtualHosts[i] = &h
		case 1: // added
			added := *l.VirtualHosts[i]
			added.Hostname = fmt.Sprintf("added%d.example.com", step)
			l.VirtualHosts = append(l.VirtualHosts, &added)
			sortVirtualHosts(l.VirtualHosts)
		case 2: // removed
			l.VirtualHosts = slices.Delete(l.VirtualHosts, i, i+1)
		}
		cur, err := e.Encode(&next)
		if err != nil {
			t.Fatal(err)
		}
		fresh, freshHosts := newChunks(prev.Runs, cur.Runs)
		if fresh < 1 || fresh > 2 || freshHosts > 2*maxHostChunk {
			t.Fatalf("step %d: %d new chunks of %d hosts in all, want one or two", step, fresh, freshHosts)
		}
		up, rm := Diff(prev, cur)
		if len(up)+len(rm) != 1 {
			t.Fatalf("step %d: Diff found %d upserts and %d removals, want one change", step, len(up), len(rm))
		}
		checkDiff(t, step, prev, cur)
		prev, s = cur, &next
	}
}

// newChunks counts the chunks of cur that are not chunks of prev (the
// very lists), and their resources.
func newChunks(prev, cur []HostRun) (chunks, resources int) {
	old := map[*Resource]bool{}
	for _, r := range prev {
		old[&r.Resources[0]] = true
	}
	for _, r := range cur {
		if !old[&r.Resources[0]] {
			chunks++
			resources += len(r.Resources)
		}
	}
	return chunks, resources
}

// TestEncoderHandsOnUnchangedSetChunks: at 10,000 endpoint sets, a set
// changed, added or removed makes one or two new chunks of sets, the
// others are the very chunks of the last encoding, and Diff finds the one
// change; sets out of name order still encode in key order.
func TestEncoderHandsOnUnchangedSetChunks(t *testing.T) {
	s := scaled(10000)
	e := &Encoder{}
	prev, err := e.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(prev.Sets); n < 20 || n > 400 {
		t.Fatalf("10,000 sets in %d chunks, want about 78", n)
	}
	rng := rand.New(rand.NewSource(9))
	for step := 0; step < 60; step++ {
		next := *s
		next.EndpointSets = slices.Clone(s.EndpointSets)
		i := rng.Intn(len(next.EndpointSets))
		switch step % 3 {
		case 0: // other endpoints, in a new set (sets are shared)
			es := *next.EndpointSets[i]
			es.Endpoints = []Endpoint{{Address: fmt.Sprintf("10.9.0.%d", step+1), Port: 8080}}
			next.EndpointSets[i] = &es
		case 1: // added
			next.EndpointSets = append(next.EndpointSets, &EndpointSet{Name: fmt.Sprintf("default/added-%d:80", step)})
			normalizeTop(&next)
		case 2: // removed (no route names it: scaled's routes are not checked here)
			next.EndpointSets = slices.Delete(next.EndpointSets, i, i+1)
		}
		cur, err := e.Encode(&next)
		if err != nil {
			t.Fatal(err)
		}
		if fresh, n := newChunks(prev.Sets, cur.Sets); fresh < 1 || fresh > 2 || n > 2*maxHostChunk {
			t.Fatalf("step %d: %d new chunks of %d sets in all, want one or two", step, fresh, n)
		}
		if up, rm := Diff(prev, cur); len(up)+len(rm) != 1 {
			t.Fatalf("step %d: Diff found %d upserts and %d removals, want one change", step, len(up), len(rm))
		}
		checkDiff(t, step, prev, cur)
		prev, s = cur, &next
	}
	// Out of name order: encoded in key order all the same.
	shuffled := *s
	shuffled.EndpointSets = slices.Clone(s.EndpointSets)
	rng.Shuffle(len(shuffled.EndpointSets), func(i, j int) {
		shuffled.EndpointSets[i], shuffled.EndpointSets[j] = shuffled.EndpointSets[j], shuffled.EndpointSets[i]
	})
	got, err := e.Encode(&shuffled)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ResourcesIn(LayoutVirtualHosts, s)
	if err != nil {
		t.Fatal(err)
	}
	if flat := got.Flat(); len(flat) != len(want) || !inStrictOrder(flat) {
		t.Fatalf("shuffled sets: %d resources, in order %v; want %d", len(flat), inStrictOrder(flat), len(want))
	}
	checkDiff(t, -1, prev, got)
}
