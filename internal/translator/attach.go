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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
)

// attachment is a route attached to a listener, with the hostnames it
// serves there.
type attachment struct {
	cr    *compiledRoute
	hosts []string
	// bits is hostBits(hosts): whether a host of a few changed ones is
	// among them is known without a look at hosts (emitPatched).
	bits uint64
}

// hostBits is the bits (hostBit) of hosts.
func hostBits(hosts []string) uint64 {
	var bits uint64
	for _, h := range hosts {
		bits |= hostBit(h)
	}
	return bits
}

// hostBit is one bit of 64 for hostname h (of FNV-1a): hosts whose bits
// meet no bit of a set's do not include any of the set's hosts.
func hostBit(h string) uint64 {
	sum := uint64(14695981039346656037)
	for i := 0; i < len(h); i++ {
		sum ^= uint64(h[i])
		sum *= 1099511628211
	}
	return 1 << (sum & 63)
}

// routeParent is what a route's parentRef names among our objects: a
// Gateway (its own listeners) or a ListenerSet attached to one (the set's
// listeners).
type routeParent struct {
	gi        *gatewayInfo
	listeners []*listenerInfo
	// refusal, when set, is why the parent takes no routes.
	refusal string
}

// routeParent resolves a parentRef to a Gateway or ListenerSet of ours, or
// nil.
func (t *translator) routeParent(routeNS string, ref *gwv1.ParentReference) *routeParent {
	if ref.Group != nil && string(*ref.Group) != gatewayGroup {
		return nil
	}
	ns := routeNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	k := nn{Namespace: ns, Name: string(ref.Name)}
	switch kind := string(ptr.Deref(ref.Kind, kindGateway)); kind {
	case kindGateway:
		gi := t.gateways[k]
		if gi == nil {
			return nil
		}
		p := &routeParent{gi: gi, listeners: gi.listeners}
		if !gi.served {
			p.refusal = "parent Gateway is not accepted: " + gi.refusal()
		}
		return p
	case kindListenerSet:
		lsi := t.listenerSets[k]
		if lsi == nil {
			return nil
		}
		p := &routeParent{gi: lsi.gi, listeners: lsi.listeners}
		if r := lsi.refusal(); r != "" {
			p.refusal = "parent ListenerSet is not accepted: " + r
		}
		return p
	}
	return nil
}

// hasOurParent reports whether any parentRef names a Gateway or
// ListenerSet of ours.
func (t *translator) hasOurParent(ns string, refs []gwv1.ParentReference) bool {
	for i := range refs {
		if t.routeParent(ns, &refs[i]) != nil {
			return true
		}
	}
	return false
}

// attach binds a compiled route to the listeners its parentRefs select and
// returns the route's status for the parents this controller owns.
func (t *translator) attach(cr *compiledRoute, refs []gwv1.ParentReference) []gwv1.RouteParentStatus {
	gen := cr.meta.Generation
	var out []gwv1.RouteParentStatus
	var seen map[string]bool
	for i := range refs {
		ref := &refs[i]
		parent := t.routeParent(cr.meta.Namespace, ref)
		if parent == nil {
			continue
		}
		if len(refs) > 1 {
			rk := parentRefKey(ref)
			if seen[rk] {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[rk] = true
		}
		var acc metav1.Condition
		switch {
		case parent.refusal != "":
			acc = status.Accepted(false, status.ReasonNoMatchingParent, parent.refusal, gen)
		default:
			acc = t.attachToListeners(cr, parent.listeners, ref)
		}
		res := status.ResolvedRefs(true, status.ReasonResolvedRefs, "all references resolved", gen)
		if cr.resolvedReason != "" {
			res = status.ResolvedRefs(false, cr.resolvedReason, cr.resolvedMsg, gen)
		}
		out = append(out, gwv1.RouteParentStatus{
			ParentRef:      *ref.DeepCopy(),
			ControllerName: gwv1.GatewayController(names.ControllerName),
			Conditions:     t.memo.routeConds(acc, res),
		})
	}
	return t.memo.routeParents(out)
}

// parentRefKey identifies a parentRef, so a repeated one counts once.
func parentRefKey(ref *gwv1.ParentReference) string {
	port := ""
	if ref.Port != nil {
		port = fmt.Sprint(*ref.Port)
	}
	return string(ptr.Deref(ref.Group, "")) + "|" + string(ptr.Deref(ref.Kind, "")) + "|" + string(ptr.Deref(ref.Namespace, "")) + "|" +
		string(ref.Name) + "|" + string(ptr.Deref(ref.SectionName, "")) + "|" + port
}

// attachToListeners attaches a route to the listeners of its parent that
// ref selects and returns the route's Accepted condition for that parent.
func (t *translator) attachToListeners(cr *compiledRoute, listeners []*listenerInfo, ref *gwv1.ParentReference) metav1.Condition {
	gen := cr.meta.Generation
	candidates := 0
	allowed := 0
	matched := 0
	for _, li := range listeners {
		if ref.SectionName != nil && *ref.SectionName != li.spec.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != li.spec.Port {
			continue
		}
		candidates++
		if !li.allowsKind(cr.kind) || !t.allowsNamespace(li, cr.meta.Namespace) {
			continue
		}
		allowed++
		hosts := intersect(li.hostname, cr.hostnames)
		if len(hosts) == 0 {
			continue
		}
		matched++
		st := t.state(li)
		if st.lastCounted != cr {
			st.lastCounted = cr
			st.attached++
		}
		routed := cr.err == "" && li.servable
		if n := len(st.routes); routed && n > 0 && st.routes[n-1].cr == cr {
			routed = false // a second parentRef selecting the same listener
		}
		bits := hostBits(hosts)
		t.recordAtt(li, hosts, bits, routed)
		if routed {
			st.routes = append(st.routes, attachment{cr: cr, hosts: hosts, bits: bits})
		}
	}
	switch {
	case candidates == 0:
		return status.Accepted(false, status.ReasonNoMatchingParent, "no listener matches the parentRef's sectionName and port", gen)
	case allowed == 0:
		return status.Accepted(false, status.ReasonNotAllowedByListeners, "no matching listener allows this route's kind and namespace", gen)
	case matched == 0:
		return status.Accepted(false, status.ReasonNoMatchingListenerHostname, "no hostname of the route intersects a listener hostname", gen)
	case cr.err != "":
		return status.Accepted(false, status.ReasonUnsupportedValue, cr.err, gen)
	}
	return status.Accepted(true, status.ReasonAccepted, "route is accepted", gen)
}

// allowsNamespace applies a listener's allowedRoutes.namespaces ("Same" is
// the namespace of the Gateway or ListenerSet that defines it).
func (t *translator) allowsNamespace(li *listenerInfo, routeNS string) bool {
	l := li.spec
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if l.AllowedRoutes != nil && l.AllowedRoutes.Namespaces != nil {
		if l.AllowedRoutes.Namespaces.From != nil {
			from = *l.AllowedRoutes.Namespaces.From
		}
		sel = l.AllowedRoutes.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return routeNS == li.owner.namespace
	case gwv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false
		}
		return s.Matches(labels.Set(t.ix.nsLabels[routeNS]))
	}
	return false
}

// allowsKind applies a listener's allowedRoutes.kinds.
func (li *listenerInfo) allowsKind(kind string) bool {
	for _, k := range li.kinds {
		if string(k.Kind) == kind {
			return true
		}
	}
	return false
}
