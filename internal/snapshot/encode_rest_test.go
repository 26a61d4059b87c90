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
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// restSnapshot is a scope of n Gateways, each with an HTTP listener on
// its own port that claims one hostname and has no routes (as idle shared
// Gateways are), one HTTPS listener, endpoint sets and a certificate.
func restSnapshot(n int) *Snapshot {
	s := &Snapshot{Scope: SharedPool()}
	for i := range n {
		port := int32(30000 + i)
		s.Listeners = append(s.Listeners, Listener{
			Name: fmt.Sprintf("gateway/default/gw-%d/80", i), Port: port, ExternalPort: 80, Protocol: ProtocolHTTP,
			VirtualHosts: []*VirtualHost{{Hostname: fmt.Sprintf("gw-%d.example.org", i)}},
		})
		s.Gateways = append(s.Gateways, GatewayRef{Namespace: "default", Name: fmt.Sprintf("gw-%d", i), Generation: 1, Ports: []int32{port}})
		s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: fmt.Sprintf("default/svc-%d:80", i), Endpoints: []Endpoint{{Address: fmt.Sprintf("10.0.0.%d", i+1), Port: 8080}}})
	}
	s.Listeners = append(s.Listeners, Listener{
		Name: "gateway/default/tls/443", Port: 443, Protocol: ProtocolHTTPS,
		TLS:          &ListenerTLS{Certificates: []SNICertificate{{Certificate: "default/cert"}}},
		VirtualHosts: []*VirtualHost{{Hostname: "*"}},
	})
	s.Certificates = []Certificate{{Name: "default/cert", CertPEM: "cert", KeyPEM: "key"}}
	Normalize(s)
	return s
}

// TestEncoderKeepsTheRest drives one Encoder through changes to the rest
// of a snapshot (a listener's TLS settings, a Gateway's generation or
// ports, a set's endpoints or policy, a certificate; items added and
// removed) and through calls that change nothing: every result equals a
// fresh Encoder's, and every resource that did not change keeps the body
// the Encoder made before (hosts without routes among them).
// ownSet puts a copy of sets[i] in its place, to be changed (a
// snapshot's sets are shared with the snapshots after it), and returns it.
func ownSet(sets []*EndpointSet, i int) *EndpointSet {
	c := *sets[i]
	sets[i] = &c
	return &c
}

func TestEncoderKeepsTheRest(t *testing.T) {
	// One chunk of sets, mostly, and chunks of 2 on average (encodeSets
	// then hands chunks on whole, or not, at every step).
	for _, mask := range []uint32{0, 1} {
		t.Run(fmt.Sprintf("mask=%d", mask), func(t *testing.T) { encoderKeepsTheRest(t, mask) })
	}
}

func encoderKeepsTheRest(t *testing.T, mask uint32) {
	rng := rand.New(rand.NewSource(7))
	s := restSnapshot(40)
	e := &Encoder{mask: mask}
	var prev map[string][]byte
	for step := range 300 {
		next := *s
		next.Listeners = slices.Clone(s.Listeners)
		next.Gateways = slices.Clone(s.Gateways)
		next.EndpointSets = slices.Clone(s.EndpointSets)
		next.Certificates = slices.Clone(s.Certificates)
		changed := ""
		switch rng.Intn(11) {
		case 0: // new TLS settings, equal in value or with one more hostname
			l := &next.Listeners[slices.IndexFunc(next.Listeners, func(l Listener) bool { return l.TLS != nil })]
			tls := *l.TLS
			if step%2 == 1 {
				tls.Certificates = append(slices.Clone(tls.Certificates), SNICertificate{Hostname: fmt.Sprintf("h%d.example.com", step), Certificate: "default/cert"})
			}
			l.TLS = &tls
			changed = "listener|" + ListenerKey(l)
		case 1:
			g := &next.Gateways[rng.Intn(len(next.Gateways))]
			g.Generation++
			changed = "gateway|" + g.Namespace + "/" + g.Name
		case 2: // the same ports in a new list
			g := &next.Gateways[rng.Intn(len(next.Gateways))]
			g.Ports = slices.Clone(g.Ports)
		case 3: // the same endpoints in a new list
			es := ownSet(next.EndpointSets, rng.Intn(len(next.EndpointSets)))
			es.Endpoints = slices.Clone(es.Endpoints)
			changed = "endpoints|" + es.Name
		case 4:
			es := ownSet(next.EndpointSets, rng.Intn(len(next.EndpointSets)))
			es.ConnectTimeout++
			changed = "endpoints|" + es.Name
		case 5:
			next.Certificates[0].KeyPEM += "x"
			changed = "cert|default/cert"
		case 6: // a set removed, and one added
			i := rng.Intn(len(next.EndpointSets))
			next.EndpointSets = slices.Delete(next.EndpointSets, i, i+1)
			name := fmt.Sprintf("default/added-%d:80", step)
			next.EndpointSets = append(next.EndpointSets, &EndpointSet{Name: name})
			slices.SortFunc(next.EndpointSets, func(a, b *EndpointSet) int { return strings.Compare(a.Name, b.Name) })
			changed = "endpoints|" + name
		case 7: // a Gateway and its listener removed
			if len(next.Gateways) > 2 {
				i := rng.Intn(len(next.Gateways))
				port := next.Gateways[i].Ports[0]
				next.Gateways = slices.Delete(next.Gateways, i, i+1)
				next.Listeners = slices.DeleteFunc(next.Listeners, func(l Listener) bool { return l.Port == port })
			}
		case 9: // other endpoints
			es := ownSet(next.EndpointSets, rng.Intn(len(next.EndpointSets)))
			es.Endpoints = []Endpoint{{Address: fmt.Sprintf("10.1.0.%d", step%250+1), Port: 8080}}
			changed = "endpoints|" + es.Name
		case 8: // a host without routes renamed
			l := &next.Listeners[rng.Intn(len(next.Listeners))]
			l.VirtualHosts = []*VirtualHost{{Hostname: fmt.Sprintf("renamed-%d.example.org", step)}}
			changed = VirtualHostKey(ListenerKey(l), l.VirtualHosts[0].Hostname)
		case 10: // a set copied, unchanged (as a full translation makes it)
			ownSet(next.EndpointSets, rng.Intn(len(next.EndpointSets)))
		}
		Normalize(&next)
		got, err := e.Resources(&next)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ResourcesIn(LayoutVirtualHosts, &next)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d resources, want %d", step, len(got), len(want))
		}
		bodies := map[string][]byte{}
		for i := range want {
			if got[i].Key != want[i].Key || !bytes.Equal(got[i].Body, want[i].Body) {
				t.Fatalf("step %d: resource %s differs from a fresh Encoder's", step, want[i].Key)
			}
			bodies[got[i].Key] = got[i].Body
			if b, ok := prev[got[i].Key]; ok && got[i].Key != changed && &b[0] != &got[i].Body[0] {
				t.Fatalf("step %d: unchanged %s was encoded again", step, got[i].Key)
			}
		}
		if _, _, err := (&Assembler{Scope: next.Scope, Layout: LayoutVirtualHosts}).Assemble(got); err != nil {
			t.Fatalf("step %d: the resources do not assemble: %v", step, err)
		}
		// Where a chunk of sets ends depends on the keys alone.
		fresh := &Encoder{mask: mask}
		if _, err := fresh.Resources(&next); err != nil {
			t.Fatal(err)
		}
		if got, want := chunkLens(e.setChunks), chunkLens(fresh.setChunks); !slices.Equal(got, want) {
			t.Fatalf("step %d: chunks of %v sets, a fresh Encoder's %v", step, got, want)
		}
		prev, s = bodies, &next
	}
}

// TestRestFieldsAreTheEncoders: the Encoder compares every field of the
// kinds of the rest; a new field must be compared too.
func TestRestFieldsAreTheEncoders(t *testing.T) {
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[Listener]():    9,
		reflect.TypeFor[EndpointSet](): 11,
		reflect.TypeFor[Certificate](): 3,
		reflect.TypeFor[GatewayRef]():  4,
	} {
		if got := typ.NumField(); got != n {
			t.Errorf("%s has %d fields; teach encode_rest.go's same to compare the new one, then update this test", typ.Name(), got)
		}
	}
}

// chunkLens is how many sets each chunk holds.
func chunkLens(chunks []setChunk) []int {
	var n []int
	for _, c := range chunks {
		n = append(n, len(c.res))
	}
	return n
}

// TestSetChunksEndByKeyOrLength: a chunk of sets that no key ends ends at
// maxHostChunk sets; sets added after the last chunk, which ended with the
// sets, make it anew (it would have gone on), and leave the full ones as
// they were.
func TestSetChunksEndByKeyOrLength(t *testing.T) {
	s := &Snapshot{Scope: SharedPool()}
	for i := range 3000 {
		s.EndpointSets = append(s.EndpointSets, &EndpointSet{Name: fmt.Sprintf("ns/s%05d:80", i)})
	}
	e := &Encoder{mask: 1<<24 - 1} // a key ends a chunk once in 16 million
	first, err := e.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := chunkLens(e.setChunks); !slices.Equal(got, []int{maxHostChunk, maxHostChunk, 3000 - 2*maxHostChunk}) {
		t.Fatalf("chunks of %v sets", got)
	}
	more := *s
	more.EndpointSets = append(slices.Clone(s.EndpointSets), &EndpointSet{Name: "ns/s99999:80"})
	second, err := e.Encode(&more)
	if err != nil {
		t.Fatal(err)
	}
	if got := chunkLens(e.setChunks); !slices.Equal(got, []int{maxHostChunk, maxHostChunk, 3001 - 2*maxHostChunk}) {
		t.Fatalf("after a set added at the end, chunks of %v sets", got)
	}
	if fresh, _ := newChunks(first.Sets, second.Sets); fresh != 1 {
		t.Fatalf("%d new chunks, want the last one alone", fresh)
	}
}

// TestSetsOutOfOrderEncodeInKeyOrder: sets out of name order, after an
// encoding of the same sets in order (whose chunks they then start and
// end in other places), encode in key order all the same.
func TestSetsOutOfOrderEncodeInKeyOrder(t *testing.T) {
	for _, mask := range []uint32{0, 1} {
		s := restSnapshot(40)
		want, err := ResourcesIn(LayoutVirtualHosts, s)
		if err != nil {
			t.Fatal(err)
		}
		e := &Encoder{mask: mask}
		rng := rand.New(rand.NewSource(int64(mask)))
		for round := range 20 {
			next := *s
			next.EndpointSets = slices.Clone(s.EndpointSets)
			switch round % 3 {
			case 1:
				slices.Reverse(next.EndpointSets)
			case 2:
				rng.Shuffle(len(next.EndpointSets), func(i, j int) {
					next.EndpointSets[i], next.EndpointSets[j] = next.EndpointSets[j], next.EndpointSets[i]
				})
			}
			got, err := e.Resources(&next)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || !inStrictOrder(got) {
				t.Fatalf("mask %d, round %d: %d resources, in order %v; want %d", mask, round, len(got), inStrictOrder(got), len(want))
			}
		}
	}
}

// TestEncoderHandsOnAnUnchangedRest: a snapshot whose rest is the last
// one's, each resource encoded as it was, gets the last Encoded's very
// list of it; one with a Gateway changed gets a new list, and the last
// list stays as it was.
func TestEncoderHandsOnAnUnchangedRest(t *testing.T) {
	s := restSnapshot(40)
	Normalize(s)
	e := &Encoder{}
	first, err := e.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	kept := slices.Clone(first.Rest)

	same := *s
	same.Listeners = slices.Clone(s.Listeners)
	same.Listeners[0].VirtualHosts = []*VirtualHost{{Hostname: "new.example.org"}} // hosts are not the rest
	Normalize(&same)
	second, err := e.Encode(&same)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Rest) == 0 || &second.Rest[0] != &first.Rest[0] {
		t.Errorf("an unchanged rest got a new list (%d resources)", len(second.Rest))
	}

	moved := same
	moved.Gateways = slices.Clone(same.Gateways)
	moved.Gateways[3].Generation++
	third, err := e.Encode(&moved)
	if err != nil {
		t.Fatal(err)
	}
	if &third.Rest[0] == &first.Rest[0] {
		t.Fatal("a Gateway changed, and the rest's list is the last one")
	}
	want, err := (&Encoder{}).Encode(&moved)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(third.Rest, want.Rest, func(a, b Resource) bool { return a.Key == b.Key && bytes.Equal(a.Body, b.Body) }) {
		t.Error("the rest after a Gateway changed is not a fresh Encoder's")
	}
	if !slices.EqualFunc(first.Rest, kept, sameEncoding) {
		t.Error("the last Encoded's rest changed")
	}

	// The listener of the greatest key gone: the rest is the last one's
	// but its last resource (listener keys come last).
	fewer := moved
	last := slices.MaxFunc(moved.Listeners, func(a, b Listener) int { return strings.Compare(ListenerKey(&a), ListenerKey(&b)) })
	fewer.Listeners = slices.DeleteFunc(slices.Clone(moved.Listeners), func(l Listener) bool { return ListenerKey(&l) == ListenerKey(&last) })
	fourth, err := e.Encode(&fewer)
	if err != nil {
		t.Fatal(err)
	}
	if len(fourth.Rest) != len(third.Rest)-1 || !slices.EqualFunc(fourth.Rest, third.Rest[:len(fourth.Rest)], sameEncoding) {
		t.Errorf("with the last listener gone: %d resources, want the last %d but one", len(fourth.Rest), len(third.Rest))
	}
}
