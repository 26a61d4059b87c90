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

package snapshot

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSearchListenerEqualsAnIndex: in listeners in order, each key is
// found where an index by key has it, and a key of no listener (or one
// ListenerKey never makes) is not found; listeners out of order, or with
// a key twice, are not in order.
func TestSearchListenerEqualsAnIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 200 {
		var ls []Listener
		for port := int32(1); port < 400; port++ {
			if rng.IntN(4) == 0 {
				ls = append(ls, Listener{Name: "tcp", Port: port, Protocol: ProtocolHTTP})
			}
			if rng.IntN(8) == 0 {
				ls = append(ls, Listener{Name: "udp", Port: port, Protocol: ProtocolUDP})
			}
		}
		if !listenersInOrder(ls) {
			t.Fatalf("round %d: listeners made in order are not in order", round)
		}
		index := listenerIndex(&Snapshot{Listeners: ls})
		for port := range 401 {
			for _, k := range []string{strconv.Itoa(port), strconv.Itoa(port) + "/udp", "0" + strconv.Itoa(port), "+" + strconv.Itoa(port)} {
				want, wantFound := index[k]
				got, found := searchListener(ls, k)
				if found != wantFound || found && got != want {
					t.Fatalf("round %d: key %q found %v at %d, want %v at %d", round, k, found, got, wantFound, want)
				}
			}
		}
		for _, k := range []string{"", "/udp", "x", "80/tcp", "-1", "99999999999"} {
			if _, found := searchListener(ls, k); found {
				t.Fatalf("round %d: key %q found", round, k)
			}
		}
		if len(ls) > 1 {
			i := rng.IntN(len(ls) - 1)
			twice := slices.Insert(slices.Clone(ls), i, ls[i])
			swapped := slices.Clone(ls)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			if listenersInOrder(twice) || listenersInOrder(swapped) {
				t.Fatalf("round %d: a key twice or two listeners swapped are in order", round)
			}
		}
	}
}

// TestValidateRefusesAPortTwice: two listeners of one port and transport
// are refused, next to each other or not; a TCP and a UDP listener may
// share a port.
func TestValidateRefusesAPortTwice(t *testing.T) {
	l := func(port int32, proto Protocol) Listener {
		return Listener{Name: fmt.Sprintf("l%d%s", port, proto), Port: port, Protocol: proto}
	}
	for name, ls := range map[string][]Listener{
		"adjacent":  {l(80, ProtocolHTTP), l(80, ProtocolHTTP)},
		"apart":     {l(80, ProtocolHTTP), l(443, ProtocolHTTP), l(80, ProtocolHTTP)},
		"udp twice": {l(53, ProtocolUDP), l(80, ProtocolHTTP), l(53, ProtocolUDP)},
	} {
		if err := Validate(&Snapshot{Scope: SharedPool(), Listeners: ls}); err == nil || !strings.Contains(err.Error(), "is used by another") {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, ls := range map[string][]Listener{
		"in order":     {l(53, ProtocolHTTP), l(53, ProtocolUDP), l(80, ProtocolHTTP)},
		"out of order": {l(80, ProtocolHTTP), l(53, ProtocolUDP), l(53, ProtocolHTTP)},
	} {
		if err := Validate(&Snapshot{Scope: SharedPool(), Listeners: ls}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
