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
	"cmp"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
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
//
// A kind an event came for is not listed whole again either, while the
// events name a few objects: the handler notes each object's key before
// it marks the kind, and the gather makes the last list again with the
// store's object of each key noted (patchList), in a list kept in key
// order. At 10,000 routes listing them again was 240 KB a route change,
// and a walk of the store's map.
type kindLists struct {
	mu    sync.Mutex
	kinds map[reflect.Type]*kindList
}

type kindList struct {
	changed atomic.Bool
	// list is the last gather's []*T (nil: none yet), sorted by
	// namespace and name (byKey).
	list any

	// mu guards noted, the keys events named since a gather last took
	// them, and whole, which says the next gather lists the kind whole
	// (more than maxNotedKeys noted, or no list to patch).
	mu    sync.Mutex
	noted map[string]bool
	whole bool
}

// maxNotedKeys is the most keys a kind's list notes between gathers:
// more (an informer's relist, the first events) and the gather lists the
// kind whole, which then costs less than looking each key up.
const maxNotedKeys = 1024

// note records the key of obj (an event's object, or its tombstone),
// before the event marks the kind.
func (kl *kindList) note(obj any) {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	kl.mu.Lock()
	defer kl.mu.Unlock()
	if kl.whole {
		return
	}
	if err != nil || len(kl.noted) >= maxNotedKeys {
		kl.noted, kl.whole = nil, true
		return
	}
	if kl.noted == nil {
		kl.noted = map[string]bool{}
	}
	kl.noted[key] = true
}

// take is the keys noted since the last take, and whether the kind must
// be listed whole instead; the next events note afresh.
func (kl *kindList) take() (keys map[string]bool, whole bool) {
	kl.mu.Lock()
	defer kl.mu.Unlock()
	keys, whole = kl.noted, kl.whole
	kl.noted, kl.whole = nil, false
	return keys, whole
}

// add starts keeping obj's kind, as changed: call it before the kind's
// event handler is added, and mark the kind in that handler.
func (k *kindLists) add(obj client.Object) *kindList {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kinds == nil {
		k.kinds = map[reflect.Type]*kindList{}
	}
	kl := &kindList{whole: true}
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

// relist has the next gather list the kind whole.
func (kl *kindList) relist() {
	kl.mu.Lock()
	kl.noted, kl.whole = nil, true
	kl.mu.Unlock()
	kl.changed.Store(true)
}

// byKey orders objects by namespace, then name: their store keys' order.
func byKey[T any](a, b *T) int {
	x, y := any(a).(client.Object), any(b).(client.Object)
	return cmp.Or(cmp.Compare(x.GetNamespace(), y.GetNamespace()), cmp.Compare(x.GetName(), y.GetName()))
}

// keyOf is the namespace and name of key, a store key.
func keyOf(key string) (types.NamespacedName, bool) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	return types.NamespacedName{Namespace: ns, Name: name}, err == nil
}

// patchList is last (sorted by byKey) in a new list with, for each of
// keys, the store's object of that key in place of last's, where either
// is: the objects the events named since last was made, looked up, and
// every other object as last has it. It reports false (list the kind
// whole) when a key or an object is not what a store of *T holds.
func patchList[T any](ix toolscache.Indexer, last []*T, keys map[string]bool) ([]*T, bool) {
	names := make([]types.NamespacedName, 0, len(keys))
	for k := range keys {
		n, ok := keyOf(k)
		if !ok {
			return nil, false
		}
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	compare := func(o *T, n types.NamespacedName) int {
		x := any(o).(client.Object)
		return cmp.Or(cmp.Compare(x.GetNamespace(), n.Namespace), cmp.Compare(x.GetName(), n.Name))
	}
	out := make([]*T, 0, len(last)+len(names))
	i := 0 // the next of last's objects to copy
	for _, n := range names {
		at, found := slices.BinarySearchFunc(last[i:], n, compare)
		out = append(out, last[i:i+at]...)
		i += at
		if found {
			i++ // its object now is the store's, if any
		}
		obj, exists, err := ix.GetByKey(toolscache.NewObjectName(n.Namespace, n.Name).String())
		if err != nil {
			return nil, false
		}
		if exists {
			o, ok := obj.(*T)
			if !ok {
				return nil, false
			}
			out = append(out, o)
		}
	}
	return append(out, last[i:]...), true
}
