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
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// The rest of a snapshot in LayoutVirtualHosts, besides its virtual
// hosts: its listeners without their hosts, endpoint sets, certificates
// and Gateways, one resource each. From one snapshot of a scope to the
// next nearly all of them stay as they are: at 1,000 Gateways, encoding
// every listener and Gateway reference again was a third of encoding a
// route change, and every endpoint set of the scope was encoded at every
// change. So the Encoder keeps each kind's encodings of its last call, in
// order, matches the next call's items by walking both lists (as it does
// a listener's hosts), and takes the body of an item equal to the one it
// encoded. Equal is decided without encoding: by value, and, for lists
// and pointers, by identity (a snapshot is never modified once built, so
// the same list is the same content); anything else is encoded again.

// encodedItem is one item of the rest as an Encoder last encoded it: the
// value, its resource key and body.
type encodedItem[T any] struct {
	v    T
	key  string
	body []byte
}

// restKind is how one kind of the rest is keyed, ordered and compared.
type restKind[T any] struct {
	key func(*T) string
	// compare orders items as a normalized snapshot lists them.
	compare func(a, b *T) int
	// same reports whether a and b have the same encoding, false when
	// that cannot be told cheaply.
	same func(a, b *T) bool
}

// encodeRest appends the resources of items to out, taking the body of
// prev's item (the last call's encodings, in order) for an item the same
// as it, and returns out with this call's encodings, made in next's
// storage (the call before the last's, which no result keeps). ordered
// says whether the keys it appended are in strict order.
func encodeRest[T any](k restKind[T], items []T, prev, next []encodedItem[T], out []Resource) (_ []Resource, _ []encodedItem[T], ordered bool, _ error) {
	next = lists.Reuse(next, len(items))
	ordered = true
	for i := range items {
		it := &items[i]
		var e encodedItem[T]
		for len(prev) > 0 && k.compare(&prev[0].v, it) < 0 {
			prev = prev[1:]
		}
		if len(prev) > 0 && k.same(&prev[0].v, it) {
			e = prev[0]
			prev = prev[1:]
		} else {
			b, err := json.Marshal(it)
			if err != nil {
				return nil, nil, false, err
			}
			e = encodedItem[T]{key: k.key(it), body: b}
		}
		if i > 0 && ordered && out[len(out)-1].Key >= e.key {
			ordered = false
		}
		e.v = *it
		next = append(next, e)
		out = append(out, Resource{Key: e.key, Body: e.body})
	}
	return out, next, ordered, nil
}

// bareListeners encodes listeners without their hosts (VirtualHosts is
// nil in the items); the stream routes and the TLS and client traffic
// settings are compared by identity.
var bareListeners = restKind[Listener]{
	key:     func(l *Listener) string { return "listener|" + ListenerKey(l) },
	compare: CompareListeners,
	same: func(a, b *Listener) bool {
		return a.Name == b.Name && a.Port == b.Port && a.ExternalPort == b.ExternalPort && a.Protocol == b.Protocol &&
			a.TLS == b.TLS && len(a.VirtualHosts) == 0 && len(b.VirtualHosts) == 0 && lists.Same(a.StreamRoutes, b.StreamRoutes) &&
			a.UDPIdleTimeout == b.UDPIdleTimeout && a.ClientTraffic == b.ClientTraffic
	},
}

// SameEndpointSet reports whether a and b are the same set: equal names
// and settings, and the very endpoint list and policy settings (compared
// by identity: a snapshot's are never modified).
func SameEndpointSet(a, b *EndpointSet) bool {
	return a == b || a.Name == b.Name && a.AppProtocol == b.AppProtocol && a.LoadBalancer == b.LoadBalancer &&
		lists.Same(a.Endpoints, b.Endpoints) && a.TLS == b.TLS && a.Hash == b.Hash &&
		a.ConnectTimeout == b.ConnectTimeout && a.IdleTimeout == b.IdleTimeout &&
		a.CircuitBreaker == b.CircuitBreaker && a.Outlier == b.Outlier && a.HealthCheck == b.HealthCheck
}

var certificates = restKind[Certificate]{
	key:     func(c *Certificate) string { return "cert|" + c.Name },
	compare: func(a, b *Certificate) int { return strings.Compare(a.Name, b.Name) },
	same:    func(a, b *Certificate) bool { return *a == *b },
}

var gatewayRefs = restKind[GatewayRef]{
	key: func(g *GatewayRef) string { return "gateway|" + g.Namespace + "/" + g.Name },
	compare: func(a, b *GatewayRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	},
	same: func(a, b *GatewayRef) bool {
		return a.Namespace == b.Namespace && a.Name == b.Name && a.Generation == b.Generation && slices.Equal(a.Ports, b.Ports)
	},
}

// encodedRest is an Encoder's encodings of the rest, kind by kind (the
// endpoint sets apart: encode_sets.go).
type encodedRest struct {
	listeners []encodedItem[Listener]
	certs     []encodedItem[Certificate]
	gateways  []encodedItem[GatewayRef]
}

// restResources is the resources of s's rest (bare: its listeners
// without hosts), in key order, one per key, but the endpoint sets: those
// are sets, in chunks (encodeSets), so that a change to one set of 10,000
// makes one new chunk of about a hundred and hands the others on, where a
// list of every resource of the rest was 400 KB a change. e.rest are the
// encodings of the last call, e.restSpare those of the call before, whose
// storage this call fills.
func (e *Encoder) restResources(s *Snapshot, bare []Listener) (_ []Resource, sets []HostRun, _ error) {
	prev, next := &e.rest, &e.restSpare
	// Listed in the Encoder's room, then kept (restList).
	out := lists.Reuse(e.restRoom, len(bare)+len(s.Certificates)+len(s.Gateways))
	chunks, err := encodeSets(s.EndpointSets, e.setChunks, e.chunkMask())
	if err != nil {
		return nil, nil, err
	}
	// In the order of their key kinds: cert, (endpoints,) gateway,
	// listener (so the kinds are in order with one another).
	var certsOrdered, gatewaysOrdered, listenersOrdered bool
	if out, next.certs, certsOrdered, err = encodeRest(certificates, s.Certificates, prev.certs, next.certs, out); err != nil {
		return nil, nil, err
	}
	if out, next.gateways, gatewaysOrdered, err = encodeRest(gatewayRefs, s.Gateways, prev.gateways, next.gateways, out); err != nil {
		return nil, nil, err
	}
	if out, next.listeners, listenersOrdered, err = encodeRest(bareListeners, bare, prev.listeners, next.listeners, out); err != nil {
		return nil, nil, err
	}
	e.rest, e.restSpare = e.restSpare, e.rest
	clearRest(&e.restSpare)
	if !certsOrdered || !gatewaysOrdered || !listenersOrdered {
		// Listener keys are port numbers, not in their string order;
		// Gateway keys join namespace and name.
		if err := sortUnique(out); err != nil {
			return nil, nil, err
		}
	}
	e.setChunks = chunks
	if len(chunks) > 0 {
		sets = make([]HostRun, len(chunks))
		for i, c := range chunks {
			sets[i] = HostRun{Prefix: setsPrefix, Resources: c.res}
		}
	}
	return e.restList(out), sets, nil
}

// restList is the rest's resources listed in out (the Encoder's room) as
// a list the result may keep: the last call's when they are the same,
// each the very encoding it had (a route change leaves the rest as it
// was: at 1,000 Gateways, a new list of 2,000 resources at every change
// was a tenth of what the controller allocated), else a copy.
func (e *Encoder) restList(out []Resource) []Resource {
	same := len(out) == len(e.restOut)
	for i := 0; same && i < len(out); i++ {
		same = sameEncoding(out[i], e.restOut[i])
	}
	if !same {
		e.restOut = slices.Clone(out)
	}
	clear(out) // the room keeps no encoding alive
	e.restRoom = out[:0]
	return e.restOut
}

// sameEncoding reports whether a and b are one resource's very encoding:
// the same key and the same body array.
func sameEncoding(a, b Resource) bool {
	return a.Key == b.Key && len(a.Body) == len(b.Body) && (len(a.Body) == 0 || &a.Body[0] == &b.Body[0])
}

// clearRest empties r's lists, keeping their storage: what the call
// before the last encoded must not keep its snapshot's memory.
func clearRest(r *encodedRest) {
	clear(r.listeners)
	clear(r.certs)
	clear(r.gateways)
	r.listeners, r.certs, r.gateways = r.listeners[:0], r.certs[:0], r.gateways[:0]
}
