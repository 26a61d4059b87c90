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
	scope     snapshot.Scope
	listeners []listenerStamp
	st        GatewayStatus
}

// listenerStamp is what of a listener's status routes decide.
type listenerStamp struct {
	attached                        int32
	programmedReason, programmedMsg string
}

func stampOf(st *listenerState) listenerStamp {
	return listenerStamp{st.attached, st.programmedReason, st.programmedMsg}
}

func (t *translator) stampListeners(gi *gatewayInfo) []listenerStamp {
	out := make([]listenerStamp, len(gi.listeners))
	for i, li := range gi.listeners {
		out[i] = stampOf(t.state(li))
	}
	return out
}

// gatewayStatus is the status the last translation gave gi, when this
// translation's environment is that one's and gi's listeners are stamped
// the same, kept for the next translation. It is found on gi, which the
// last translation of this environment made: at 1,000 Gateways, looking
// each up by name was a twentieth of a route change's translation.
func (p *memoPass) gatewayStatus(t *translator, gi *gatewayInfo, scope snapshot.Scope) (GatewayStatus, bool) {
	if p == nil || !p.sameEnv || p.built == nil {
		return GatewayStatus{}, false
	}
	e := gi.memoStatus
	if e == nil || e.scope != scope || len(e.listeners) != len(gi.listeners) {
		return GatewayStatus{}, false
	}
	for i, li := range gi.listeners {
		if e.listeners[i] != stampOf(t.state(li)) {
			return GatewayStatus{}, false
		}
	}
	return e.st, true
}

// keepGatewayStatus keeps st, gi's status published in scope, for the
// next translation.
func (p *memoPass) keepGatewayStatus(t *translator, gi *gatewayInfo, scope snapshot.Scope, st GatewayStatus) {
	if p == nil || p.built == nil {
		return
	}
	gi.memoStatus = &memoGatewayStatus{scope: scope, listeners: t.stampListeners(gi), st: st}
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

// keptGateways is what processGateways made in one environment: the
// Gateways and ListenerSets with their listeners (which no later step
// changes: what routes make of a listener is the translation's
// listenerState), and what else it did (the certificates it read, the
// events it raised and the Result fields it filled). processGateways
// reads only the environment, so the next translation of the same
// environment takes these as they are instead of translating every
// Gateway's listeners again: at 1,000 Gateways that was a sixth of a
// route change's translation.
type keptGateways struct {
	gwOrder       []*gatewayInfo
	gateways      map[nn]*gatewayInfo
	lsOrder       []*listenerSetInfo
	listenerSets  map[nn]*listenerSetInfo
	byOrd         []*listenerInfo
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
	p.keptGateways = &keptGateways{
		gwOrder: t.gwOrder, gateways: t.gateways,
		lsOrder: t.lsOrder, listenerSets: t.listenerSets,
		byOrd: slices.Clip(t.byOrd),
		certs: maps.Clone(t.certs), badCerts: maps.Clone(t.badCerts),
		events:        slices.Clone(events),
		setListeners:  slices.Clip(t.out.ListenerSetListeners),
		internalPorts: slices.Clip(t.out.InternalPorts),
	}
}

// reuseGateways does what processGateways would, with what the last
// translation of this environment kept; false, having done nothing, when
// there is none.
func (p *memoPass) reuseGateways(t *translator) bool {
	if p == nil || !p.sameEnv || p.keptGateways == nil {
		return false
	}
	k := p.keptGateways
	t.gwOrder, t.gateways, t.lsOrder, t.listenerSets = k.gwOrder, k.gateways, k.lsOrder, k.listenerSets
	t.byOrd = k.byOrd
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
