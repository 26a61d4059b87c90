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

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/status"
)

// SharedPortKeys is the set of Gateway listener ports the shared pool
// serves, the `wanted` argument of portalloc.Assign: every distinct port of
// a listener of a protocol Coxswain serves, of every accepted Gateway of our classes that
// the shared pool serves (not dedicated, or dedicated whose
// DedicatedProxyReady is not True yet). The VIP Service reconciler must
// call this (not recompute it) so it assigns exactly the ports Translate
// assigns.
func SharedPortKeys(res *Resources) []portalloc.Key {
	if res == nil {
		return nil
	}
	t := &translator{res: res, ix: buildIndex(res, nil), out: &Result{}}
	t.processGatewayClasses()
	gws := classifyGateways(res, t.ix, t.classes)
	byName := make(map[nn]*gatewayInfo, len(gws))
	for _, gi := range gws {
		byName[key(&gi.gw.ObjectMeta)] = gi
	}
	classifyListenerSets(res, t.ix, byName)
	return sharedKeys(gws)
}

func sharedKeys(gws []*gatewayInfo) []portalloc.Key {
	var keys []portalloc.Key
	for _, gi := range gws {
		if !gi.servedShared() {
			continue
		}
		seen := map[int32]bool{}
		listeners := append(append([]gwv1.Listener(nil), gi.gw.Spec.Listeners...), gi.setListeners()...)
		for i := range listeners {
			l := &listeners[i]
			p := int32(l.Port)
			if p < 1 || p > 65535 || seen[p] || !servedProtocol(l.Protocol) {
				continue
			}
			seen[p] = true
			keys = append(keys, portalloc.Key{Namespace: gi.gw.Namespace, Name: gi.gw.Name, Port: p})
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	return keys
}

// assignInternalPorts gives every listener port the shared pool serves an
// internal port (portalloc.Assign, keeping persisted ones where it can) and
// says so, by Event, where a port moved or found none.
func (t *translator) assignInternalPorts() {
	var assigned []portalloc.Assignment
	var unassigned []portalloc.Key
	if kept, ok := t.memo.internalPorts(); ok {
		assigned, unassigned = kept.assigned, kept.unassigned
	} else {
		assigned, unassigned = portalloc.Assign(t.res.InternalPorts, sharedKeys(t.gwOrder))
		t.memo.keepInternalPorts(assigned, unassigned)
	}
	t.out.InternalPorts = assigned
	persisted := make(map[portalloc.Key]int32, len(t.res.InternalPorts))
	for _, a := range t.res.InternalPorts {
		if _, dup := persisted[a.Key]; !dup {
			persisted[a.Key] = a.Internal
		}
	}
	for _, a := range assigned {
		if gi := t.gateways[nn{Namespace: a.Namespace, Name: a.Name}]; gi != nil {
			if gi.internal == nil {
				gi.internal = map[int32]int32{}
			}
			gi.internal[a.Port] = a.Internal
			// A persisted port that could not be kept (claimed twice, or
			// out of range) moves: clients of the VIP Service are
			// unaffected, but say so.
			if old, ok := persisted[a.Key]; ok && old != a.Internal {
				t.event(kindGateway, a.Namespace, a.Name, corev1.EventTypeNormal, status.EventInternalPortRemapped,
					fmt.Sprintf("listener port %d moved from internal port %d to %d", a.Port, old, a.Internal))
			}
		}
	}
	for _, k := range unassigned {
		if gi := t.gateways[nn{Namespace: k.Namespace, Name: k.Name}]; gi != nil {
			gi.unassigned = append(gi.unassigned, k.Port)
			t.warn(kindGateway, k.Namespace, k.Name, status.EventNoInternalPortAvailable,
				fmt.Sprintf("no free internal port in %d-%d for listener port %d", portalloc.Min, portalloc.Max, k.Port))
		}
	}
}

// servedProtocol reports a listener protocol Coxswain serves. A port's TCP
// and UDP listeners share one internal port (one socket of each).
func servedProtocol(p gwv1.ProtocolType) bool {
	switch p {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType, gwv1.TLSProtocolType, gwv1.TCPProtocolType, gwv1.UDPProtocolType:
		return true
	}
	return false
}
