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

package pipeline

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// vipInputs is what the VIP pass of an Apply read, and whether it may be
// skipped while none of it changes: the informers saw no Gateway spec
// change and no Service change in the install namespace since it began,
// and a Result asks for the same internal ports. With 1,000 shared
// Gateways, a pass that found every VIP Service as it should be was most
// of the applier's CPU per route change.
//
// A pass that failed, left a refused VIP Service (its retry must run the
// pass), or rendered a Service it renders every time (a pinned ClusterIP,
// ListenerSet listeners) is never skipped; nor is any pass until both
// informers' handlers have been handed every object.
type vipInputs struct {
	mu    sync.Mutex
	regs  []toolscache.ResourceEventHandlerRegistration
	dirty atomic.Bool
	// ports are the internal ports of the last pass that may be skipped
	// again (nil: none).
	ports []portalloc.Assignment
	valid bool
}

// track adds the event handlers to the Gateway and Service informers.
func (v *vipInputs) track(ctx context.Context, informers cache.Informers, installNamespace string) error {
	if informers == nil {
		return nil
	}
	changed := func(any) { v.dirty.Store(true) }
	gateways, err := informers.GetInformer(ctx, &gwv1.Gateway{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	gwReg, err := gateways.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*gwv1.Gateway)
			n, ok2 := newObj.(*gwv1.Gateway)
			// render reads a Gateway's uid and spec (its generation);
			// a status patch (the writer's, every route change) is not
			// a change of what it renders.
			if ok1 && ok2 && o.UID == n.UID && o.Generation == n.Generation &&
				o.DeletionTimestamp.Equal(n.DeletionTimestamp) {
				return
			}
			v.dirty.Store(true)
		},
		DeleteFunc: changed,
	})
	if err != nil {
		return err
	}
	services, err := informers.GetInformer(ctx, &corev1.Service{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	inNamespace := func(obj any) bool {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		o, ok := obj.(client.Object)
		return !ok || o.GetNamespace() == installNamespace
	}
	svcReg, err := services.AddEventHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: inNamespace,
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: changed, UpdateFunc: func(_, obj any) { changed(obj) }, DeleteFunc: changed,
		},
	})
	if err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.regs = []toolscache.ResourceEventHandlerRegistration{gwReg, svcReg}
	return nil
}

// begin starts a pass: it reports whether the pass may be skipped (res
// asks for what the last skippable pass did, and nothing changed since).
// Call it before reading the cache.
func (v *vipInputs) begin(res *translator.Result) (skip bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	synced := len(v.regs) > 0
	for _, r := range v.regs {
		synced = synced && r.HasSynced()
	}
	dirty := v.dirty.Swap(false)
	if !synced || dirty || !v.valid || len(res.ListenerSetListeners) > 0 {
		v.valid = false
		return false
	}
	return slices.Equal(v.ports, res.InternalPorts)
}

// end records a pass that was not skipped: one that may be skipped next
// time when it succeeded and everything it did can be taken as done.
func (v *vipInputs) end(res *translator.Result, skippable bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.valid = skippable
	v.ports = nil
	if skippable {
		v.ports = slices.Clone(res.InternalPorts)
	}
}
