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
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// TestAssemblerHostsOfSource drives two Assemblers as discovery's server
// does (encode, diff, apply; assemble in full first) through random
// changes, one decoding every body, one given the snapshot the resources
// were encoded from (HostsOf). Every tenth change routes a host to an
// endpoint set that does not exist. Both must agree at every step: the
// same error or none, the same version, the same snapshot; and the second
// holds the sources' own route lists, not decoded copies.
func TestAssemblerHostsOfSource(t *testing.T) {
	for _, layout := range perHostLayouts {
		t.Run(layout.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(29))
			decoding := &Assembler{Scope: SharedPool(), Layout: layout}
			sourced := &Assembler{Scope: SharedPool(), Layout: layout}
			var enc Encoder
			var last Encoded
			hasLast := false
			s := scaled(40)
			refused, patched := 0, 0
			// The route lists of every source so far: a host unchanged
			// since an earlier step keeps that step's.
			sources := map[*Route]bool{}
			sourceSets := map[*EndpointSet]bool{} // and the sets
			for step := 0; step < 200; step++ {
				cur := mutate(rng, s)
				if step%10 == 9 {
					hosts := slices.Clone(cur.Listeners[0].VirtualHosts)
					at := rng.Intn(len(hosts))
					h := *hosts[at] // hosts are shared: a new one
					h.Routes = slices.Clone(h.Routes)
					h.Routes[0].Backends = []Backend{{EndpointSet: "default/missing:80", Weight: 1}}
					hosts[at] = &h
					cur.Listeners[0].VirtualHosts = hosts
				}
				res, err := enc.Encode(cur)
				if err != nil {
					t.Fatal(err)
				}
				// hostsChanged: a virtual host is put in or taken out.
				hostsChanged := false
				assemble := func(a *Assembler) (*Snapshot, string, error) {
					if !hasLast {
						return a.Assemble(res.Flat())
					}
					upserts, removed := Diff(last, res)
					for _, r := range upserts {
						hostsChanged = hostsChanged || strings.HasPrefix(r.Key, vhostKind+"|")
					}
					for _, k := range removed {
						hostsChanged = hostsChanged || strings.HasPrefix(k, vhostKind+"|")
					}
					return a.Apply(upserts, removed)
				}
				for _, vh := range cur.Listeners[0].VirtualHosts {
					sources[&vh.Routes[0]] = true
				}
				for _, es := range cur.EndpointSets {
					sourceSets[es] = true
				}
				want, wantV, wantErr := assemble(decoding)
				sourced.Hosts = HostsOf(cur)
				got, gotV, gotErr := assemble(sourced)
				sourced.Hosts = nil
				if (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("step %d: error %v, decoding %v", step, gotErr, wantErr)
				}
				if wantErr != nil {
					refused++
					continue
				}
				if gotV != wantV || !bytes.Equal(encodeOrFail(t, got), encodeOrFail(t, want)) {
					t.Fatalf("step %d: version %s and snapshot differ from decoding's (%s)", step, gotV, wantV)
				}
				for _, vh := range got.Listeners[0].VirtualHosts {
					if !sources[&vh.Routes[0]] {
						t.Fatalf("step %d: host %s's routes are a decoded copy, not a source's", step, vh.Hostname)
					}
				}
				for _, es := range got.EndpointSets {
					if !sourceSets[es] {
						t.Fatalf("step %d: set %s is a decoded copy, not a source's", step, es.Name)
					}
				}
				// A patched list of hosts is the source's own, not a copy.
				if hostsChanged && !lists.Same(got.Listeners[0].VirtualHosts, cur.Listeners[0].VirtualHosts) {
					t.Fatalf("step %d: the listener's hosts are a copy, not the source's list", step)
				}
				if hostsChanged {
					patched++
				}
				last, hasLast, s = res, true, cur
			}
			if refused != 20 {
				t.Errorf("%d of the 20 changes to a missing set were refused", refused)
			}
			if patched < 100 {
				t.Errorf("only %d of 180 accepted changes patched hosts", patched)
			}
		})
	}
}

// HostsOf finds a host by its resource key, and nothing for a key of
// another kind, listener or hostname.
func TestHostsOf(t *testing.T) {
	s := scaled(5)
	hosts := HostsOf(s)
	vh, ok := hosts.Host(VirtualHostKey("30000", "h00003.example.com"))
	if !ok || vh.Hostname != "h00003.example.com" || !lists.Same(vh.Routes, s.Listeners[0].VirtualHosts[3].Routes) {
		t.Errorf("h00003: %v %v", vh.Hostname, ok)
	}
	for _, key := range []string{
		VirtualHostKey("30000", "nowhere.example.com"),
		VirtualHostKey("30001", "h00003.example.com"),
		"endpoints|default/svc-1:80",
		"vhost|30000",
	} {
		if _, ok := hosts.Host(key); ok {
			t.Errorf("%s: found", key)
		}
	}
	// And a set by its key, nothing for another kind or name.
	if es, ok := hosts.Set("endpoints|" + s.EndpointSets[0].Name); !ok || es != s.EndpointSets[0] {
		t.Errorf("set %s: %v", s.EndpointSets[0].Name, ok)
	}
	for _, key := range []string{"endpoints|default/nowhere:80", VirtualHostKey("30000", "h00003.example.com"), s.EndpointSets[0].Name} {
		if _, ok := hosts.Set(key); ok {
			t.Errorf("set %s: found", key)
		}
	}
}

// sourcedHosts stands the source's list for the patched one only when
// both name the same hosts in order and every changed host is the
// source's own; anything else is copied as before (patchHosts).
func TestSourcedHostsOnlyWhenTheSame(t *testing.T) {
	old := scaled(4).Listeners[0].VirtualHosts // h00000 ... h00003
	src := scaled(5)
	lk := ListenerKey(&src.Listeners[0])
	hosts := src.Listeners[0].VirtualHosts // h00000 ... h00004
	own := hosts[4]
	decoded := *hosts[4]
	decoded.Routes = slices.Clone(decoded.Routes)
	a := &Assembler{Hosts: HostsOf(src)}
	for _, tc := range []struct {
		name    string
		changes []hostChange
		want    bool
	}{
		{"the source's host put in", []hostChange{{hostname: own.Hostname, vh: own}}, true},
		{"a decoded copy put in", []hostChange{{hostname: own.Hostname, vh: &decoded}}, false},
		{"nothing put in: the source has one more", nil, false},
		{"one more host than the source", []hostChange{{hostname: own.Hostname, vh: own}, {hostname: "h00005.example.com", vh: &VirtualHost{Hostname: "h00005.example.com"}}}, false},
		{"a host the source has taken out", []hostChange{{hostname: hosts[1].Hostname}, {hostname: own.Hostname, vh: own}}, false},
	} {
		got, marks, ok := a.sourcedHosts(lk, old, tc.changes)
		if ok != tc.want {
			t.Errorf("%s: ok %v", tc.name, ok)
			continue
		}
		if !ok {
			continue
		}
		if !lists.Same(got, hosts) || !slices.Equal(marks, []bool{true, true, true, true, false}) {
			t.Errorf("%s: %d hosts, marks %v", tc.name, len(got), marks)
		}
	}
	if _, _, ok := a.sourcedHosts("no-such-listener", old, []hostChange{{hostname: own.Hostname, vh: own}}); ok {
		t.Error("a listener the source does not have")
	}
	if _, _, ok := (&Assembler{}).sourcedHosts(lk, old, []hostChange{{hostname: own.Hostname, vh: own}}); ok {
		t.Error("no source")
	}
}

// An Assembler given its sources keeps none of their hosts or sets: a
// host the translator made again as an equal one (a route's status
// written is a new object, compiled again) has the body it had, and the
// host kept with that body would be a second copy of the host and its
// routes beside the source's. The Encoder keeps the very body it had for
// such a host, and an assembly in full from what the Assembler kept
// takes the hosts from the source of the day, or decodes them.
func TestAssemblerKeepsNoHostOfItsSources(t *testing.T) {
	for _, layout := range perHostLayouts {
		t.Run(layout.String(), func(t *testing.T) {
			var enc Encoder
			first := scaled(20)
			res1, err := enc.Encode(first)
			if err != nil {
				t.Fatal(err)
			}
			bodies := map[string][]byte{}
			for _, r := range res1.Flat() {
				bodies[r.Key] = r.Body
			}
			a := &Assembler{Scope: SharedPool(), Layout: layout, Hosts: HostsOf(first)}
			if _, _, err := a.Assemble(res1.Flat()); err != nil {
				t.Fatal(err)
			}
			// Every host and set made again, equal; one host changed.
			again := roundTrip(t, first)
			again.Listeners[0].VirtualHosts[3].Routes[0].Match.Path.Value = "/changed"
			res2, err := enc.Encode(again)
			if err != nil {
				t.Fatal(err)
			}
			changed := VirtualHostKey(ListenerKey(&again.Listeners[0]), again.Listeners[0].VirtualHosts[3].Hostname)
			for _, r := range res2.Flat() {
				if b := bodies[r.Key]; strings.HasPrefix(r.Key, vhostKind+"|") && r.Key != changed && &b[0] != &r.Body[0] {
					t.Errorf("%s: encoded again as a new body", r.Key)
				}
			}
			upserts, removed := Diff(res1, res2)
			if len(upserts) != 1 || upserts[0].Key != changed || len(removed) != 0 {
				t.Fatalf("delta %d upserts, %d removed; want the changed host alone", len(upserts), len(removed))
			}
			a.Hosts = HostsOf(again)
			got, _, err := a.Apply(upserts, removed)
			a.Hosts = nil
			if err != nil {
				t.Fatal(err)
			}
			if !lists.Same(got.Listeners[0].VirtualHosts, again.Listeners[0].VirtualHosts) {
				t.Error("the listener's hosts are not the source's list")
			}
			old := map[any]bool{} // the first source's hosts and sets
			for _, vh := range first.Listeners[0].VirtualHosts {
				old[vh] = true
			}
			for _, es := range first.EndpointSets {
				old[es] = true
			}
			for _, k := range slices.Concat(a.decoded, a.spare[:cap(a.spare)]) {
				if k.d == nil {
					continue
				}
				if v, ok := k.d.value.(*VirtualHost); ok && old[v] {
					t.Errorf("%s: the Assembler keeps the first source's host", k.key)
				}
				if v, ok := k.d.value.(*EndpointSet); ok && old[v] {
					t.Errorf("%s: the Assembler keeps the first source's value", k.key)
				}
			}
			// A change of the Gateways assembles in full from what was kept:
			// with a source, its hosts; without one, the bodies decoded.
			third := roundTrip(t, again)
			third.Gateways[0].Generation++
			res3, err := enc.Encode(third)
			if err != nil {
				t.Fatal(err)
			}
			upserts, removed = Diff(res2, res3)
			fresh := &Assembler{Scope: SharedPool(), Layout: layout}
			want, wantV, err := fresh.Assemble(res3.Flat())
			if err != nil {
				t.Fatal(err)
			}
			for _, sourced := range []bool{true, false} {
				b := *a // both from the same state: each writes only spare storage
				b.spare = nil
				if sourced {
					b.Hosts = HostsOf(third)
				}
				full, fullV, err := b.Apply(upserts, removed)
				if err != nil {
					t.Fatal(err)
				}
				if fullV != wantV || !bytes.Equal(encodeOrFail(t, full), encodeOrFail(t, want)) {
					t.Fatalf("sourced %v: version %s and snapshot differ from a fresh Assembler's (%s)", sourced, fullV, wantV)
				}
				if sourced && !slices.Equal(full.Listeners[0].VirtualHosts, third.Listeners[0].VirtualHosts) {
					t.Error("assembled in full: the hosts are not the source's")
				}
			}
		})
	}
}

// roundTrip is s encoded and decoded: every host, route and set a new,
// equal one.
func roundTrip(t *testing.T, s *Snapshot) *Snapshot {
	t.Helper()
	c, err := Decode(encodeOrFail(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
