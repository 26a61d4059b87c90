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
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/status"
)

// A ListenerSet adds listeners to a Gateway that allows it
// (spec.allowedListeners). Its listeners are served with the Gateway's, on
// the Gateway's proxies and addresses, after the Gateway's own listeners in
// precedence: the Gateway, then ListenerSets oldest first, then by
// namespace/name. A listener that conflicts with one before it is refused
// (Conflicted); the earlier one keeps serving. Routes attach to a
// ListenerSet's listeners by naming the ListenerSet as their parent, and a
// Gateway parentRef never reaches a ListenerSet's listeners.

// listenerSetInfo is one ListenerSet whose parentRef names a Gateway of
// ours.
type listenerSetInfo struct {
	ls *gwv1.ListenerSet
	gi *gatewayInfo
	// allowed: the parent is served and its allowedListeners selects the
	// set's namespace; otherwise notAllowed or parentRefused says why not.
	allowed                   bool
	notAllowed, parentRefused string
	listeners                 []*listenerInfo
}

// accepted reports whether the set has a valid listener: one that is
// served (accepted, not conflicted, references resolved).
func (lsi *listenerSetInfo) accepted() bool {
	for _, li := range lsi.listeners {
		if li.servable {
			return true
		}
	}
	return false
}

// refusal is why the set takes no routes, "" when it does.
func (lsi *listenerSetInfo) refusal() string {
	switch {
	case lsi.parentRefused != "":
		return lsi.parentRefused
	case !lsi.allowed:
		return lsi.notAllowed
	case !lsi.accepted():
		return "no listener is valid"
	}
	return ""
}

// ListenerSetStatus is the desired status of one ListenerSet.
type ListenerSetStatus struct {
	types.NamespacedName
	Generation int64
	Status     gwv1.ListenerSetStatus
}

// GatewayListeners are the listeners the ListenerSets attached to one
// Gateway add to it, in precedence order: what the Gateway's proxies
// (dedicated objects, the shared VIP Service) must expose besides its own
// listeners.
type GatewayListeners struct {
	types.NamespacedName
	Listeners []gwv1.Listener
}

// classifyListenerSets finds every ListenerSet of a Gateway of ours, in
// precedence order, and decides whether its Gateway takes it. It is shared
// by Translate and SharedPortKeys so both agree on the ports.
func classifyListenerSets(res *Resources, ix *index, gateways map[nn]*gatewayInfo) []*listenerSetInfo {
	sets := make([]*gwv1.ListenerSet, 0, len(res.ListenerSets))
	for _, ls := range res.ListenerSets {
		if ls != nil && named(&ls.ObjectMeta) {
			sets = append(sets, ls)
		}
	}
	sort.SliceStable(sets, func(i, j int) bool { return olderFirst(&sets[i].ObjectMeta, &sets[j].ObjectMeta) })
	var out []*listenerSetInfo
	seen := map[nn]bool{}
	for _, ls := range sets {
		k := key(&ls.ObjectMeta)
		ref := ls.Spec.ParentRef
		if seen[k] || string(ptr.Deref(ref.Group, gatewayGroup)) != gatewayGroup || string(ptr.Deref(ref.Kind, kindGateway)) != kindGateway {
			continue
		}
		seen[k] = true
		ns := ls.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		gi := gateways[nn{Namespace: ns, Name: string(ref.Name)}]
		if gi == nil {
			continue // not a Gateway of ours: not ours to report
		}
		lsi := &listenerSetInfo{ls: ls, gi: gi}
		switch {
		case !gi.served:
			lsi.parentRefused = "parent Gateway is not accepted: " + gi.refusal()
		default:
			lsi.notAllowed = allowsListenerSet(gi.gw, ls.Namespace, ix)
			lsi.allowed = lsi.notAllowed == ""
		}
		if lsi.allowed {
			gi.sets = append(gi.sets, lsi)
		}
		out = append(out, lsi)
	}
	return out
}

// allowsListenerSet applies a Gateway's spec.allowedListeners to a
// ListenerSet namespace: "" when allowed, else why not.
func allowsListenerSet(gw *gwv1.Gateway, ns string, ix *index) string {
	from := gwv1.NamespacesFromNone
	var sel *metav1.LabelSelector
	if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil {
		if al.Namespaces.From != nil {
			from = *al.Namespaces.From
		}
		sel = al.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return ""
	case gwv1.NamespacesFromSame:
		if ns == gw.Namespace {
			return ""
		}
		return "the Gateway allows ListenerSets of its own namespace only (allowedListeners.namespaces.from: Same)"
	case gwv1.NamespacesFromSelector:
		if sel != nil {
			if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && s.Matches(labels.Set(ix.nsLabels[ns])) {
				return ""
			}
		}
		return "the namespace " + ns + " is not selected by the Gateway's allowedListeners.namespaces.selector"
	}
	return "the Gateway allows no ListenerSets (allowedListeners.namespaces.from: None, the default)"
}

// setListener is a ListenerSet entry as a Gateway listener.
func setListener(e *gwv1.ListenerEntry) gwv1.Listener {
	return gwv1.Listener{Name: e.Name, Hostname: e.Hostname, Port: e.Port, Protocol: e.Protocol, TLS: e.TLS, AllowedRoutes: e.AllowedRoutes}
}

// processListenerSets translates the listeners of every allowed
// ListenerSet, in precedence order after its Gateway's own listeners.
func (t *translator) processListenerSets() {
	for _, gi := range t.gwOrder {
		taken := append([]*listenerInfo(nil), gi.listeners...)
		for _, lsi := range gi.sets {
			owner := listenerOwner{kind: kindListenerSet, namespace: lsi.ls.Namespace, generation: lsi.ls.Generation}
			seen := map[gwv1.SectionName]bool{}
			for i := range lsi.ls.Spec.Listeners {
				e := &lsi.ls.Spec.Listeners[i]
				if seen[e.Name] {
					continue // names are unique by CEL; ignore a repeat
				}
				seen[e.Name] = true
				l := setListener(e)
				li := t.listener(gi.gw, owner, &l, precedenceConflict(taken, &l))
				lsi.listeners = append(lsi.listeners, li)
				if li.conflict.Status != metav1.ConditionTrue {
					taken = append(taken, li)
				}
			}
		}
	}
	// A Gateway counts the sets it takes that have a valid listener (as
	// their status says: listenerSetStatus).
	for _, lsi := range t.lsOrder {
		if lsi.parentRefused == "" && lsi.allowed && lsi.accepted() {
			lsi.gi.attachedSets++
		}
	}
}

// precedenceConflict is the Conflicted reason of listener l against the
// listeners before it in precedence (taken), "" for none: the same port and
// transport with another protocol, or with the same protocol a TCP or UDP
// listener, or an HTTP, HTTPS or TLS one with the same hostname.
func precedenceConflict(taken []*listenerInfo, l *gwv1.Listener) string {
	for _, o := range taken {
		if o.spec.Port != l.Port || transport(o.spec.Protocol) != transport(l.Protocol) || o.conflict.Status == metav1.ConditionTrue {
			continue
		}
		switch {
		case o.spec.Protocol != l.Protocol,
			l.Protocol == gwv1.TCPProtocolType || l.Protocol == gwv1.UDPProtocolType:
			return status.ReasonProtocolConflict
		case hostOf(o.spec.Hostname) == hostOf(l.Hostname):
			return status.ReasonHostnameConflict
		}
	}
	return ""
}

// listenerSetStatus fills the status of one ListenerSet.
func (t *translator) listenerSetStatus(lsi *listenerSetInfo) {
	gen := lsi.ls.Generation
	st := ListenerSetStatus{NamespacedName: key(&lsi.ls.ObjectMeta), Generation: gen}
	var acc, prog metav1.Condition
	switch {
	case lsi.parentRefused != "":
		acc = status.Accepted(false, string(gwv1.ListenerSetReasonParentNotAccepted), lsi.parentRefused, gen)
		prog = status.Programmed(false, string(gwv1.ListenerSetReasonParentNotAccepted), lsi.parentRefused, gen)
	case !lsi.allowed:
		acc = status.Accepted(false, string(gwv1.ListenerSetReasonNotAllowed), lsi.notAllowed, gen)
		prog = status.Programmed(false, string(gwv1.ListenerSetReasonNotAllowed), lsi.notAllowed, gen)
	default:
		valid, invalid := 0, 0
		for _, li := range lsi.listeners {
			st.Status.Listeners = append(st.Status.Listeners, gwv1.ListenerEntryStatus(t.listenerStatus(lsi.gi, li)))
			if li.servable {
				valid++
			} else {
				invalid++
			}
		}
		switch {
		case valid == 0:
			acc = status.Accepted(false, string(gwv1.ListenerSetReasonListenersNotValid), "no listener is valid", gen)
			prog = status.Programmed(false, string(gwv1.ListenerSetReasonListenersNotValid), "no listener is valid", gen)
		case invalid > 0:
			acc = status.Accepted(true, string(gwv1.ListenerSetReasonListenersNotValid),
				fmt.Sprintf("accepted; %d of %d listeners are not valid, see their conditions", invalid, valid+invalid), gen)
			prog = status.Programmed(true, status.ReasonProgrammed, "the valid listeners are in the published snapshot of the Gateway", gen)
		default:
			acc = status.Accepted(true, status.ReasonAccepted, "ListenerSet is accepted", gen)
			prog = status.Programmed(true, status.ReasonProgrammed, "listeners are in the published snapshot of the Gateway", gen)
		}
	}
	st.Status.Conditions = []metav1.Condition{acc, prog}
	sortConds(st.Status.Conditions)
	t.out.ListenerSets = append(t.out.ListenerSets, st)
}

// ListenerSetListeners are the listeners the ListenerSets among sets that
// gw allows add to it, in precedence order (Gateway API, ListenerSet):
// what the Gateway's Services and proxies must expose besides its own.
// nsLabels are the labels of each namespace, for an allowedListeners
// selector. It is what Translate reports in Result.ListenerSetListeners,
// for callers that provision from the API instead of a Result.
func ListenerSetListeners(gw *gwv1.Gateway, sets []*gwv1.ListenerSet, nsLabels map[string]map[string]string) []gwv1.Listener {
	ix := &index{nsLabels: nsLabels}
	gi := &gatewayInfo{gw: gw, served: true}
	classifyListenerSets(&Resources{ListenerSets: sets}, ix, map[nn]*gatewayInfo{key(&gw.ObjectMeta): gi})
	return gi.setListeners()
}

// setListeners lists the listeners of the ListenerSets gi takes.
func (g *gatewayInfo) setListeners() []gwv1.Listener {
	var out []gwv1.Listener
	for _, lsi := range g.sets {
		for i := range lsi.ls.Spec.Listeners {
			out = append(out, setListener(&lsi.ls.Spec.Listeners[i]))
		}
	}
	return out
}
