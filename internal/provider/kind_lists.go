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

package provider

import (
	"reflect"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindLists keeps, for each kind whose informer has the provider's event
// handler, the list the last gather made of it from the informer's store
// and whether an event came for the kind since. A gather hands over the
// very list again while none did: the store still holds those objects,
// and the translator then knows a kind unchanged by the list alone (at
// 1,000 Gateways, listing them and their VIP Services and checking each
// object again was a tenth of a route change's CPU).
//
// The handler marks the kind before it asks for a rebuild, and after the
// informer stored the object; a gather clears the mark before it lists.
// So an event either comes before the clearing (its object is in the
// list) or marks the kind again (the next gather lists it again).
type kindLists struct {
	mu    sync.Mutex
	kinds map[reflect.Type]*kindList
}

type kindList struct {
	changed atomic.Bool
	// list is the last gather's []*T (nil: none yet).
	list any
}

// add starts keeping obj's kind, as changed: call it before the kind's
// event handler is added, and mark the kind in that handler.
func (k *kindLists) add(obj client.Object) *kindList {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[reflect.Type]*kindList{}
	}
	kl := &kindList{}
	kl.changed.Store(true)
	k.kinds[reflect.TypeOf(obj).Elem()] = kl
	return kl
}

// of is the kept list of kind t (nil when not kept: no handler marks it).
func (k *kindLists) of(t reflect.Type) *kindList {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kinds[t]
}

// gatherReader is the cache a gather reads, with the lists it keeps.
type gatherReader struct {
	client.Reader
	lists *kindLists
}
