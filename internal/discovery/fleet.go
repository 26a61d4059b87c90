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
	"sort"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Proxy is what the server knows of one connected proxy, for the
// operator's view (the controller's admin API).
type Proxy struct {
	NodeID   string `json:"nodeId"`
	Identity string `json:"identity"`
	Scope    string `json:"scope"`
	// Peer is the proxy's address as the stream sees it.
	Peer       string    `json:"peer,omitempty"`
	Connected  time.Time `json:"connected"`
	SVIDExpiry time.Time `json:"svidExpiry"`
	// Layout is the resource layout of its stream (snapshot.Layout).
	Layout string `json:"layout"`
	// AckedVersion is the version of the last snapshot the proxy acked
	// (empty before its first ack), at LastAck; InSync is true when that
	// is its scope's current version. Versions are the controller's (the
	// virtual-host layout's): a proxy on the older listener layout names
	// the same snapshot by another hash in its own /statusz.
	AckedVersion string                `json:"ackedVersion,omitempty"`
	LastAck      *time.Time            `json:"lastAck,omitempty"`
	InSync       bool                  `json:"inSync"`
	Gateways     []snapshot.GatewayRef `json:"gateways,omitempty"`
	BoundPorts   []int32               `json:"boundPorts,omitempty"`
	Rejected     *ProxyRejection       `json:"rejected,omitempty"`
}

// ProxyRejection is a proxy's standing NACK.
type ProxyRejection struct {
	Version string `json:"version"`
	Detail  string `json:"detail"`
}

// ScopeState is one published scope.
type ScopeState struct {
	Scope     string                `json:"scope"`
	Version   string                `json:"version"`
	Published time.Time             `json:"published"`
	Gateways  []snapshot.GatewayRef `json:"gateways,omitempty"`
	// Proxies is the number of connected proxies of the scope.
	Proxies int `json:"proxies"`
}

// Fleet lists the connected proxies by scope, then node id, and the
// published scopes by name.
func (s *Server) Fleet() ([]Proxy, []ScopeState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	count := map[snapshot.Scope]int{}
	proxies := make([]Proxy, 0, len(s.conns))
	for c := range s.conns {
		count[c.scope]++
		p := Proxy{
			NodeID: c.nodeID, Identity: c.identity, Scope: c.scope.String(), Layout: c.layout.String(), Peer: c.peer,
			Connected: c.connected, SVIDExpiry: c.svidExpiry,
		}
		if c.acked != nil {
			at := c.lastAck
			p.AckedVersion, p.LastAck, p.Gateways = c.acked.version, &at, c.acked.gateways
			if cur := s.scopes[c.scope]; cur != nil && cur.version == c.acked.version {
				p.InSync = true
			}
		}
		for port, ok := range c.bound {
			if ok {
				p.BoundPorts = append(p.BoundPorts, port)
			}
		}
		sort.Slice(p.BoundPorts, func(i, j int) bool { return p.BoundPorts[i] < p.BoundPorts[j] })
		if c.rejected != nil {
			p.Rejected = &ProxyRejection{Version: c.rejected.pub.version, Detail: c.rejected.detail}
		}
		proxies = append(proxies, p)
	}
	sort.Slice(proxies, func(i, j int) bool {
		if proxies[i].Scope != proxies[j].Scope {
			return proxies[i].Scope < proxies[j].Scope
		}
		return proxies[i].NodeID < proxies[j].NodeID
	})
	scopes := make([]ScopeState, 0, len(s.scopes))
	for sc, p := range s.scopes {
		scopes = append(scopes, ScopeState{Scope: sc.String(), Version: p.version, Published: p.published, Gateways: p.gateways, Proxies: count[sc]})
	}
	sort.Slice(scopes, func(i, j int) bool { return scopes[i].Scope < scopes[j].Scope })
	return proxies, scopes
}
