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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// listenerInfo is one Gateway listener as translated.
type listenerInfo struct {
	spec     *gwv1.Listener
	hostname string // "" for any
	protocol snapshot.Protocol
	// supported protocol, no conflicts, refs resolved.
	servable                        bool
	accepted                        metav1.Condition
	conflict                        metav1.Condition
	resolved                        metav1.Condition
	kinds                           []gwv1.RouteGroupKind
	certs                           []string
	attached                        int32
	lastCounted                     *compiledRoute
	routes                          []attachment
	programmedReason, programmedMsg string
}

var defaultKinds = []gwv1.RouteGroupKind{
	{Group: ptrGroup(gatewayGroup), Kind: kindHTTPRoute},
	{Group: ptrGroup(gatewayGroup), Kind: kindGRPCRoute},
}

func ptrGroup(s string) *gwv1.Group { g := gwv1.Group(s); return &g }

// processListeners translates the listeners of gi, in spec order.
func (t *translator) processListeners(gi *gatewayInfo) {
	gw := gi.gw
	conflict := listenerConflicts(gw.Spec.Listeners)
	seenNames := map[gwv1.SectionName]bool{}
	for i := range gw.Spec.Listeners {
		l := &gw.Spec.Listeners[i]
		if seenNames[l.Name] {
			continue // names are unique by CEL; ignore a repeat
		}
		seenNames[l.Name] = true
		gi.listeners = append(gi.listeners, t.listener(gw, l, conflict[i]))
	}
}

// listenerConflicts gives each listener its Conflicted reason, "" for none:
// listeners on one port conflict when their protocols differ, else when
// they share a hostname.
func listenerConflicts(listeners []gwv1.Listener) []string {
	byPort := map[int32][]int{}
	for i := range listeners {
		p := int32(listeners[i].Port)
		byPort[p] = append(byPort[p], i)
	}
	conflict := make([]string, len(listeners))
	for _, idxs := range byPort {
		protos := map[gwv1.ProtocolType]bool{}
		for _, i := range idxs {
			protos[listeners[i].Protocol] = true
		}
		if len(protos) > 1 {
			for _, i := range idxs {
				conflict[i] = status.ReasonProtocolConflict
			}
			continue
		}
		hosts := map[string]int{}
		for _, i := range idxs {
			hosts[hostOf(listeners[i].Hostname)]++
		}
		for _, i := range idxs {
			if hosts[hostOf(listeners[i].Hostname)] > 1 {
				conflict[i] = status.ReasonHostnameConflict
			}
		}
	}
	return conflict
}

// listener translates one listener of gw; conflict is its
// listenerConflicts reason.
func (t *translator) listener(gw *gwv1.Gateway, l *gwv1.Listener, conflict string) *listenerInfo {
	gen := gw.Generation
	li := &listenerInfo{spec: l, hostname: hostOf(l.Hostname)}
	li.accepted = status.Accepted(true, status.ReasonAccepted, "listener is valid", gen)
	li.conflict = status.Conflicted(false, status.ReasonNoConflicts, "no conflicts", gen)
	li.resolved = status.ResolvedRefs(true, status.ReasonResolvedRefs, "all references resolved", gen)
	ok := li.accept(conflict, gen)
	kindsOK := li.routeKinds(gen)
	if li.protocol == snapshot.ProtocolHTTPS {
		if p := t.listenerCerts(gw, l, li); p != nil {
			ok = false
			li.resolved = status.ResolvedRefs(false, p.reason, p.message, gen)
		}
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
	default:
		ok = false
		li.accepted = status.Accepted(false, status.ReasonUnsupportedProtocol,
			fmt.Sprintf("protocol %q is not supported; use HTTP or HTTPS", l.Protocol), gen)
	}
	if l.Port < 1 || l.Port > 65535 {
		ok = false
		li.accepted = status.Accepted(false, string(gwv1.ListenerReasonPortUnavailable), fmt.Sprintf("port %d is out of range", l.Port), gen)
	}
	if li.hostname != "" && !validHostname(li.hostname) {
		ok = false
		li.accepted = status.Accepted(false, status.ReasonUnsupportedValue, fmt.Sprintf("hostname %q is invalid", li.hostname), gen)
	}
	if conflict != "" {
		ok = false
		msg := "another listener on port " + fmt.Sprint(l.Port) + " uses a different protocol"
		if conflict == status.ReasonHostnameConflict {
			msg = "another listener on port " + fmt.Sprint(l.Port) + " uses the same hostname"
		}
		li.conflict = status.Conflicted(true, conflict, msg, gen)
		li.accepted = status.Accepted(false, conflict, msg, gen)
	}
	return ok
}

// routeKinds applies allowedRoutes.kinds (default: every kind we serve,
// on a supported protocol); false means some kind is unsupported
// (ResolvedRefs=False InvalidRouteKinds).
func (li *listenerInfo) routeKinds(gen int64) bool {
	l := li.spec
	kindsOK := true
	if l.AllowedRoutes != nil && len(l.AllowedRoutes.Kinds) > 0 {
		var bad []string
		for _, k := range l.AllowedRoutes.Kinds {
			g := gatewayGroup
			if k.Group != nil {
				g = string(*k.Group)
			}
			if g == gatewayGroup && (k.Kind == kindHTTPRoute || k.Kind == kindGRPCRoute) {
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
	} else if li.protocol != "" {
		li.kinds = append([]gwv1.RouteGroupKind(nil), defaultKinds...)
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
