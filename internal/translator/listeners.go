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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// listenerInfo is one Gateway listener as translated.
type listenerInfo struct {
	spec *gwv1.Listener
	// owner is the Gateway or ListenerSet that defines the listener.
	owner    listenerOwner
	hostname string // "" for any
	protocol snapshot.Protocol
	// terminate is a TLS listener's tls.mode Terminate (the default);
	// false is Passthrough.
	terminate bool
	// supported protocol, no conflicts, refs resolved.
	servable bool
	accepted metav1.Condition
	conflict metav1.Condition
	resolved metav1.Condition
	kinds    []gwv1.RouteGroupKind
	certs    []string
	// clientValidation is the client certificate validation of an HTTPS
	// listener's port (the Gateway's spec.tls.frontend); nil for none.
	clientValidation *snapshot.ClientValidation
	// ord numbers the listener (from 1) in the order of every Gateway's,
	// then every ListenerSet's: an unchanged environment numbers the same
	// listeners the same, so a Memo names them by it (attachRoute), and a
	// translation keeps what routes make of it at its ord (listenerState).
	ord int
}

// listenerState is what one translation's routes and emission make of a
// listener. A listenerInfo is the environment's alone and is never
// changed once processGateways made it, so that a Memo can hand the same
// ones to the next translation of the environment (keptGateways).
type listenerState struct {
	attached    int32
	lastCounted *compiledRoute
	routes      []attachment
	// programmedReason and programmedMsg say why the listener is not
	// programmed ("": it is, as far as the translation knows).
	programmedReason, programmedMsg string
}

// state is li's listenerState in this translation.
func (t *translator) state(li *listenerInfo) *listenerState { return &t.states[li.ord-1] }

// listenerOwner is the object a listener is defined in: its kind (Gateway
// or ListenerSet), namespace (routes' "Same" namespace, and where its
// certificateRefs point without a ReferenceGrant) and generation.
type listenerOwner struct {
	kind, namespace string
	generation      int64
}

func gatewayOwner(gw *gwv1.Gateway) listenerOwner {
	return listenerOwner{kind: kindGateway, namespace: gw.Namespace, generation: gw.Generation}
}

// kindsFor is the route kinds a listener of protocol p serves, in the
// order supportedKinds lists them by default.
func kindsFor(p snapshot.Protocol) []string {
	switch p {
	case snapshot.ProtocolHTTP, snapshot.ProtocolHTTPS:
		return []string{kindHTTPRoute, kindGRPCRoute}
	case snapshot.ProtocolTLS:
		return []string{kindTLSRoute}
	case snapshot.ProtocolTCP:
		return []string{kindTCPRoute}
	case snapshot.ProtocolUDP:
		return []string{kindUDPRoute}
	}
	return nil
}

func ptrGroup(s string) *gwv1.Group { g := gwv1.Group(s); return &g }

// processListeners translates the listeners of gi, in spec order.
func (t *translator) processListeners(gi *gatewayInfo) {
	gw := gi.gw
	conflict := listenerConflicts(gw.Spec.Listeners)
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if slices.ContainsFunc(gw.Spec.Listeners[:i], func(o gwv1.Listener) bool { return o.Name == l.Name }) {
			continue // names are unique by CEL; ignore a repeat
		}
		gi.listeners = append(gi.listeners, t.listener(gw, gatewayOwner(gw), l, conflict[i]))
	}
}

// transport is the socket type a listener protocol binds: UDP listeners
// share port numbers with TCP-protocol ones without conflict.
func transport(p gwv1.ProtocolType) string {
	if p == gwv1.UDPProtocolType {
		return "udp"
	}
	return "tcp"
}

// listenerConflicts gives each listener its Conflicted reason, "" for none.
// Listeners on one port and transport conflict when their protocols differ
// (ProtocolConflict). Of the same protocol, HTTP, HTTPS and TLS listeners
// conflict when they share a hostname (HostnameConflict) — TLS listeners of
// different tls.mode are distinct by hostname and served together (mixed
// termination) — and TCP and UDP listeners, distinct by port only, always
// conflict (ProtocolConflict).
//
// A Gateway has at most 64 listeners (its CRD says so), so each is
// compared with every other rather than grouped through maps: at 1,000
// Gateways of a listener or two, the maps were most of the work.
func listenerConflicts(listeners []gwv1.Listener) []string {
	conflict := make([]string, len(listeners))
	samePort := func(i, j int) bool {
		return listeners[i].Port == listeners[j].Port && transport(listeners[i].Protocol) == transport(listeners[j].Protocol)
	}
	for i := range listeners {
		proto := listeners[i].Protocol
		shared, mixed, sameHost := false, false, false
		for j := range listeners {
			if j == i || !samePort(i, j) {
				continue
			}
			shared = true
			if listeners[j].Protocol != proto {
				mixed = true
			} else if hostOf(listeners[j].Hostname) == hostOf(listeners[i].Hostname) {
				sameHost = true
			}
		}
		switch {
		case mixed || (shared && (proto == gwv1.TCPProtocolType || proto == gwv1.UDPProtocolType)):
			conflict[i] = status.ReasonProtocolConflict
		case sameHost:
			conflict[i] = status.ReasonHostnameConflict
		}
	}
	return conflict
}

// listener translates one listener of owner (gw itself or a ListenerSet
// attached to gw); conflict is its Conflicted reason ("" for none).
func (t *translator) listener(gw *gwv1.Gateway, owner listenerOwner, l *gwv1.Listener, conflict string) *listenerInfo {
	gen := owner.generation
	li := &listenerInfo{spec: l, owner: owner, hostname: hostOf(l.Hostname)}
	li.accepted = status.Accepted(true, status.ReasonAccepted, "listener is valid", gen)
	li.conflict = status.Conflicted(false, status.ReasonNoConflicts, "no conflicts", gen)
	li.resolved = status.ResolvedRefs(true, status.ReasonResolvedRefs, "all references resolved", gen)
	ok := li.accept(conflict, gen)
	kindsOK := li.routeKinds(gen)
	if li.protocol == snapshot.ProtocolHTTPS || (li.protocol == snapshot.ProtocolTLS && li.terminate) {
		if p := t.listenerCerts(owner, l, li); p != nil {
			ok = false
			li.resolved = status.ResolvedRefs(false, p.reason, p.message, gen)
		}
	}
	if li.protocol == snapshot.ProtocolHTTPS && ok && !t.frontendValidation(gw, li) {
		ok = false
	}
	// Unsupported route kinds alone do not stop the listener serving
	// the kinds it does support.
	li.servable = ok && (kindsOK || li.resolved.Reason == status.ReasonInvalidRouteKinds)
	return li
}

// accept checks the listener's protocol, port, hostname and conflict,
// setting its protocol and its Accepted and Conflicted conditions (the last
// failure checked wins); false means it cannot be served.
func (li *listenerInfo) accept(conflict string, gen int64) bool {
	l := li.spec
	ok := true
	switch l.Protocol {
	case gwv1.HTTPProtocolType:
		li.protocol = snapshot.ProtocolHTTP
	case gwv1.HTTPSProtocolType:
		li.protocol = snapshot.ProtocolHTTPS
	case gwv1.TLSProtocolType:
		li.protocol = snapshot.ProtocolTLS
		li.terminate = l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode == gwv1.TLSModeTerminate
		if l.TLS != nil && l.TLS.Mode != nil && *l.TLS.Mode != gwv1.TLSModeTerminate && *l.TLS.Mode != gwv1.TLSModePassthrough {
			ok = false
			li.accepted = status.Accepted(false, status.ReasonUnsupportedValue,
				fmt.Sprintf("tls.mode %q is not Terminate or Passthrough", *l.TLS.Mode), gen)
		}
	case gwv1.TCPProtocolType:
		li.protocol = snapshot.ProtocolTCP
	case gwv1.UDPProtocolType:
		li.protocol = snapshot.ProtocolUDP
	default:
		ok = false
		li.accepted = status.Accepted(false, status.ReasonUnsupportedProtocol,
			fmt.Sprintf("protocol %q is not supported; use HTTP, HTTPS, TLS, TCP or UDP", l.Protocol), gen)
	}
	if l.Port < 1 || l.Port > 65535 {
		ok = false
		li.accepted = status.Accepted(false, string(gwv1.ListenerReasonPortUnavailable), fmt.Sprintf("port %d is out of range", l.Port), gen)
	}
	if li.hostname != "" && !validHostname(li.hostname) {
		ok = false
		li.accepted = status.Accepted(false, status.ReasonUnsupportedValue, fmt.Sprintf("hostname %q is invalid", li.hostname), gen)
	}
	if li.hostname != "" && (li.protocol == snapshot.ProtocolTCP || li.protocol == snapshot.ProtocolUDP) {
		ok = false
		li.accepted = status.Accepted(false, status.ReasonUnsupportedValue, fmt.Sprintf("a %s listener cannot have a hostname", l.Protocol), gen)
	}
	if conflict != "" {
		ok = false
		msg := "another listener on port " + fmt.Sprint(l.Port) + " uses a different protocol"
		switch {
		case conflict == status.ReasonHostnameConflict:
			msg = "another listener on port " + fmt.Sprint(l.Port) + " uses the same hostname"
		case l.Protocol == gwv1.TCPProtocolType || l.Protocol == gwv1.UDPProtocolType:
			msg = "another " + string(l.Protocol) + " listener uses port " + fmt.Sprint(l.Port) + "; " + string(l.Protocol) + " listeners are distinct by port only"
		}
		li.conflict = status.Conflicted(true, conflict, msg, gen)
		li.accepted = status.Accepted(false, conflict, msg, gen)
	}
	return ok
}

// routeKinds applies allowedRoutes.kinds (default: every kind the
// listener's protocol serves); false means some kind is not one the
// protocol serves (ResolvedRefs=False InvalidRouteKinds).
func (li *listenerInfo) routeKinds(gen int64) bool {
	l := li.spec
	kindsOK := true
	served := kindsFor(li.protocol)
	if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
		var bad []string
		for _, k := range l.AllowedRoutes.Kinds {
			g := gatewayGroup
			if k.Group != nil {
				g = string(*k.Group)
			}
			if g == gatewayGroup && slices.Contains(served, string(k.Kind)) {
				if !li.allowsKind(string(k.Kind)) {
					li.kinds = append(li.kinds, gwv1.RouteGroupKind{Group: ptrGroup(gatewayGroup), Kind: k.Kind})
				}
			} else {
				bad = append(bad, g+"/"+string(k.Kind))
			}
		}
		if len(bad) > 0 {
			kindsOK = false
			li.resolved = status.ResolvedRefs(false, status.ReasonInvalidRouteKinds,
				"unsupported route kinds: "+strings.Join(bad, ", "), gen)
		}
	} else {
		for _, k := range served {
			li.kinds = append(li.kinds, gwv1.RouteGroupKind{Group: ptrGroup(gatewayGroup), Kind: gwv1.Kind(k)})
		}
	}
	if li.kinds == nil {
		li.kinds = []gwv1.RouteGroupKind{}
	}
	return kindsOK
}

// hostOf is a listener hostname in lower case, "" for any.
func hostOf(h *gwv1.Hostname) string {
	if h == nil {
		return ""
	}
	return strings.ToLower(string(*h))
}
