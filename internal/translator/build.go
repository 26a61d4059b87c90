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
	"slices"
	"sort"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// scopeBuilder accumulates one snapshot.
type scopeBuilder struct {
	scope     snapshot.Scope
	listeners map[int32]*listenerBuilder
	sets      map[string]bool
	certs     map[string]bool
	gateways  []snapshot.GatewayRef
}

type listenerBuilder struct {
	l      snapshot.Listener
	vhosts map[string]*vhostBuilder
	sni    []snapshot.SNICertificate
}

type vhostBuilder struct {
	host    string
	single  bool
	entries []entry
}

// entry is one route in a virtual host with its precedence key.
type entry struct {
	route *snapshot.Route
	key   *precKey
}

func (t *translator) scope(s snapshot.Scope) *scopeBuilder {
	sb := t.scopes[s]
	if sb == nil {
		sb = &scopeBuilder{scope: s, listeners: map[int32]*listenerBuilder{}, sets: map[string]bool{}, certs: map[string]bool{}}
		t.scopes[s] = sb
	}
	return sb
}

func (sb *scopeBuilder) listener(port int32, name string, proto snapshot.Protocol, external int32) *listenerBuilder {
	lb := sb.listeners[port]
	if lb == nil {
		lb = &listenerBuilder{l: snapshot.Listener{Name: name, Port: port, ExternalPort: external, Protocol: proto}, vhosts: map[string]*vhostBuilder{}}
		sb.listeners[port] = lb
	}
	return lb
}

func (lb *listenerBuilder) vhost(host string) *vhostBuilder {
	vh := lb.vhosts[host]
	if vh == nil {
		vh = &vhostBuilder{host: host}
		lb.vhosts[host] = vh
	}
	return vh
}

// use records the endpoint sets a route refers to.
func (sb *scopeBuilder) use(r *snapshot.Route) {
	for _, b := range r.Backends {
		if b.EndpointSet != "" {
			sb.sets[b.EndpointSet] = true
		}
	}
	for _, m := range r.Mirrors {
		sb.sets[m.EndpointSet] = true
	}
}

func (sb *scopeBuilder) build(t *translator) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: sb.scope}
	ports := make([]int32, 0, len(sb.listeners))
	for p := range sb.listeners {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
	for _, p := range ports {
		lb := sb.listeners[p]
		l := lb.l
		if l.Protocol == snapshot.ProtocolHTTPS {
			l.TLS = &snapshot.ListenerTLS{Certificates: lb.sni}
		}
		hosts := make([]string, 0, len(lb.vhosts))
		for h := range lb.vhosts {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		l.VirtualHosts = make([]snapshot.VirtualHost, 0, len(hosts))
		for _, h := range hosts {
			vb := lb.vhosts[h]
			slices.SortStableFunc(vb.entries, func(a, b entry) int {
				if a.key.less(b.key) {
					return -1
				}
				if b.key.less(a.key) {
					return 1
				}
				return 0
			})
			vh := snapshot.VirtualHost{Hostname: h, SingleLabelWildcard: vb.single}
			if len(vb.entries) > 0 {
				vh.Routes = make([]snapshot.Route, len(vb.entries))
				for i := range vb.entries {
					vh.Routes[i] = *vb.entries[i].route
				}
			}
			l.VirtualHosts = append(l.VirtualHosts, vh)
		}
		s.Listeners = append(s.Listeners, l)
	}
	names := make([]string, 0, len(sb.sets))
	for n := range sb.sets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if es := t.endpointSets[n]; es != nil {
			s.EndpointSets = append(s.EndpointSets, *es)
		}
	}
	names = names[:0]
	for n := range sb.certs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if c := t.certs[n]; c != nil {
			s.Certificates = append(s.Certificates, *c)
		}
	}
	s.Gateways = sb.gateways
	sort.SliceStable(s.Gateways, func(i, j int) bool {
		if s.Gateways[i].Namespace != s.Gateways[j].Namespace {
			return s.Gateways[i].Namespace < s.Gateways[j].Namespace
		}
		return s.Gateways[i].Name < s.Gateways[j].Name
	})
	return s
}
