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
	"slices"
	"strings"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// maxNackDetail keeps a Nack well below the client→server message cap.
const maxNackDetail = 16 << 10

// handle applies one snapshot message atomically and returns the Ack or
// Nack to send. Any failure keeps the last good state.
func (c *Client) handle(m *discoveryv1.Snapshot) *discoveryv1.ClientMessage {
	applied, err := c.apply(m)
	if err != nil {
		c.metrics.nacks.Inc()
		c.log.Error(err, "rejected a discovery snapshot; keeping the last good one", "version", m.GetVersion(), "full", m.GetFull())
		detail := err.Error()
		if len(detail) > maxNackDetail {
			detail = detail[:maxNackDetail]
		}
		return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Nack{Nack: &discoveryv1.Nack{Version: m.GetVersion(), Nonce: m.GetNonce(), Detail: detail}}}
	}
	if applied {
		c.metrics.applied.Inc()
	}
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Ack{Ack: &discoveryv1.Ack{Version: m.GetVersion(), Nonce: m.GetNonce()}}}
}

// apply rebuilds the snapshot from the message and the resources the client
// holds, checks that it has the version the server announced, and hands it
// to the data plane unless that version is already in force; applied says
// whether the data plane was given a new snapshot.
func (c *Client) apply(m *discoveryv1.Snapshot) (applied bool, err error) {
	c.mu.Lock()
	cur, curVersion, a := c.resources, c.version, c.assembler
	c.mu.Unlock()
	layout := LayoutFromProto(m.GetLayout())
	if !m.GetFull() && (a == nil || a.Layout != layout) {
		return false, fmt.Errorf("a delta in the %s layout against resources in another one", layout)
	}
	if a == nil || a.Layout != layout {
		// The decoded resources of one layout are of no use in another.
		// Bodies are the message's: only their digests are kept.
		a = &snapshot.Assembler{Scope: c.opts.Scope, Layout: layout, DigestsOnly: true}
	} else {
		// Assembled on a copy, kept only once the snapshot is applied: a
		// delta is patched onto the assembler's last snapshot, which must
		// stay the one of c.resources whatever fails below.
		work := *a
		a = &work
	}
	var next []snapshot.Resource
	var snap *snapshot.Snapshot
	var version string
	if !m.GetFull() && layout.PerHost() {
		// The assembler's baseline is the last snapshot, and it remembers
		// every resource: a delta costs what it changes
		// (snapshot.Assembler.Apply), with no list of every resource to
		// merge (at 10,000 hosts that was a third of what a proxy
		// allocated under endpoint churn).
		snap, version, err = a.Apply(deltaResources(m), m.GetRemoved())
	} else {
		if next, err = mergeResources(cur, m); err != nil {
			return false, err
		}
		snap, version, err = a.Assemble(next)
	}
	if err != nil {
		return false, err
	}
	if version != m.GetVersion() {
		return false, fmt.Errorf("version mismatch: the server says %s, the reassembled snapshot is %s", m.GetVersion(), version)
	}
	if version != curVersion {
		if err := c.applyToDataPlane(snap, version); err != nil {
			return false, fmt.Errorf("apply: %w", err)
		}
		applied = true
	}
	c.mu.Lock()
	if layout.PerHost() {
		next = nil // the assembler holds them
	}
	c.resources, c.version, c.assembler = next, version, a
	c.mu.Unlock()
	return applied, nil
}

// applyToDataPlane hands snap, named version, to the Applier.
func (c *Client) applyToDataPlane(snap *snapshot.Snapshot, version string) error {
	if va, ok := c.opts.Applier.(VersionedApplier); ok {
		return va.ApplyVersioned(snap, version)
	}
	return c.opts.Applier.Apply(snap)
}

// deltaResources is the resources m upserts.
func deltaResources(m *discoveryv1.Snapshot) []snapshot.Resource {
	out := make([]snapshot.Resource, 0, len(m.GetResources()))
	for _, r := range m.GetResources() {
		out = append(out, snapshot.Resource{Key: r.GetKey(), Body: r.GetBody()})
	}
	return out
}

// mergeResources is the resource set after m, in key order: m's resources
// alone when m is full, else cur (the last acked set, in key order) with
// m's upserts and removals. A key m lists twice keeps its last body; a
// removal of a key cur does not hold is a no-op. cur is not modified, and
// the cost of a delta is one pass over cur plus the sort of what m lists.
func mergeResources(cur []snapshot.Resource, m *discoveryv1.Snapshot) ([]snapshot.Resource, error) {
	if m.GetFull() {
		if len(m.GetRemoved()) > 0 {
			return nil, errors.New("a full snapshot cannot remove resources")
		}
		cur = nil
	} else if cur == nil {
		return nil, errors.New("delta received without a baseline")
	}
	upserts := make([]snapshot.Resource, 0, len(m.GetResources()))
	for _, r := range m.GetResources() {
		if r.GetKey() == "" {
			return nil, errors.New("resource with an empty key")
		}
		upserts = append(upserts, snapshot.Resource{Key: r.GetKey(), Body: r.GetBody()})
	}
	upserts = lastByKey(upserts)
	removed := slices.Clone(m.GetRemoved())
	slices.Sort(removed)

	// The resources between two keys a change names are copied as a
	// run, found by binary search: a delta names a few keys among
	// thousands, and comparing each key was most of merging one.
	next := make([]snapshot.Resource, 0, len(cur)+len(upserts))
	i, j, k := 0, 0, 0 // in cur, upserts and removed
	for j < len(upserts) || k < len(removed) {
		up := j < len(upserts) && (k == len(removed) || upserts[j].Key <= removed[k])
		key := ""
		if up {
			key = upserts[j].Key
		} else {
			key = removed[k]
		}
		n, _ := slices.BinarySearchFunc(cur[i:], key, func(r snapshot.Resource, key string) int { return strings.Compare(r.Key, key) })
		next = append(next, cur[i:i+n]...)
		i += n
		if i < len(cur) && cur[i].Key == key {
			i++ // replaced or removed
		}
		gone := false
		for k < len(removed) && removed[k] == key {
			gone = true // a key both upserted and removed is removed
			k++
		}
		if up {
			if !gone {
				next = append(next, upserts[j])
			}
			j++
		}
	}
	next = append(next, cur[i:]...)
	return next, nil
}

// lastByKey is resources in key order with one entry per key, the last one
// listed; resources already strictly in key order (as servers send them)
// are returned as they are.
func lastByKey(resources []snapshot.Resource) []snapshot.Resource {
	if strictlyInKeyOrder(resources) {
		return resources
	}
	slices.SortStableFunc(resources, func(a, b snapshot.Resource) int { return strings.Compare(a.Key, b.Key) })
	out := resources[:0]
	for i, r := range resources {
		if i+1 < len(resources) && resources[i+1].Key == r.Key {
			continue // a later entry for the same key wins
		}
		out = append(out, r)
	}
	return out
}

// strictlyInKeyOrder reports keys in increasing order, none twice.
func strictlyInKeyOrder(resources []snapshot.Resource) bool {
	for i := 1; i < len(resources); i++ {
		if resources[i-1].Key >= resources[i].Key {
			return false
		}
	}
	return true
}
