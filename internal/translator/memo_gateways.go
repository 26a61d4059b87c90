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
	"maps"
	"slices"

	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// memoGatewayStatus is a Gateway's status as the last translation that
// made or reused it left it, with what it was made from that is not the
// environment: the scope it was published in and, per listener of the
// Gateway's own, the routes attached and why it is not programmed.
//
// Everything else a Gateway's status reads (gatewayStatus: the Gateway,
// its class, parameters, listeners, certificates, ListenerSets, Services
// and dedicated Deployments) is the environment, so in the environment
// that made it, a Gateway whose listeners have the same attached counts
// and programmed reasons has the same status again. With 1,000 Gateways,
// making them all anew was a tenth of a translation's allocations.
type memoGatewayStatus struct {
	gen       uint64
	scope     snapshot.Scope
	listeners []listenerStamp
	st        GatewayStatus
}

// listenerStamp is what of a listener's status routes decide.
type listenerStamp struct {
	attached                        int32
	programmedReason, programmedMsg string
}

func stampOf(li *listenerInfo) listenerStamp {
	return listenerStamp{li.attached, li.programmedReason, li.programmedMsg}
}

func stampListeners(gi *gatewayInfo) []listenerStamp {
	out := make([]listenerStamp, len(gi.listeners))
	for i, li := range gi.listeners {
		out[i] = stampOf(li)
	}
	return out
}

// gatewayStatus is the status the last translation gave gi, when this
// translation's environment is that one's and gi's listeners are stamped
// the same, kept for the next translation.
func (p *memoPass) gatewayStatus(gi *gatewayInfo, scope snapshot.Scope) (GatewayStatus, bool) {
	if p == nil || !p.sameEnv || p.gateways == nil {
		return GatewayStatus{}, false
	}
	e := p.gateways[key(&gi.gw.ObjectMeta)]
	if e == nil || e.scope != scope || len(e.listeners) != len(gi.listeners) {
		return GatewayStatus{}, false
	}
	for i, li := range gi.listeners {
		if e.listeners[i] != stampOf(li) {
			return GatewayStatus{}, false
		}
	}
	e.gen = p.gen
	return e.st, true
}

// keepGatewayStatus keeps st, gi's status published in scope, for the
// next translation.
func (p *memoPass) keepGatewayStatus(gi *gatewayInfo, scope snapshot.Scope, st GatewayStatus) {
	if p == nil || p.gateways == nil {
		return
	}
	p.gateways[st.NamespacedName] = &memoGatewayStatus{gen: p.gen, scope: scope, listeners: stampListeners(gi), st: st}
}

// memoPorts is the internal port assignment of the last translation
// (portalloc.Assign of the persisted assignments and the shared pool's
// listener ports: both the environment).
type memoPorts struct {
	assigned   []portalloc.Assignment
	unassigned []portalloc.Key
}

// internalPorts is the last translation's assignment when this
// translation's environment is that one's.
func (p *memoPass) internalPorts() (*memoPorts, bool) {
	if p == nil || !p.sameEnv || p.ports == nil {
		return nil, false
	}
	return p.ports, true
}

// keepInternalPorts keeps this translation's assignment for the next.
func (p *memoPass) keepInternalPorts(assigned []portalloc.Assignment, unassigned []portalloc.Key) {
	if p != nil {
		p.ports = &memoPorts{assigned, unassigned}
	}
}

// keptGateways is what processGateways made in one environment, taken
// before any route attached: the Gateways and ListenerSets with their
// listeners (copies no translation changes), and what else it did (the
// certificates it read, the events it raised and the Result fields it
// filled). processGateways reads only the environment, so the next
// translation of the same environment starts from copies of these
// instead of translating every Gateway's listeners again: at 1,000
// Gateways that was a sixth of a route change's translation.
type keptGateways struct {
	gwOrder       []*gatewayInfo
	lsOrder       []*listenerSetInfo
	certs         map[string]*snapshot.Certificate
	badCerts      map[string]error
	events        []Event
	setListeners  []GatewayListeners
	internalPorts []portalloc.Assignment
}

// keepGateways keeps what processGateways just made, events being the
// events it raised, for the next translation of this environment. It
// keeps nothing for inputs that cannot be trusted (pass.built is nil).
func (p *memoPass) keepGateways(t *translator, events []Event) {
	if p == nil || p.built == nil {
		return
	}
	gws, lss := cloneGateways(t.gwOrder, t.lsOrder, nil)
	p.keptGateways = &keptGateways{
		gwOrder: gws, lsOrder: lss,
		certs: maps.Clone(t.certs), badCerts: maps.Clone(t.badCerts),
		events:        slices.Clone(events),
		setListeners:  slices.Clip(t.out.ListenerSetListeners),
		internalPorts: slices.Clip(t.out.InternalPorts),
	}
}

// reuseGateways does what processGateways would, from copies of what the
// last translation of this environment kept; false, having done nothing,
// when there is none.
func (p *memoPass) reuseGateways(t *translator) bool {
	if p == nil || !p.sameEnv || p.keptGateways == nil {
		return false
	}
	k := p.keptGateways
	t.gwOrder, t.lsOrder = cloneGateways(k.gwOrder, k.lsOrder, t.classes)
	t.gateways = make(map[nn]*gatewayInfo, len(t.gwOrder))
	for _, gi := range t.gwOrder {
		t.gateways[key(&gi.gw.ObjectMeta)] = gi
	}
	t.listenerSets = make(map[nn]*listenerSetInfo, len(t.lsOrder))
	for _, lsi := range t.lsOrder {
		t.listenerSets[key(&lsi.ls.ObjectMeta)] = lsi
	}
	for id, c := range k.certs {
		t.certs[id] = c
	}
	for id, err := range k.badCerts {
		t.badCerts[id] = err
	}
	t.out.Events = append(t.out.Events, k.events...)
	t.out.ListenerSetListeners = k.setListeners
	t.out.InternalPorts = k.internalPorts
	p.keptGatewaysUsed = true
	return true
}

// cloneGateways copies gws and lss, with their listeners, as
// processGateways leaves them (nothing of routes, Gateway statuses or
// ListenerSet statuses), linked to each other as the originals are and
// to the classes of classes (by name; the originals' where it has none).
// Only what later steps change is copied: specs, conditions and lists of
// kinds or certificates are shared, and never changed.
func cloneGateways(gws []*gatewayInfo, lss []*listenerSetInfo, classes map[string]*classInfo) ([]*gatewayInfo, []*listenerSetInfo) {
	vals := make([]gatewayInfo, len(gws))
	out := make([]*gatewayInfo, len(gws))
	var byOld map[*gatewayInfo]*gatewayInfo
	if len(lss) > 0 {
		byOld = make(map[*gatewayInfo]*gatewayInfo, len(gws))
	}
	for i, gi := range gws {
		ng := &vals[i]
		*ng = *gi
		if gi.class != nil && gi.class.gc != nil {
			if ci := classes[gi.class.gc.Name]; ci != nil {
				ng.class = ci
			}
		}
		ng.listeners = cloneListeners(gi.listeners)
		ng.sets, ng.attachedSets = nil, 0
		out[i] = ng
		if byOld != nil {
			byOld[gi] = ng
		}
	}
	if len(lss) == 0 {
		return out, nil
	}
	outSets := make([]*listenerSetInfo, len(lss))
	setByOld := make(map[*listenerSetInfo]*listenerSetInfo, len(lss))
	for i, lsi := range lss {
		nl := new(listenerSetInfo)
		*nl = *lsi
		nl.gi = byOld[lsi.gi]
		nl.listeners = cloneListeners(lsi.listeners)
		outSets[i] = nl
		setByOld[lsi] = nl
	}
	for i, gi := range gws {
		if len(gi.sets) == 0 {
			continue
		}
		out[i].sets = make([]*listenerSetInfo, len(gi.sets))
		for j, lsi := range gi.sets {
			out[i].sets[j] = setByOld[lsi]
		}
	}
	return out, outSets
}

// cloneListeners copies lis without what routes and emission set on them
// (attachments, counts, ords, programmed reasons).
func cloneListeners(lis []*listenerInfo) []*listenerInfo {
	if lis == nil {
		return nil
	}
	vals := make([]listenerInfo, len(lis))
	out := make([]*listenerInfo, len(lis))
	for i, li := range lis {
		nl := &vals[i]
		*nl = *li
		nl.attached, nl.lastCounted, nl.ord, nl.routes = 0, nil, 0, nil
		nl.programmedReason, nl.programmedMsg = "", ""
		out[i] = nl
	}
	return out
}
