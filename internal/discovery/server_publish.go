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
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// published is one scope's current snapshot in wire form.
type published struct {
	version   string
	keys      []string          // sorted
	bodies    map[string][]byte // key → canonical JSON
	gateways  []snapshot.GatewayRef
	published time.Time

	// The resources of the messages that bring a proxy to this snapshot,
	// computed once and shared by every stream's message (gRPC only reads
	// them): the full list, and the delta from each baseline proxies hold.
	msgMu sync.Mutex
	full  []*discoveryv1.Resource
	// deltas is keyed by the baseline's version, not the baseline itself:
	// a snapshot must not keep older ones (and, through theirs, every
	// earlier one) alive.
	deltas map[string]resourceDelta
}

// resourceDelta is what delta returns.
type resourceDelta struct {
	upserts []*discoveryv1.Resource
	removed []string
}

// maxCachedDeltas bounds the deltas a snapshot keeps: the proxies of a
// scope hold one or two baselines, rarely more.
const maxCachedDeltas = 8

// fullResources lists every resource of p, in key order.
func (p *published) fullResources() []*discoveryv1.Resource {
	p.msgMu.Lock()
	defer p.msgMu.Unlock()
	if p.full == nil {
		p.full = make([]*discoveryv1.Resource, 0, len(p.keys))
		for _, k := range p.keys {
			p.full = append(p.full, &discoveryv1.Resource{Key: k, Body: p.bodies[k]})
		}
	}
	return p.full
}

// deltaFrom is delta(base, p), computed once per baseline rather than once
// per stream.
func (p *published) deltaFrom(base *published) (upserts []*discoveryv1.Resource, removed []string) {
	p.msgMu.Lock()
	defer p.msgMu.Unlock()
	if d, ok := p.deltas[base.version]; ok {
		return d.upserts, d.removed
	}
	upserts, removed = delta(base, p)
	if len(p.deltas) < maxCachedDeltas {
		if p.deltas == nil {
			p.deltas = map[string]resourceDelta{}
		}
		p.deltas[base.version] = resourceDelta{upserts: upserts, removed: removed}
	}
	return upserts, removed
}

// Publish replaces the snapshots of all scopes; scopes not listed are
// dropped (their proxies keep their last snapshot). Invalid snapshots are
// skipped, keeping the scope's previous snapshot, and reported in the error.
// Subscribers with a message in flight get the newest snapshot once they
// ack (intermediate rebuilds coalesce).
func (s *Server) Publish(snaps []*snapshot.Snapshot) error {
	next, errs := s.nextScopes(snaps, time.Now())
	changed := s.swapScopes(next)
	s.metrics.publishes.Inc()
	if changed {
		s.signalDataPlane()
	}
	return errors.Join(errs...)
}

// nextScopes converts the snapshots to their wire form, one per scope; an
// invalid snapshot is reported and its scope keeps what it has now.
func (s *Server) nextScopes(snaps []*snapshot.Snapshot, now time.Time) (map[snapshot.Scope]*published, []error) {
	next := map[snapshot.Scope]*published{}
	var errs []error
	for _, snap := range snaps {
		if snap == nil {
			continue
		}
		if _, dup := next[snap.Scope]; dup {
			errs = append(errs, fmt.Errorf("scope %s published twice", snap.Scope))
			continue
		}
		p, err := toPublished(snap)
		if err != nil {
			s.metrics.publishErrors.Inc()
			errs = append(errs, fmt.Errorf("scope %s: %w", snap.Scope, err))
			s.mu.Lock()
			if old := s.scopes[snap.Scope]; old != nil {
				next[snap.Scope] = old
			}
			s.mu.Unlock()
			continue
		}
		p.published = now
		next[snap.Scope] = p
	}
	return next, errs
}

// swapScopes installs next, keeping the current value of every scope whose
// version did not change, and wakes every stream if anything changed.
func (s *Server) swapScopes(next map[snapshot.Scope]*published) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc, p := range next {
		if old := s.scopes[sc]; old != nil && old.version == p.version {
			next[sc] = old
			continue
		}
		changed = true
	}
	if len(next) != len(s.scopes) {
		changed = true
	}
	s.scopes = next
	if changed {
		for c := range s.conns {
			signal(c.notify)
		}
	}
	return changed
}

// toPublished splits a snapshot into keyed resources and derives the version
// the proxy will compute after reassembling them.
func toPublished(snap *snapshot.Snapshot) (*published, error) {
	res, err := snapshot.Resources(snap)
	if err != nil {
		return nil, err
	}
	assembled, err := snapshot.Assemble(snap.Scope, res)
	if err != nil {
		return nil, err
	}
	version, err := snapshot.Version(assembled)
	if err != nil {
		return nil, err
	}
	p := &published{version: version, bodies: make(map[string][]byte, len(res)), gateways: assembled.Gateways}
	for _, r := range res {
		if _, dup := p.bodies[r.Key]; dup {
			return nil, fmt.Errorf("duplicate resource key %q", r.Key)
		}
		p.bodies[r.Key] = r.Body
		p.keys = append(p.keys, r.Key)
	}
	return p, nil
}

// delta lists the resources of cur that are new or changed since base, and
// the keys base has that cur lacks, both sorted.
func delta(base, cur *published) (upserts []*discoveryv1.Resource, removed []string) {
	for _, k := range cur.keys {
		if old, ok := base.bodies[k]; ok && bytes.Equal(old, cur.bodies[k]) {
			continue
		}
		upserts = append(upserts, &discoveryv1.Resource{Key: k, Body: cur.bodies[k]})
	}
	for _, k := range base.keys {
		if _, ok := cur.bodies[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Strings(removed)
	return upserts, removed
}
