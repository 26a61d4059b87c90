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
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// rejection is one proxy's NACK of a full snapshot.
type rejection struct {
	pub    *published
	detail string
}

// GatewayState is what the data plane says about one generation of a
// Gateway: the counts behind Programmed, and the proxies that refused it.
type GatewayState struct {
	// Published is false when no current snapshot holds the Gateway; the
	// other fields are then zero.
	Published bool
	// Scope is the scope whose snapshot serves the Gateway.
	Scope snapshot.Scope
	// Proxies is the number of connected proxies of Scope.
	Proxies int
	// Ready counts those that acked a snapshot holding the Gateway at the
	// asked generation or later and reported all its ports bound.
	Ready int
	// Rejections are the proxies of Scope whose last answer was a NACK of
	// a full snapshot holding the Gateway at the asked generation or later,
	// ordered by node id.
	Rejections []Rejection
}

// Rejection is one proxy's refusal of a snapshot.
type Rejection struct {
	NodeID string
	// Version of the refused snapshot, and the Gateway's generation in it.
	Version    string
	Generation int64
	// Detail is the proxy's reason, as it sent it.
	Detail string
}

// Programmed is the bind-and-ack rule: at least one proxy, and every
// connected proxy of the scope ready.
func (g GatewayState) Programmed() bool {
	return g.Published && g.Proxies > 0 && g.Ready == g.Proxies
}

// GatewayState reports the data plane's state for generation of Gateway
// namespace/name.
func (s *Server) GatewayState(namespace, name string, generation int64) GatewayState {
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, ok := s.scopeOfLocked(namespace, name)
	if !ok {
		return GatewayState{}
	}
	st := GatewayState{Published: true, Scope: scope}
	for c := range s.conns {
		if c.scope != scope {
			continue
		}
		st.Proxies++
		if c.servesLocked(namespace, name, generation) {
			st.Ready++
		}
		if r, ok := c.rejectionLocked(namespace, name, generation); ok {
			st.Rejections = append(st.Rejections, r)
		}
	}
	sort.Slice(st.Rejections, func(i, j int) bool { return st.Rejections[i].NodeID < st.Rejections[j].NodeID })
	return st
}

// rejectionLocked reports c's standing NACK when the refused snapshot
// holds the Gateway at generation or later. A NACK of an older generation
// says nothing about this one: the newer snapshot is on its way.
func (c *conn) rejectionLocked(namespace, name string, generation int64) (Rejection, bool) {
	if c.rejected == nil {
		return Rejection{}, false
	}
	g := findGateway(c.rejected.pub.gateways, namespace, name)
	if g == nil || g.Generation < generation {
		return Rejection{}, false
	}
	return Rejection{NodeID: c.nodeID, Version: c.rejected.pub.version, Generation: g.Generation, Detail: c.rejected.detail}, true
}

// signalDataPlane counts a data-plane change, made before it is called,
// and wakes the DataPlaneChanges consumer.
func (s *Server) signalDataPlane() {
	s.dataPlaneEpoch.Add(1)
	signal(s.changes)
}

// DataPlaneEpoch counts the data-plane changes DataPlaneChanges signals,
// each counted once it is made: while the count stands, GatewayState
// reports the same for every Gateway (a status writer that read the
// count before a round need not ask again for what that round settled).
func (s *Server) DataPlaneEpoch() uint64 { return s.dataPlaneEpoch.Load() }

// DataPlaneChanges delivers a (coalesced) signal whenever a proxy connects,
// disconnects, acks, reports bound ports, or snapshots are published; the
// status writer then re-evaluates GatewayState. Single consumer.
func (s *Server) DataPlaneChanges() <-chan struct{} { return s.changes }

// scopeOfLocked finds the scope whose current snapshot serves the Gateway,
// preferring its dedicated scope.
func (s *Server) scopeOfLocked(namespace, name string) (snapshot.Scope, bool) {
	ded := snapshot.GatewayScope(namespace, name)
	if p := s.scopes[ded]; p != nil && findGateway(p.gateways, namespace, name) != nil {
		return ded, true
	}
	if p := s.scopes[snapshot.SharedPool()]; p != nil && findGateway(p.gateways, namespace, name) != nil {
		return snapshot.SharedPool(), true
	}
	return snapshot.Scope{}, false
}

// servesLocked reports whether the proxy has acked a snapshot holding the
// Gateway at generation or later and has reported all its ports bound.
func (c *conn) servesLocked(namespace, name string, generation int64) bool {
	if c.acked == nil || !c.reported {
		return false
	}
	g := findGateway(c.acked.gateways, namespace, name)
	if g == nil || g.Generation < generation {
		return false
	}
	for _, p := range g.Ports {
		if !c.bound[p] {
			return false
		}
	}
	return true
}

// findGateway is the Gateway namespace/name in gws, or nil. gws of an
// assembled snapshot are sorted by namespace and name, so a binary search
// finds it (the status writer asks for every Gateway each round: with
// 1,000 Gateways a scan made the round quadratic); the scan after a miss
// serves lists in any order.
func findGateway(gws []snapshot.GatewayRef, namespace, name string) *snapshot.GatewayRef {
	if i, ok := slices.BinarySearchFunc(gws, [2]string{namespace, name}, func(g snapshot.GatewayRef, k [2]string) int {
		return cmp.Or(strings.Compare(g.Namespace, k[0]), strings.Compare(g.Name, k[1]))
	}); ok {
		return &gws[i]
	}
	for i := range gws {
		if gws[i].Namespace == namespace && gws[i].Name == name {
			return &gws[i]
		}
	}
	return nil
}
