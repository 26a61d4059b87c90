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
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestGatherHandsOverUnchangedLists: on a real apiserver and informers, a
// gather hands over the very list of a kind no event came for since the
// last gather, and lists a kind again after any event on it, a status
// update that asks for no rebuild included.
func TestGatherHandsOverUnchangedLists(t *testing.T) {
	run := runProvider(t, nil, nil)
	ctx, c := run.ctx, run.client
	run.next(t)
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: gwv1.GatewaySpec{
		GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}},
	}}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	waitResult(t, run, func(r *translator.Result) bool { return len(r.Gateways) == 1 })

	gather := func() *translator.Resources {
		t.Helper()
		r, err := run.p.Gather(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first, second := gather(), gather()
	if !sameArray(first.Gateways, second.Gateways) || !sameArray(first.GatewayClasses, second.GatewayClasses) {
		t.Fatal("no event came, yet the Gateways or GatewayClasses were listed again")
	}

	// A status update: no rebuild, but the list holds the new object.
	if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Status.Conditions = []metav1.Condition{{Type: "Example", Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := gather()
		if len(r.Gateways) == 1 && r.Gateways[0].ResourceVersion == gw.ResourceVersion {
			if sameArray(r.Gateways, first.Gateways) {
				t.Fatal("a new list in the same array")
			}
			if !sameArray(r.GatewayClasses, first.GatewayClasses) {
				t.Fatal("an event on a Gateway listed the GatewayClasses again")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a Gateway's status update never reached a gather: %d Gateways, resourceVersion %s, want %s", len(r.Gateways), r.Gateways[0].ResourceVersion, gw.ResourceVersion)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A new object of the kind.
	other := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"}, Spec: gw.Spec}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	waitResult(t, run, func(r *translator.Result) bool { return len(r.Gateways) == 2 })
	if r := gather(); len(r.Gateways) != 2 {
		t.Fatalf("%d Gateways gathered after the rebuild that had 2", len(r.Gateways))
	}
}

// sameArray reports whether a and b are the same non-empty list: as long,
// in the same array.
func sameArray[T any](a, b []*T) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// TestPatchListEqualsTheStore drives a real informer store through random
// adds, updates and deletes, with the handler's notes, and checks that
// each gather's list is the store's objects in key order: patched while
// few keys were noted, listed whole after more than maxNotedKeys.
func TestPatchListEqualsTheStore(t *testing.T) {
	ix := toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, toolscache.Indexers{})
	kl := &kindList{whole: true}
	rng := rand.New(rand.NewSource(3))
	rv := 0
	object := func(i int) *gwv1.HTTPRoute {
		rv++
		return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("r-%d", i), ResourceVersion: strconv.Itoa(rv)}}
	}
	for i := 0; i < 500; i++ {
		o := object(i)
		if err := ix.Add(o); err != nil {
			t.Fatal(err)
		}
		kl.note(o)
	}
	gather := func() []*gwv1.HTTPRoute {
		t.Helper()
		keys, whole := kl.take()
		if last, ok := kl.list.([]*gwv1.HTTPRoute); ok && !whole {
			out, ok := patchList(ix, last, keys)
			if !ok {
				t.Fatal("patchList refused a store of HTTPRoutes")
			}
			kl.list = out
			return out
		}
		var out []*gwv1.HTTPRoute
		for _, o := range ix.List() {
			out = append(out, o.(*gwv1.HTTPRoute))
		}
		slices.SortFunc(out, byKey[gwv1.HTTPRoute])
		kl.list = out
		return out
	}
	patched := 0
	for step := 0; step < 300; step++ {
		if !kl.whole {
			patched++
		}
		before, _ := kl.list.([]*gwv1.HTTPRoute)
		got := gather()
		want := make([]*gwv1.HTTPRoute, 0, len(ix.List()))
		for _, o := range ix.List() {
			want = append(want, o.(*gwv1.HTTPRoute))
		}
		slices.SortFunc(want, byKey[gwv1.HTTPRoute])
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: %d objects gathered, not the store's %d in key order", step, len(got), len(want))
		}
		if len(before) > 0 && len(got) > 0 && &before[0] == &got[0] {
			t.Fatalf("step %d: the new list is the last one's array", step)
		}
		n := 1 + rng.Intn(6)
		if step%50 == 49 {
			n = maxNotedKeys + 1 // a relist's worth: listed whole
		}
		for j := 0; j < n; j++ {
			i := rng.Intn(800)
			o := object(i)
			old, exists, _ := ix.Get(o)
			switch {
			case exists && rng.Intn(3) == 0:
				if err := ix.Delete(old); err != nil {
					t.Fatal(err)
				}
				if rng.Intn(2) == 0 {
					kl.note(toolscache.DeletedFinalStateUnknown{Key: o.Namespace + "/" + o.Name, Obj: old})
					continue
				}
			case exists:
				if err := ix.Update(o); err != nil {
					t.Fatal(err)
				}
			default:
				if err := ix.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			kl.note(o)
		}
	}
	if patched < 250 {
		t.Fatalf("only %d of 300 gathers patched the list", patched)
	}
}
