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
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// errNoBaseline is Apply's error without a baseline to patch.
var errNoBaseline = errors.New("no assembled snapshot to apply a delta to")

// Apply is Assemble of the resources of the last successful Assemble or
// Apply with upserts put in (each replacing the resource of its key; the
// last of a key listed twice wins) and removed taken out (a key listed in
// both is removed). Its result, version and errors are those; what it
// costs follows the delta: a change to virtual hosts or endpoint sets
// patches the last snapshot (copying only the lists it changes) and
// validates only what changed, plus one pass over every key for the
// version and the list of what it remembers. Any other delta (listeners,
// certificates, Gateways, an endpoint set removed, a body that does not
// decode) is assembled in full. A failure leaves what the assembler
// remembers unchanged; without a baseline (no successful Assemble in a
// layout PerHost yet) it fails.
func (a *Assembler) Apply(upserts []Resource, removed []string) (*Snapshot, string, error) {
	if !a.Layout.PerHost() || a.last == nil {
		return nil, "", errNoBaseline
	}
	for _, r := range upserts {
		if len(r.Body) == 0 { // nothing decodes; and the merge's nil means kept
			return nil, "", fmt.Errorf("resource %q: no body", r.Key)
		}
	}
	changes := deltaChanges(upserts, removed)
	if s, version, ok := a.patch(changes); ok {
		return s, version, nil
	}
	return a.assemble(a.mergedWith(changes), a.DigestsOnly)
}

// change is one key of a delta: its new body, or its removal.
type change struct {
	key    string
	body   []byte
	remove bool
}

// deltaChanges is a delta as one list of changes in key order, one per
// key: the last upsert of a key, or its removal when it is removed.
func deltaChanges(upserts []Resource, removed []string) []change {
	out := make([]change, 0, len(upserts)+len(removed))
	for _, r := range upserts {
		out = append(out, change{key: r.Key, body: r.Body})
	}
	for _, k := range removed {
		out = append(out, change{key: k, remove: true})
	}
	// Stable: of one key's entries, upserts come in their order before
	// removals, and the last one decides.
	slices.SortStableFunc(out, func(a, b change) int { return strings.Compare(a.key, b.key) })
	dedup := out[:0]
	for i, c := range out {
		if i+1 < len(out) && out[i+1].key == c.key {
			continue
		}
		dedup = append(dedup, c)
	}
	return dedup
}

// mergedWith is the resources last assembled with changes made, in key
// order: what Apply assembles in full. A resource whose body is not kept
// (DigestsOnly) comes without one: assemble takes it as kept.
func (a *Assembler) mergedWith(changes []change) []Resource {
	out := make([]Resource, 0, len(a.decoded)+len(changes))
	prev := a.decoded
	for len(prev) > 0 || len(changes) > 0 {
		switch {
		case len(changes) == 0 || (len(prev) > 0 && prev[0].key < changes[0].key):
			out = append(out, Resource{Key: prev[0].key, Body: prev[0].d.body})
			prev = prev[1:]
		default:
			c := changes[0]
			if len(prev) > 0 && prev[0].key == c.key {
				prev = prev[1:]
			}
			if !c.remove {
				out = append(out, Resource{Key: c.key, Body: c.body})
			}
			changes = changes[1:]
		}
	}
	return out
}

// hostChange is a virtual host put in or taken out of one listener.
type hostChange struct {
	listener int // index in the snapshot's listeners
	hostname string
	vh       *VirtualHost // nil: removed
}

// setChange is an endpoint set put in.
type setChange struct {
	name string
	set  *EndpointSet
}

// patch is Apply's fast path: the last snapshot with changes made, when
// they touch only virtual hosts and endpoint sets (none removed) of known
// listeners and every new body decodes; ok is false otherwise, and
// nothing is remembered.
func (a *Assembler) patch(changes []change) (s *Snapshot, version string, ok bool) {
	prev := a.decoded
	next := lists.Reuse(a.spare, len(prev)+len(changes))
	var hosts []hostChange
	var sets []setChange
	// first is where next first differs from the list decoded: the
	// version's hash resumes from a mark at or before it
	// (LayoutVirtualHosts). changed is what differs, a removal without
	// its decoded value: the buckets LayoutVersionBuckets hashes again.
	first := -1
	var changed []keptResource
	differs := func(key string, d *decodedResource) {
		if first < 0 {
			first = len(next)
		}
		changed = append(changed, keptResource{key, d})
	}
	for _, c := range changes {
		i, found := slices.BinarySearchFunc(prev, c.key, func(k keptResource, key string) int { return strings.Compare(k.key, key) })
		next = append(next, prev[:i]...)
		prev = prev[i:]
		var old *decodedResource
		if found {
			old = prev[0].d
			prev = prev[1:]
		}
		kind, name, _ := strings.Cut(c.key, "|")
		if c.remove {
			if old == nil {
				continue
			}
			if kind != vhostKind {
				return nil, "", false
			}
			lk, host, _ := strings.Cut(name, "|")
			li, known := a.listenerAt[lk]
			if !known {
				return nil, "", false
			}
			differs(c.key, nil)
			hosts = append(hosts, hostChange{listener: li, hostname: host})
			continue
		}
		var digest *[sha256.Size]byte
		if old != nil {
			same, sum := old.sameBody(c.body)
			if same {
				next = append(next, keptResource{c.key, old})
				continue
			}
			digest = sum
		}
		if kind != vhostKind && kind != "endpoints" {
			return nil, "", false
		}
		v, sourced, err := a.decode(Resource{Key: c.key, Body: c.body})
		if err != nil {
			return nil, "", false
		}
		d := a.keep(c.body, digest, v, sourced)
		differs(c.key, d)
		next = append(next, keptResource{c.key, d})
		switch v := v.(type) {
		case *VirtualHost:
			lk, _, _ := strings.Cut(name, "|")
			li, known := a.listenerAt[lk]
			if !known {
				return nil, "", false
			}
			hosts = append(hosts, hostChange{listener: li, hostname: v.Hostname, vh: v})
		case *EndpointSet:
			sets = append(sets, setChange{name: v.Name, set: v})
		}
	}
	next = append(next, prev...)

	s = new(Snapshot)
	*s = *a.last
	// A patch changes hosts and sets alone: the certificates are the last's.
	known := &validated{hosts: make([][]bool, len(s.Listeners)), sameCerts: true}
	if len(hosts) > 0 {
		s.Listeners = slices.Clone(s.Listeners)
		// changes are in key order: a listener's hosts come together, by
		// hostname.
		for start := 0; start < len(hosts); {
			end := start + 1
			for end < len(hosts) && hosts[end].listener == hosts[start].listener {
				end++
			}
			l := &s.Listeners[hosts[start].listener]
			if vhs, marks, ok := a.sourcedHosts(ListenerKey(l), l.VirtualHosts, hosts[start:end]); ok {
				l.VirtualHosts, known.hosts[hosts[start].listener] = vhs, marks
			} else {
				l.VirtualHosts, known.hosts[hosts[start].listener] = patchHosts(l.VirtualHosts, hosts[start:end])
			}
			start = end
		}
	}
	all := allTrue(s.Listeners, len(s.EndpointSets)+len(sets))
	for i := range s.Listeners {
		if known.hosts[i] == nil {
			known.hosts[i] = all[:len(s.Listeners[i].VirtualHosts)]
		}
	}
	known.sets = all[:len(s.EndpointSets)]
	if len(sets) > 0 {
		s.EndpointSets, known.sets = patchSets(s.EndpointSets, sets)
	}
	if err := validate(s, known); err != nil {
		return nil, "", false
	}
	if first < 0 {
		first = len(next)
	}
	marks, buckets := a.marks, a.buckets
	if a.Layout == LayoutVersionBuckets {
		buckets = buckets.with(changed)
		version = buckets.version()
	} else {
		version, marks = versionOf(next, a.marks, first)
	}
	a.keepDecoded(next)
	a.sets, a.last, a.marks, a.buckets = len(s.EndpointSets), s, marks, buckets
	return s, version, true
}

// allTrue is marks enough for the longest list of hosts in listeners and
// for n endpoint sets, all set: shared, read only.
func allTrue(listeners []Listener, n int) []bool {
	for i := range listeners {
		n = max(n, len(listeners[i].VirtualHosts))
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = true
	}
	return out
}

// patchHosts is hosts (by hostname) with changes (by hostname) made, in a
// new list, and marks saying which of its hosts were there before.
func patchHosts(hosts []*VirtualHost, changes []hostChange) ([]*VirtualHost, []bool) {
	out := make([]*VirtualHost, 0, len(hosts)+len(changes))
	marks := make([]bool, 0, len(hosts)+len(changes))
	mergeHosts(hosts, changes, func(run []*VirtualHost) bool {
		// Unchanged: copied at once.
		out = append(out, run...)
		for range run {
			marks = append(marks, true)
		}
		return true
	}, func(vh *VirtualHost) bool {
		out = append(out, vh)
		marks = append(marks, false)
		return true
	})
	return out, marks
}

// mergeHosts walks hosts (by hostname) with changes (by hostname) made,
// in order: unchanged gets each run of hosts up to the next change, put
// each host a change puts in. Either may stop the walk by reporting
// false; mergeHosts then reports false.
func mergeHosts(hosts []*VirtualHost, changes []hostChange, unchanged func([]*VirtualHost) bool, put func(*VirtualHost) bool) bool {
	for len(hosts) > 0 || len(changes) > 0 {
		if len(changes) == 0 || (len(hosts) > 0 && hosts[0].Hostname < changes[0].hostname) {
			n := len(hosts)
			if len(changes) > 0 {
				n, _ = slices.BinarySearchFunc(hosts, changes[0].hostname, compareHostname)
			}
			if !unchanged(hosts[:n]) {
				return false
			}
			hosts = hosts[n:]
			continue
		}
		c := changes[0]
		changes = changes[1:]
		if len(hosts) > 0 && hosts[0].Hostname == c.hostname {
			hosts = hosts[1:]
		}
		if c.vh != nil && !put(c.vh) {
			return false
		}
	}
	return true
}

// patchSets is sets (by name) with changes (by name) put in, in a new
// list, and marks saying which of its sets were there before. Each change
// is found by binary search and the sets between changes are copied as
// they are: at 10,000 sets, comparing every set's name with the next
// change's read every set of the snapshot at every endpoint change.
func patchSets(sets []*EndpointSet, changes []setChange) ([]*EndpointSet, []bool) {
	out := make([]*EndpointSet, 0, len(sets)+len(changes))
	var put []int // where out has a change's set
	for _, c := range changes {
		n, found := slices.BinarySearchFunc(sets, c.name, func(es *EndpointSet, name string) int { return strings.Compare(es.Name, name) })
		out = append(out, sets[:n]...)
		if found {
			n++
		}
		sets = sets[n:]
		put = append(put, len(out))
		out = append(out, c.set)
	}
	out = append(out, sets...)
	marks := make([]bool, len(out))
	for i := range marks {
		marks[i] = true
	}
	for _, i := range put {
		marks[i] = false
	}
	return out, marks
}

// listenerIndex is the index of each of s's listeners by key.
func listenerIndex(s *Snapshot) map[string]int {
	out := make(map[string]int, len(s.Listeners))
	for i := range s.Listeners {
		out[ListenerKey(&s.Listeners[i])] = i
	}
	return out
}
