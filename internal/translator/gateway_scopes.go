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
	"fmt"
	"slices"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// buildGatewayScopes emits every served Gateway into its scopes and fills
// Gateway status.
func (t *translator) buildGatewayScopes() {
	for _, lsi := range t.lsOrder {
		t.listenerSetStatus(lsi)
	}
	if len(t.gwOrder) > 0 {
		t.out.Gateways = make([]GatewayStatus, 0, len(t.gwOrder))
	}
	// The GatewayRefs' port lists share one array (at 1,000 Gateways, a
	// list of its own was an allocation per Gateway), the scratch's: the
	// snapshots take copies (memoPass.gatewayList).
	slab := t.scratch.ports[:0]
	if n := t.gatewayPortCount(); cap(slab) < n {
		slab = make(portSlab, 0, n)
	}
	for _, gi := range t.gwOrder {
		primary := snapshot.SharedPool()
		if gi.servedDedicated() {
			primary = snapshot.GatewayScope(gi.gw.Namespace, gi.gw.Name)
		}
		if gi.served {
			if gi.servedShared() {
				sb := t.scope(snapshot.SharedPool())
				ref := snapshot.GatewayRef{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Generation: gi.gw.Generation}
				start := len(slab)
				for i := range gi.ports {
					gp := &gi.ports[i]
					internal, ok := gi.internal[gp.port]
					if !ok {
						for _, li := range gp.listeners {
							st := t.state(li)
							st.programmedReason = status.ReasonPending
							st.programmedMsg = fmt.Sprintf("no free internal port for port %d", gp.port)
						}
						continue
					}
					if t.emitGatewayPort(sb, gi, gp, internal, gp.port) {
						slab = append(slab, internal)
					}
				}
				ref.Ports = slab.since(start)
				if sb.gateways == nil { // the scratch's room, for at most all of them
					sb.gateways = t.scratch.poolGateways[:0]
					if cap(sb.gateways) < len(t.gwOrder) {
						sb.gateways = make([]snapshot.GatewayRef, 0, len(t.gwOrder))
					}
				}
				sb.gateways = append(sb.gateways, ref)
			}
			if gi.servedDedicated() {
				sb := t.scope(primary)
				ref := snapshot.GatewayRef{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Generation: gi.gw.Generation}
				start := len(slab)
				for i := range gi.ports {
					gp := &gi.ports[i]
					if t.emitGatewayPort(sb, gi, gp, gp.port, 0) {
						slab = append(slab, gp.port)
					}
				}
				ref.Ports = slab.since(start)
				sb.gateways = append(sb.gateways, ref)
			}
		}
		t.gatewayStatus(gi, primary)
	}
	t.scratch.ports = slab
	if sb := t.scopes[snapshot.SharedPool()]; sb != nil && sb.gateways != nil {
		t.scratch.poolGateways = sb.gateways
	}
	t.tlsPolicyStatuses()
}

// portSlab is the array of the port lists of a translation's GatewayRefs.
type portSlab []int32

// since is the ports appended from start on, with no room after them
// (nil when none).
func (s portSlab) since(start int) []int32 {
	if len(s) == start {
		return nil
	}
	return s[start:len(s):len(s)]
}

// gatewayPortCount is the number of ports of the served Gateways.
func (t *translator) gatewayPortCount() int {
	n := 0
	for _, gi := range t.gwOrder {
		if gi.served {
			n += len(gi.ports)
		}
	}
	return n
}

// gatewayPort is one port of a served Gateway: its listeners (its own,
// then its ListenerSets', in precedence order) and the names of the
// snapshot listeners it makes (TCP protocols; UDP). processGateways groups
// them once per environment (groupPorts).
type gatewayPort struct {
	port          int32
	listeners     []*listenerInfo
	name, udpName string
}

// groupPorts groups the listeners of gi by port, in port order.
func (gi *gatewayInfo) groupPorts() {
	for _, li := range gi.allListeners() {
		p := int32(li.spec.Port)
		i := slices.IndexFunc(gi.ports, func(gp gatewayPort) bool { return gp.port == p })
		if i < 0 {
			name := fmt.Sprintf("gateway/%s/%s/%d", gi.gw.Namespace, gi.gw.Name, p)
			gi.ports = append(gi.ports, gatewayPort{port: p, name: name, udpName: name + "/udp"})
			i = len(gi.ports) - 1
		}
		gi.ports[i].listeners = append(gi.ports[i].listeners, li)
	}
	slices.SortStableFunc(gi.ports, func(a, b gatewayPort) int { return cmp.Compare(a.port, b.port) })
}

// emitGatewayPort writes the listeners of one Gateway port into a scope and
// reports whether the port is bound (it has a servable listener). A port
// may carry a TCP-protocol listener set and a UDP listener; each becomes its
// own snapshot listener.
func (t *translator) emitGatewayPort(sb *scopeBuilder, gi *gatewayInfo, gp *gatewayPort, bind, external int32) bool {
	var tcp, udp []*listenerInfo
	for _, li := range gp.listeners {
		switch {
		case !li.servable:
		case li.protocol == snapshot.ProtocolUDP:
			udp = append(udp, li)
		default:
			tcp = append(tcp, li)
		}
	}
	bound := false
	for _, serv := range [][]*listenerInfo{tcp, udp} {
		if len(serv) == 0 {
			continue
		}
		bound = true
		name := gp.name
		if serv[0].protocol == snapshot.ProtocolUDP {
			name = gp.udpName
		}
		lb := sb.listener(bind, name, serv[0].protocol, external)
		if serv[0].protocol == snapshot.ProtocolUDP && sb.scope.Kind == snapshot.ScopeGateway {
			lb.l.UDPIdleTimeout = gi.udpIdle
		}
		if serv[0].protocol.Stream() {
			t.emitStreamListeners(sb, lb, serv)
		} else {
			if lb.l.ClientTraffic == nil {
				lb.l.ClientTraffic = t.clientTrafficFor(gi, serv)
			}
			t.emitHTTPListeners(sb, gi, lb, serv)
		}
	}
	return bound
}

// emitHTTPListeners writes the virtual hosts and certificates of the
// servable HTTP or HTTPS listeners of one port.
func (t *translator) emitHTTPListeners(sb *scopeBuilder, gi *gatewayInfo, lb *listenerBuilder, serv []*listenerInfo) {
	if t.emitPatched(sb, gi, lb, serv) {
		return
	}
	defer func() { lb.emit = t.newEmission(gi, serv) }()
	for _, li := range serv {
		claim := li.hostname
		if claim == "" {
			claim = "*"
		}
		lb.vhost(claim)
		t.emitCerts(sb, lb, li)
		if li.clientValidation != nil && lb.clientValidation == nil {
			lb.clientValidation = li.clientValidation
		}
	}
	for _, li := range serv {
		for _, att := range t.state(li).routes {
			for _, h := range att.hosts {
				host := h
				if host == "*" {
					host = ""
				}
				// Listener isolation: a hostname belongs to the most
				// specific listener on the port.
				if len(serv) > 1 && best(serv, host) != li {
					continue
				}
				vh := lb.vhost(h)
				cr := att.cr
				// The entries' endpoint sets are recorded once per scope
				// while they are emitted as compiled: a route served on
				// many hostnames would record the same sets again and
				// again (at 10,000 routes, a third of emitting them).
				// While every entry is plain, their sets are left to
				// useCompiled; the first that is not records those before
				// it, and each plain one after it records its own.
				used, plain := cr.usedBy == sb.id, true
				for i := range cr.keys {
					e := cr.entry(i)
					if cr.kind == kindGRPCRoute {
						t.markH2C(e.route)
					}
					rt := t.withClientCertificate(sb, gi, e.route)
					rt = t.withPolicies(gi, li, cr, cr.keys[i].rule, rt)
					if rt != e.route {
						e.route, e.of = rt, nil
					}
					vh.entries = append(vh.entries, e)
					switch {
					case rt != &cr.routes[i]:
						if plain && !used {
							for j := range i {
								sb.use(&cr.routes[j])
							}
						}
						plain = false
						sb.use(rt)
					case !plain && !used:
						sb.use(rt)
					}
					t.noteTLSAncestors(gi, rt)
					t.notePolicyAncestors(gi, rt)
				}
				if plain {
					if !used {
						sb.useCompiled(cr)
					}
					cr.usedBy = sb.id
				}
			}
		}
	}
}

// emitStreamListeners writes the stream routes (and, for terminating TLS
// listeners, the certificates) of the servable TLS, TCP or UDP listeners of
// one port. A hostname belongs to the most specific listener on the port,
// and within it to the oldest route (TCP and UDP: one route, the oldest).
func (t *translator) emitStreamListeners(sb *scopeBuilder, lb *listenerBuilder, serv []*listenerInfo) {
	for _, li := range serv {
		t.emitCerts(sb, lb, li)
	}
	for _, li := range serv {
		for _, att := range t.state(li).routes {
			cr := att.cr
			if cr.stream == nil {
				continue
			}
			route := *cr.stream
			route.Terminate = li.protocol == snapshot.ProtocolTLS && li.terminate
			if li.protocol != snapshot.ProtocolTLS {
				lb.claim("", route, cr.meta)
				continue
			}
			for _, h := range att.hosts {
				host := h
				if host == "*" {
					host = ""
				}
				if len(serv) > 1 && best(serv, host) != li {
					continue
				}
				lb.claim(h, route, cr.meta)
			}
		}
	}
}

// emitCerts adds a listener's certificates to the port's SNI list.
func (t *translator) emitCerts(sb *scopeBuilder, lb *listenerBuilder, li *listenerInfo) {
	for _, c := range li.certs {
		lb.sni = append(lb.sni, snapshot.SNICertificate{Hostname: li.hostname, Certificate: c})
		sb.certs[c] = true
	}
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
