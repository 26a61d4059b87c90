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
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

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
}

// keepSources is the Result's endpoint sources, this translation's
// (sources, in its scratch): the very map of the last translation when
// the two are equal, which a route change leaves them (at 10,000 routes a
// new map at every change was a fifth of what it allocated). Otherwise
// the Result keeps sources, and the next scratch has a new map.
func (p *memoPass) keepSources(sources map[string]endpointSource) map[string]endpointSource {
	switch {
	case len(sources) == 0:
		return nil
	case p == nil:
		return sources
	case maps.Equal(p.lastSources, sources):
		p.nextSources = p.lastSources
	default:
		p.scratch.sources, p.nextSources = nil, sources
	}
	return p.nextSources
}

// RefreshEndpoints is Translate(res) for a res that differs from the
// Resources prev was translated from in EndpointSlices alone: only the
// endpoints of prev's endpoint sets depend on slices, so they are listed
// again from res and everything else is prev's. Snapshots whose endpoints
// did not change are prev's own. ok is false when prev did not come from
// Translate; the caller then translates in full. prev is not modified.
func RefreshEndpoints(prev *Result, res *Resources) (out *Result, ok bool) {
	if prev == nil || res == nil || (prev.endpointSources == nil && hasEndpointSets(prev)) {
		return nil, false
	}
	bySvc := map[nn][]*discoveryv1.EndpointSlice{}
	for _, s := range res.EndpointSlices {
		if s == nil {
			continue
		}
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" {
			k := nn{Namespace: s.Namespace, Name: svc}
			bySvc[k] = append(bySvc[k], s)
		}
	}
	for _, list := range bySvc {
		slices.SortFunc(list, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	}
	next := *prev
	next.Snapshots = make([]*snapshot.Snapshot, len(prev.Snapshots))
	for i, s := range prev.Snapshots {
		var sets []snapshot.EndpointSet
		for j := range s.EndpointSets {
			es := &s.EndpointSets[j]
			src, known := prev.endpointSources[es.Name]
			if !known {
				return nil, false
			}
			eps := readyEndpoints(bySvc[src.service], src)
			if slices.Equal(eps, es.Endpoints) {
				continue
			}
			if sets == nil {
				sets = slices.Clone(s.EndpointSets)
			}
			sets[j].Endpoints = eps
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

func hasEndpointSets(r *Result) bool {
	for _, s := range r.Snapshots {
		if len(s.EndpointSets) > 0 {
			return true
		}
	}
	return false
}
