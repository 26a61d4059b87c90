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
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
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
	// regexLast orders regular expression paths after prefixes (Ingress);
	// Gateway listeners order them between Exact and PathPrefix.
	regexLast bool
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

// precKey orders routes as the Gateway API spec says: Exact path, then
// the longest PathPrefix, then regular expressions (whose precedence is ours
// to choose; longest pattern first), then method, number of
// header matches, number of query matches, then the oldest route, then
// "<namespace>/<name>", then rule and match order.
type precKey struct {
	pathRank   int // 0 exact, 1 GRPCRoute regex, 2 prefix, 3 regex
	pathLen    int
	method     bool
	headers    int
	query      int
	created    metav1.Time
	namespace  string
	name       string
	kind       string
	rule       int
	match      int
	lastResort bool // Ingress defaultBackend

	// packed and createdNs are the fields above in a form that compares
	// fast; set by finalize.
	packed    uint64
	createdNs int64
}

func clampU(v, max int) uint64 {
	if v < 0 {
		return 0
	}
	if v > max {
		return uint64(max)
	}
	return uint64(v)
}

// finalize packs the rank fields into one integer that orders like less:
// lastResort, pathRank, longer path, method, more headers, more query
// params.
func (k *precKey) finalize() {
	var p uint64
	if k.lastResort {
		p |= 1 << 63
	}
	p |= clampU(k.pathRank, 3) << 61
	p |= (0xFFFFF - clampU(k.pathLen, 0xFFFFF)) << 41
	if !k.method {
		p |= 1 << 40
	}
	p |= (0xFFFF - clampU(k.headers, 0xFFFF)) << 24
	p |= (0xFFFF - clampU(k.query, 0xFFFF)) << 8
	k.packed = p
	k.createdNs = k.created.UnixNano()
}

func (a *precKey) less(b *precKey) bool {
	if a.packed != b.packed {
		return a.packed < b.packed
	}
	if a.createdNs != b.createdNs {
		return a.createdNs < b.createdNs
	}
	if a.namespace != b.namespace {
		return a.namespace < b.namespace
	}
	if a.name != b.name {
		return a.name < b.name
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.rule != b.rule {
		return a.rule < b.rule
	}
	return a.match < b.match
}

func matchKey(m *snapshot.Match, grpc bool) precKey {
	k := precKey{method: m.Method != "", headers: len(m.Headers), query: len(m.QueryParams)}
	// Exact > longest PathPrefix > RegularExpression for HTTPRoute and
	// Ingress paths. A GRPCRoute regex (a service/method pattern) ranks
	// before prefixes, so a catch-all gRPC rule cannot shadow it.
	prefix, regex := 2, 3
	if grpc {
		regex = 1
	}
	switch {
	case m.Path == nil:
		k.pathRank, k.pathLen = prefix, 1
	case m.Path.Type == snapshot.PathExact:
		k.pathRank, k.pathLen = 0, len(m.Path.Value)
	case m.Path.Type == snapshot.PathRegularExpression:
		k.pathRank, k.pathLen = regex, len(m.Path.Value)
	default:
		k.pathRank, k.pathLen = prefix, len(m.Path.Value)
	}
	return k
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

// buildGatewayScopes emits every served Gateway into its scopes and fills
// Gateway status.
func (t *translator) buildGatewayScopes() {
	for _, gi := range t.gwOrder {
		primary := snapshot.SharedPool()
		if gi.servedDedicated() {
			primary = snapshot.GatewayScope(gi.gw.Namespace, gi.gw.Name)
		}
		if gi.served {
			// Group servable listeners by port, in spec order.
			var ports []int32
			byPort := map[int32][]*listenerInfo{}
			for _, li := range gi.listeners {
				p := int32(li.spec.Port)
				if _, ok := byPort[p]; !ok {
					ports = append(ports, p)
				}
				byPort[p] = append(byPort[p], li)
			}
			sort.Slice(ports, func(i, j int) bool { return ports[i] < ports[j] })
			if gi.servedShared() {
				sb := t.scope(snapshot.SharedPool())
				ref := snapshot.GatewayRef{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Generation: gi.gw.Generation}
				for _, p := range ports {
					internal, ok := gi.internal[p]
					if !ok {
						for _, li := range byPort[p] {
							li.programmedReason = status.ReasonPending
							li.programmedMsg = fmt.Sprintf("no free internal port for port %d", p)
						}
						continue
					}
					if t.emitGatewayPort(sb, gi, p, byPort[p], internal, p) {
						ref.Ports = append(ref.Ports, internal)
					}
				}
				sb.gateways = append(sb.gateways, ref)
			}
			if gi.servedDedicated() {
				sb := t.scope(primary)
				ref := snapshot.GatewayRef{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Generation: gi.gw.Generation}
				for _, p := range ports {
					if t.emitGatewayPort(sb, gi, p, byPort[p], p, 0) {
						ref.Ports = append(ref.Ports, p)
					}
				}
				sb.gateways = append(sb.gateways, ref)
			}
		}
		t.gatewayStatus(gi, primary)
	}
}

// emitGatewayPort writes the listeners of one Gateway port into a scope and
// reports whether the port is bound (it has a servable listener).
func (t *translator) emitGatewayPort(sb *scopeBuilder, gi *gatewayInfo, port int32, lis []*listenerInfo, bind, external int32) bool {
	var serv []*listenerInfo
	for _, li := range lis {
		if li.servable {
			serv = append(serv, li)
		}
	}
	if len(serv) == 0 {
		return false
	}
	name := fmt.Sprintf("gateway/%s/%s/%d", gi.gw.Namespace, gi.gw.Name, port)
	lb := sb.listener(bind, name, serv[0].protocol, external)
	for _, li := range serv {
		claim := li.hostname
		if claim == "" {
			claim = "*"
		}
		lb.vhost(claim)
		for _, c := range li.certs {
			lb.sni = append(lb.sni, snapshot.SNICertificate{Hostname: li.hostname, Certificate: c})
			sb.certs[c] = true
		}
	}
	for _, li := range serv {
		for _, att := range li.routes {
			for _, h := range att.hosts {
				host := h
				if host == "*" {
					host = ""
				}
				// Listener isolation: a hostname belongs to the most
				// specific listener on the port.
				if best(serv, host) != li {
					continue
				}
				vh := lb.vhost(h)
				cr := att.cr
				for i := range cr.entries {
					e := &cr.entries[i]
					vh.entries = append(vh.entries, entry{route: &e.route, key: &e.key})
					sb.use(&e.route)
					if cr.kind == kindGRPCRoute {
						t.markH2C(&e.route)
					}
				}
			}
		}
	}
	return true
}

func best(lis []*listenerInfo, host string) *listenerInfo {
	var b *listenerInfo
	bs := -1
	for _, li := range lis {
		if s := matchScore(li.hostname, host); s > bs {
			b, bs = li, s
		}
	}
	return b
}
