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

package translator

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// endpointSource is the Service port an endpoint set lists the endpoints
// of: all that an EndpointSlice change can change in a Result.
type endpointSource struct {
	service  nn
	portName string
	protocol corev1.Protocol
}

// recordSource notes the source of endpoint set name, for the Result
// (keepSources).
func (t *translator) recordSource(name string, src endpointSource) {
	t.sources[name] = src
	t.freshSources++
}

// endpointSources are the sources of a Result's endpoint sets: by set
// name and, built by the first refresh that needs them, the sets of each
// Service (byService). Translations whose sources are equal share one
// (keepSources), so that index is built once for them all.
type endpointSources struct {
	bySet     map[string]endpointSource
	once      sync.Once
	byService map[nn][]string
}

// setsOf is the names of the endpoint sets of Service svc, in no order.
func (e *endpointSources) setsOf(svc nn) []string {
	e.once.Do(func() {
		e.byService = make(map[nn][]string, len(e.bySet))
		for name, src := range e.bySet {
			e.byService[src.service] = append(e.byService[src.service], name)
		}
	})
	return e.byService[svc]
}

// remadeSet is a set remakeSet made, and its Memo entry: its source is
// the entry's.
type remadeSet struct {
	name string
	e    *memoEndpoints
}

// keepSources is the Result's endpoint sources, this translation's
// (sources, in its scratch, and those of the sets remade): those of the
// last translation when the two are equal, which a route change leaves
// them (at 10,000 routes a new map at every change was a fifth of what it
// allocated). Otherwise the Result keeps sources, and the next scratch
// has a new map.
//
// fresh is how many sources recordSource recorded. With none, every
// source is that of a set the last translation made, as it recorded it:
// as many as the last's, they are the last's, without a look at them (at
// 10,000 sets, writing and comparing the maps was a quarter of a route
// change).
func (p *memoPass) keepSources(sources map[string]endpointSource, fresh int, remade []remadeSet) *endpointSources {
	switch {
	case len(sources) == 0 && len(remade) == 0:
		return nil
	case p != nil && p.lastSources != nil && fresh == 0 && len(remade) == len(p.lastSources.bySet):
		p.nextSources = p.lastSources
		return p.nextSources
	}
	for _, r := range remade {
		sources[r.name] = r.e.src
	}
	switch {
	case p == nil:
		return &endpointSources{bySet: sources}
	case p.lastSources != nil && maps.Equal(p.lastSources.bySet, sources):
		p.nextSources = p.lastSources
	default:
		p.scratch.sources, p.nextSources = nil, &endpointSources{bySet: sources}
	}
	return p.nextSources
}

// maxServicesLookedUp bounds the changed Services whose sets
// RefreshEndpoints looks up one by one; with more, every set is listed
// again.
const maxServicesLookedUp = 64

// sliceIndex is the EndpointSlices of each Service among a list of slices
// (of), each Service's in name order. A refresh hands it on to the Result
// it makes, updated with the slices that changed (handOn), so that it is
// built once, by the first refresh after a translation; a refresh from a
// Result whose index was handed on already builds one of its own.
type sliceIndex struct {
	mu    sync.Mutex
	of    []*discoveryv1.EndpointSlice
	bySvc map[nn][]*discoveryv1.EndpointSlice
}

// handOn is idx updated from last's slices to next's (d is their
// difference) when it is last's index, else nil. Each Service's list is
// replaced, never modified, so lists taken before stay as they were.
func (idx *sliceIndex) handOn(last, next []*discoveryv1.EndpointSlice, d sliceDiff) *sliceIndex {
	if idx == nil {
		return nil
	}
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if !lists.Same(idx.of, last) || len(idx.of) != len(last) {
		return nil
	}
	for _, s := range d.gone {
		if svc, ok := serviceOf(s); ok {
			list := slices.DeleteFunc(slices.Clone(idx.bySvc[svc]), func(x *discoveryv1.EndpointSlice) bool { return x == s })
			if len(list) == 0 {
				delete(idx.bySvc, svc)
			} else {
				idx.bySvc[svc] = list
			}
		}
	}
	for _, s := range d.added {
		if svc, ok := serviceOf(s); ok {
			list := append(slices.Clone(idx.bySvc[svc]), s)
			slices.SortFunc(list, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
			idx.bySvc[svc] = list
		}
	}
	idx.of = next
	return idx
}

// lists is the slices of each of the Services.
func (idx *sliceIndex) lists(services map[nn]bool) map[nn][]*discoveryv1.EndpointSlice {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	out := make(map[nn][]*discoveryv1.EndpointSlice, len(services))
	for svc := range services {
		out[svc] = idx.bySvc[svc]
	}
	return out
}

// RefreshEndpoints is Translate(res) for a res that differs from the
// Resources prev was translated from in EndpointSlices alone: only the
// endpoints of prev's endpoint sets depend on slices, so they are listed
// again from res and everything else is prev's. Snapshots whose endpoints
// did not change are prev's own. ok is false when prev did not come from
// Translate; the caller then translates in full. prev is not modified.
//
// Only the sets of the Services whose slices changed are listed again.
// Those are found by comparing res's slices with the ones prev read, in
// key order: objects are never modified, so the same object is the same
// slice (a Resources' lists are in key order when the provider gathers
// them; lists in another order have every set listed again).
func RefreshEndpoints(prev *Result, res *Resources) (out *Result, ok bool) {
	if prev == nil || res == nil || (prev.endpointSources == nil && hasEndpointSets(prev)) {
		return nil, false
	}
	next := *prev
	next.endpointSlices = res.EndpointSlices
	diff, sorted := changedServices(prev.endpointSlices, res.EndpointSlices, prev.slicesSorted)
	changed := diff.changed
	if sorted {
		next.slicesSorted = 1
	} else {
		next.slicesSorted = -1
	}
	next.sliceIndex = nil
	if changed != nil && len(changed) == 0 {
		next.sliceIndex = prev.sliceIndex.handOn(prev.endpointSlices, res.EndpointSlices, diff)
		return &next, true
	}
	var bySvc map[nn][]*discoveryv1.EndpointSlice
	switch {
	case changed == nil:
		bySvc = slicesByService(res.EndpointSlices)
	case len(changed) > maxServicesLookedUp:
		bySvc = slicesByService(res.EndpointSlices)
		next.sliceIndex = &sliceIndex{of: res.EndpointSlices, bySvc: bySvc}
		changed = nil
	default:
		idx := prev.sliceIndex.handOn(prev.endpointSlices, res.EndpointSlices, diff)
		if idx == nil {
			bySvc = slicesByService(res.EndpointSlices)
			idx = &sliceIndex{of: res.EndpointSlices, bySvc: bySvc}
		}
		next.sliceIndex = idx
		bySvc = idx.lists(changed)
	}
	next.Snapshots = make([]*snapshot.Snapshot, len(prev.Snapshots))
	for i, s := range prev.Snapshots {
		sets, ok := refreshSets(s.EndpointSets, prev.endpointSources, bySvc, changed)
		if !ok {
			return nil, false
		}
		if sets == nil {
			next.Snapshots[i] = s
			continue
		}
		cp := *s
		cp.EndpointSets = sets
		next.Snapshots[i] = &cp
	}
	return &next, true
}

// refreshSets is sets with the endpoints listed again from bySvc: every
// set's, or (changed not nil) those of the sets of the changed Services
// alone, found by name (sets are in name order). It is nil when no set's
// endpoints changed; ok is false when a set's source is unknown.
func refreshSets(sets []*snapshot.EndpointSet, sources *endpointSources, bySvc map[nn][]*discoveryv1.EndpointSlice, changed map[nn]bool) (out []*snapshot.EndpointSet, ok bool) {
	refresh := func(j int, src endpointSource) {
		eps := readyEndpoints(bySvc[src.service], src)
		if slices.Equal(eps, sets[j].Endpoints) {
			return
		}
		if out == nil {
			out = slices.Clone(sets)
		}
		es := *sets[j] // sets are shared: a new one
		es.Endpoints = eps
		out[j] = &es
	}
	if len(sets) == 0 {
		return nil, true
	}
	if changed == nil {
		for j := range sets {
			src, known := sources.bySet[sets[j].Name]
			if !known {
				return nil, false
			}
			refresh(j, src)
		}
		return out, true
	}
	for svc := range changed {
		for _, name := range sources.setsOf(svc) {
			j, found := slices.BinarySearchFunc(sets, name, func(es *snapshot.EndpointSet, n string) int { return strings.Compare(es.Name, n) })
			if found {
				refresh(j, sources.bySet[name])
			}
		}
	}
	return out, true
}

// slicesByService groups slices by the Service they are labelled with,
// each group in name order.
func slicesByService(in []*discoveryv1.EndpointSlice) map[nn][]*discoveryv1.EndpointSlice {
	bySvc := map[nn][]*discoveryv1.EndpointSlice{}
	for _, s := range in {
		if svc, ok := serviceOf(s); ok {
			bySvc[svc] = append(bySvc[svc], s)
		}
	}
	for _, list := range bySvc {
		slices.SortFunc(list, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	}
	return bySvc
}

// serviceOf is the Service slice s lists the endpoints of.
func serviceOf(s *discoveryv1.EndpointSlice) (nn, bool) {
	if s == nil {
		return nn{}, false
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	return nn{Namespace: s.Namespace, Name: svc}, svc != ""
}

// sliceDiff is how two lists of slices differ: the slices only the first
// has (gone), those only the second has (added), and their Services.
// changed is nil when that is not known.
type sliceDiff struct {
	changed     map[nn]bool
	gone, added []*discoveryv1.EndpointSlice
}

// changedServices is the difference of last and next: the slices either
// has and the other has not (the same object is the same slice), and
// their Services. Both lists must be in key order; d.changed is nil when
// they are not, or lastSorted (1: yes, -1: no, 0: unknown) says last is
// not. sorted says whether next is in key order.
//
// A pair of next's slices both found in last is in order, as last is; so
// once last is known to be, only the pairs around a slice new to next
// are compared.
func changedServices(last, next []*discoveryv1.EndpointSlice, lastSorted int8) (d sliceDiff, sorted bool) {
	if lastSorted == 0 && inKeyOrder(last) {
		lastSorted = 1
	}
	if lastSorted != 1 {
		return sliceDiff{}, inKeyOrder(next)
	}
	d.changed = map[nn]bool{}
	mark := func(s *discoveryv1.EndpointSlice, to *[]*discoveryv1.EndpointSlice) {
		*to = append(*to, s)
		if svc, ok := serviceOf(s); ok {
			d.changed[svc] = true
		}
	}
	i, j := 0, 0
	found := false // next[j-1] is one of last's
	for i < len(last) || j < len(next) {
		if i < len(last) && j < len(next) && last[i] == next[j] {
			if j > 0 && !found && compareSlices(next[j-1], next[j]) >= 0 {
				return sliceDiff{}, false
			}
			i, j, found = i+1, j+1, true
			continue
		}
		c := 1 // next[j] is new
		switch {
		case j == len(next):
			c = -1 // last[i] is gone
		case next[j] == nil:
			return sliceDiff{}, false
		case i < len(last):
			c = compareSlices(last[i], next[j])
		}
		if c <= 0 {
			mark(last[i], &d.gone)
			i++
		}
		if c >= 0 {
			if j > 0 && compareSlices(next[j-1], next[j]) >= 0 {
				return sliceDiff{}, false
			}
			mark(next[j], &d.added)
			j, found = j+1, false
		}
	}
	return d, true
}

// inKeyOrder says whether slices are in key order, without nils or
// repeats.
func inKeyOrder(in []*discoveryv1.EndpointSlice) bool {
	for i, s := range in {
		if s == nil || (i > 0 && compareSlices(in[i-1], s) >= 0) {
			return false
		}
	}
	return true
}

// compareSlices orders slices by namespace, then name.
func compareSlices(a, b *discoveryv1.EndpointSlice) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

func hasEndpointSets(r *Result) bool {
	for _, s := range r.Snapshots {
		if len(s.EndpointSets) > 0 {
			return true
		}
	}
	return false
}
