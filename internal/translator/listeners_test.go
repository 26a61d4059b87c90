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
	"math/rand/v2"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/status"
)

// conflictsByGroup is listenerConflicts as it was written first, grouping
// listeners by port and transport through maps: the oracle of
// TestListenerConflictsEqualsGrouping.
func conflictsByGroup(listeners []gwv1.Listener) []string {
	type portKey struct {
		port      int32
		transport string
	}
	byPort := map[portKey][]int{}
	for i := range listeners {
		k := portKey{int32(listeners[i].Port), transport(listeners[i].Protocol)}
		byPort[k] = append(byPort[k], i)
	}
	conflict := make([]string, len(listeners))
	for _, idxs := range byPort {
		protos := map[gwv1.ProtocolType]bool{}
		for _, i := range idxs {
			protos[listeners[i].Protocol] = true
		}
		proto := listeners[idxs[0]].Protocol
		if len(protos) > 1 || ((proto == gwv1.TCPProtocolType || proto == gwv1.UDPProtocolType) && len(idxs) > 1) {
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

// TestListenerConflictsEqualsGrouping compares listenerConflicts with the
// grouping it replaced over random listener lists: few ports, protocols
// and hostnames, so that every kind of conflict comes up.
func TestListenerConflictsEqualsGrouping(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	protos := []gwv1.ProtocolType{gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType, gwv1.TLSProtocolType, gwv1.TCPProtocolType, gwv1.UDPProtocolType, "SCTP"}
	hosts := []string{"", "a.example.com", "*.example.com", "b.example.com"}
	seen := map[string]bool{}
	for range 5000 {
		ls := make([]gwv1.Listener, rng.IntN(9))
		for i := range ls {
			ls[i] = gwv1.Listener{Port: gwv1.PortNumber(80 + rng.IntN(3)), Protocol: protos[rng.IntN(len(protos))]}
			if h := hosts[rng.IntN(len(hosts))]; h != "" {
				hn := gwv1.Hostname(h)
				ls[i].Hostname = &hn
			}
		}
		got, want := listenerConflicts(ls), conflictsByGroup(ls)
		if !slices.Equal(got, want) {
			t.Fatalf("listeners %+v: conflicts %q, want %q", ls, got, want)
		}
		for _, c := range got {
			seen[c] = true
		}
	}
	for _, c := range []string{"", status.ReasonProtocolConflict, status.ReasonHostnameConflict} {
		if !seen[c] {
			t.Errorf("no case gave %q", c)
		}
	}
}
