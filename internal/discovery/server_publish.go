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
	"errors"
	"fmt"
	"sync"
	"time"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// published is one scope's current snapshot, in the wire form of each
// layout a proxy of the scope reads. Its version, the one status, acks and
// the fleet view compare, is that of RichestLayout; a stream in another
// layout sends and acks that layout's version of the same snapshot.
type published struct {
	version   string
	gateways  []snapshot.GatewayRef
	published time.Time
	snap      *snapshot.Snapshot // for the forms made on demand

	formsMu sync.Mutex
	forms   map[snapshot.Layout]*form
}

// form is a snapshot in one layout: its resources and version, and the
// messages that bring a proxy to it, computed once and shared by every
// stream (gRPC only reads them): the full list, and the delta from each
// baseline proxies hold.
type form struct {
	version string
	// res is every resource (key, canonical JSON), in key order, one per
	// key: a form in a layout PerHost shares the runs of unchanged
	// listeners with the forms before it.
	res snapshot.Encoded

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

// form returns p in layout, making it on first use (a layout only older
// proxies read costs nothing until one of them subscribes).
func (p *published) form(layout snapshot.Layout) (*form, error) {
	p.formsMu.Lock()
	defer p.formsMu.Unlock()
	if f := p.forms[layout]; f != nil {
		return f, nil
	}
	if rich := p.forms[RichestLayout]; rich != nil && layout.PerHost() {
		// The same resources, validated already: only the version differs.
		version, err := snapshot.VersionIn(layout, rich.res.Flat())
		if err != nil {
			return nil, err
		}
		f := &form{version: version, res: rich.res}
		p.forms[layout] = f
		return f, nil
	}
	res, err := snapshot.ResourcesIn(layout, p.snap)
	if err != nil {
		return nil, err
	}
	_, version, err := (&snapshot.Assembler{Scope: p.snap.Scope, Layout: layout}).Assemble(res)
	if err != nil {
		return nil, err
	}
	f, err := newForm(version, res)
	if err != nil {
		return nil, err
	}
	p.forms[layout] = f
	return f, nil
}

// newForm is resources (sorted by key) under version: a layout without a
// resource per host, whose resources are all Rest.
func newForm(version string, res []snapshot.Resource) (*form, error) {
	for i := 1; i < len(res); i++ {
		if res[i-1].Key >= res[i].Key {
			if res[i-1].Key == res[i].Key {
				return nil, fmt.Errorf("duplicate resource key %q", res[i].Key)
			}
			return nil, fmt.Errorf("resources out of key order at %q", res[i].Key)
		}
	}
	return &form{version: version, res: snapshot.Encoded{Rest: res}}, nil
}

// keepDelta records d as f's delta from the form of version base, for the
// streams of proxies at base (Publish knows it: it is what the scope's
// last snapshot became).
func (f *form) keepDelta(base string, d resourceDelta) {
	f.msgMu.Lock()
	defer f.msgMu.Unlock()
	if f.deltas == nil {
		f.deltas = map[string]resourceDelta{}
	}
	f.deltas[base] = d
}

// fullResources lists every resource of f, in key order.
func (f *form) fullResources() []*discoveryv1.Resource {
	f.msgMu.Lock()
	defer f.msgMu.Unlock()
	if f.full == nil {
		f.full = make([]*discoveryv1.Resource, 0, f.res.Len())
		for r := range f.res.All() {
			f.full = append(f.full, &discoveryv1.Resource{Key: r.Key, Body: r.Body})
		}
	}
	return f.full
}

// deltaFrom is delta(base, f), computed once per baseline rather than once
// per stream.
func (f *form) deltaFrom(base *form) (upserts []*discoveryv1.Resource, removed []string) {
	f.msgMu.Lock()
	defer f.msgMu.Unlock()
	if d, ok := f.deltas[base.version]; ok {
		return d.upserts, d.removed
	}
	upserts, removed = delta(base.res, f.res)
	if len(f.deltas) < maxCachedDeltas {
		if f.deltas == nil {
			f.deltas = map[string]resourceDelta{}
		}
		f.deltas[base.version] = resourceDelta{upserts: upserts, removed: removed}
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
	s.dropCodecs(next)
	if s.swapScopes(next) {
		s.signalDataPlane()
	}
	s.metrics.publishes.Inc()
	return errors.Join(errs...)
}

// scopeCodec is what Publish remembers of one scope's last snapshot: its
// encoder and assembler, and the resources and version it made last.
type scopeCodec struct {
	enc         snapshot.Encoder
	asm         snapshot.Assembler
	last        snapshot.Encoded
	hasLast     bool
	lastVersion string
}

// dropCodecs forgets the codecs of the scopes no longer published.
func (s *Server) dropCodecs(next map[snapshot.Scope]*published) {
	s.codecsMu.Lock()
	defer s.codecsMu.Unlock()
	for sc := range s.codecs {
		if _, ok := next[sc]; !ok {
			delete(s.codecs, sc)
		}
	}
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
		p, err := s.toPublished(snap)
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
// version did not change, and wakes every stream if anything changed. It
// reports whether the Gateways of any scope changed (a scope added or
// removed, or its list of Gateways not the very same: an Assembler keeps
// the list while no Gateway's resource changes), the only part of a
// publish GatewayState reads: a route change does not wake the status
// writer's round over every Gateway a second time.
func (s *Server) swapScopes(next map[snapshot.Scope]*published) (gatewaysChanged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for sc, p := range next {
		old := s.scopes[sc]
		if old != nil && old.version == p.version {
			next[sc] = old
			continue
		}
		changed = true
		if old == nil || !lists.Same(old.gateways, p.gateways) {
			gatewaysChanged = true
		}
	}
	if len(next) != len(s.scopes) {
		changed, gatewaysChanged = true, true
	}
	s.scopes = next
	if changed {
		for c := range s.conns {
			signal(c.notify)
		}
	}
	return gatewaysChanged
}

// toPublished splits a snapshot into the resources of RichestLayout and
// reassembles them as a proxy will, which validates them as a proxy will
// and yields the version; the virtual hosts are taken from the snapshot
// itself rather than decoded (snapshot.HostsOf: a decoded copy of every
// route was a second one in the controller's heap). The scope's codec
// encodes only the virtual hosts that are not the same as in its last
// snapshot, and patches what changed since into the snapshot it last
// assembled (snapshot.Assembler.Apply), as its proxies will; that change
// is also the form's delta from the last version, ready for the streams
// of proxies at it.
func (s *Server) toPublished(snap *snapshot.Snapshot) (*published, error) {
	s.codecsMu.Lock()
	c := s.codecs[snap.Scope]
	if c == nil {
		c = &scopeCodec{asm: snapshot.Assembler{Scope: snap.Scope, Layout: RichestLayout}}
		s.codecs[snap.Scope] = c
	}
	res, err := c.enc.Encode(snap)
	var assembled *snapshot.Snapshot
	var version, base string
	var d resourceDelta
	// The virtual hosts are snap's own, not decoded copies of them (the
	// codec keeps what it assembled until the next change).
	c.asm.Hosts = snapshot.HostsOf(snap)
	if err == nil && c.hasLast {
		var upserts []snapshot.Resource
		upserts, d.removed = snapshot.Diff(c.last, res)
		assembled, version, err = c.asm.Apply(upserts, d.removed)
		base = c.lastVersion
		d.upserts = wireResources(upserts)
	} else if err == nil {
		assembled, version, err = c.asm.Assemble(res.Flat())
	}
	c.asm.Hosts = nil
	if err == nil {
		c.last, c.lastVersion, c.hasLast = res, version, true
	}
	s.codecsMu.Unlock()
	if err != nil {
		return nil, err
	}
	// The Encoder's list is in key order, one per key (no walk of its
	// keys here: at 10,000 hosts that was a tenth of the controller's CPU
	// under endpoint churn).
	f := &form{version: version, res: res}
	if base != "" && base != version {
		f.keepDelta(base, d)
	}
	return &published{
		version: version, gateways: assembled.Gateways, snap: snap,
		forms: map[snapshot.Layout]*form{RichestLayout: f},
	}, nil
}

// wireResources is res in the wire form.
func wireResources(res []snapshot.Resource) []*discoveryv1.Resource {
	out := make([]*discoveryv1.Resource, 0, len(res))
	for _, r := range res {
		out = append(out, &discoveryv1.Resource{Key: r.Key, Body: r.Body})
	}
	return out
}

// delta lists the resources of cur that are new or changed since base, and
// the keys base has that cur lacks, both in key order (base and cur are).
func delta(base, cur snapshot.Encoded) (upserts []*discoveryv1.Resource, removed []string) {
	changed, removed := snapshot.Diff(base, cur)
	if len(changed) > 0 {
		upserts = wireResources(changed)
	}
	return upserts, removed
}
