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
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// Discovery's server assembles every snapshot it publishes from the
// resources it encoded, as a proxy will (for the version, the Gateways and
// the validation a proxy makes). Decoded, the virtual hosts of 10,000
// routes were a second copy of every route in the controller's heap
// besides the translator's own, kept as long as the snapshot. Given the
// snapshot the resources were encoded from (Assembler.Hosts, HostsOf), the
// Assembler takes each virtual host from it instead: the version is still
// that of the bodies, and validation reads the same values (a body is the
// host's JSON, and decoding it gives the host back:
// TestAssemblerHostsOfSource).
//
// A listener's patched list of hosts is then the source's list itself
// whenever the two hold the very same hosts (sourcedHosts): at 10,000
// hosts a new list was half a megabyte, a fifth of what the controller
// allocated per change.

// decode is the value of r: its virtual host or endpoint set from a.Hosts
// when that has it (sourced), else its body decoded. (Under endpoint
// churn, decoding the set the controller had just encoded, a hundred
// endpoints, was a third of its Assembler's work.)
func (a *Assembler) decode(r Resource) (v any, sourced bool, err error) {
	if a.Hosts != nil {
		if strings.HasPrefix(r.Key, vhostKind+"|") {
			if vh, ok := a.Hosts.Host(r.Key); ok {
				return vh, true, nil
			}
		} else if es, ok := a.Hosts.Set(r.Key); ok {
			return es, true, nil
		}
	}
	v, err = decodeResource(r)
	return v, false, err
}

// valueOf is the value of r, a resource whose body d holds: d's own, or,
// when d keeps none (keep), the source's or the body decoded again.
func (a *Assembler) valueOf(r Resource, d *decodedResource) (any, error) {
	if d.value != nil {
		return d.value, nil
	}
	v, _, err := a.decode(Resource{Key: r.Key, Body: d.body})
	return v, err
}

// HostSource is the snapshot a set of resources was encoded from, for an
// Assembler to take their virtual hosts from (Assembler.Hosts).
type HostSource struct {
	s *Snapshot
	// sorted says s's listeners are in ListenerLess order, each key once
	// (found by binary search, as a translator's snapshot has them);
	// known says sorted was looked at; listenerAt is the index of the
	// listeners by key otherwise, made at the first look-up.
	sorted, known bool
	listenerAt    map[string]int
}

// HostsOf is s as the source of the resources encoded from it.
func HostsOf(s *Snapshot) *HostSource { return &HostSource{s: s} }

// Host finds the virtual host of a resource key in the source: by
// listener key, then by hostname in the listener's hosts (in order by
// hostname, as a normalized snapshot lists them; a host not found where
// it should be is reported missing, and decoded).
func (h *HostSource) Host(key string) (*VirtualHost, bool) {
	rest, ok := strings.CutPrefix(key, vhostKind+"|")
	if !ok {
		return nil, false
	}
	lk, host, ok := strings.Cut(rest, "|")
	if !ok {
		return nil, false
	}
	hosts, found := h.listenerHosts(lk)
	if !found {
		return nil, false
	}
	i, found := slices.BinarySearchFunc(hosts, host, compareHostname)
	if !found {
		return nil, false
	}
	return hosts[i], true
}

// Set finds the endpoint set of a resource key in the source, by name (in
// name order, as a normalized snapshot lists them; a set not found where
// it should be is reported missing, and decoded).
func (h *HostSource) Set(key string) (*EndpointSet, bool) {
	name, ok := strings.CutPrefix(key, setsPrefix)
	if !ok {
		return nil, false
	}
	sets := h.s.EndpointSets
	i, found := slices.BinarySearchFunc(sets, name, func(es *EndpointSet, name string) int { return strings.Compare(es.Name, name) })
	if !found {
		return nil, false
	}
	return sets[i], true
}

// listenerHosts is the virtual hosts of the source's listener of key lk.
func (h *HostSource) listenerHosts(lk string) ([]*VirtualHost, bool) {
	if !h.known {
		h.sorted, h.known = listenersInOrder(h.s.Listeners), true
	}
	var li int
	var found bool
	if h.sorted {
		li, found = searchListener(h.s.Listeners, lk)
	} else {
		if h.listenerAt == nil {
			h.listenerAt = listenerIndex(h.s)
		}
		li, found = h.listenerAt[lk]
	}
	if !found {
		return nil, false
	}
	return h.s.Listeners[li].VirtualHosts, true
}

// sourcedHosts is patchHosts(hosts, changes), with its marks (the same
// walk, mergeHosts), when the source's list of listener lk's hosts can
// stand for it: that list, with no copy made. It can when it names the
// same hosts in the same order, and each changed host is the source's own
// (sameHost). An unchanged host has the body it had, so the source's is
// as good as the one it replaces; and it is the one a proxy decodes. ok
// is false otherwise (no source, a host decoded or missing).
func (a *Assembler) sourcedHosts(lk string, hosts []*VirtualHost, changes []hostChange) (out []*VirtualHost, marks []bool, ok bool) {
	if a.Hosts == nil {
		return nil, nil, false
	}
	src, found := a.Hosts.listenerHosts(lk)
	if !found {
		return nil, nil, false
	}
	marks = make([]bool, 0, len(src))
	next := src
	take := func(vh *VirtualHost, was bool) bool {
		// The very host first: no look at either (10,000 hosts scattered
		// over the heap).
		if len(next) == 0 || (next[0] != vh && (vh.Hostname != next[0].Hostname || (!was && !sameHost(vh, next[0])))) {
			return false
		}
		next = next[1:]
		marks = append(marks, was)
		return true
	}
	same := mergeHosts(hosts, changes, func(run []*VirtualHost) bool {
		for _, vh := range run {
			if !take(vh, true) {
				return false
			}
		}
		return true
	}, func(vh *VirtualHost) bool { return take(vh, false) })
	if !same || len(next) > 0 {
		return nil, nil, false
	}
	return src, marks, true
}

// sameHost reports whether a and b are the same host: the very same one,
// or the same name and flag and the very same route list.
func sameHost(a, b *VirtualHost) bool {
	return a == b || a.Hostname == b.Hostname && a.SingleLabelWildcard == b.SingleLabelWildcard && lists.Same(a.Routes, b.Routes)
}
