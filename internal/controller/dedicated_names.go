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

package controller

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
)

// EventNameConflict is the reason of the Warning Event on a Gateway refused
// its dedicated proxies because an older Gateway of its namespace has their
// names.
const EventNameConflict = "NameConflict"

// dedicatedNameConflict decides, as the translator does (see
// provision.DedicatedNameConflicts), whether gw, which asks for dedicated
// proxies, is refused its dedicated object names: it weighs every Gateway of
// gw's namespace that asks for them. nil means gw may have them.
func dedicatedNameConflict(ctx context.Context, r client.Reader, gw *gwv1.Gateway) (*provision.NameConflict, error) {
	var gws gwv1.GatewayList
	if err := r.List(ctx, &gws, client.InNamespace(gw.Namespace)); err != nil {
		return nil, fmt.Errorf("listing Gateways of namespace %s: %w", gw.Namespace, err)
	}
	var classes gwv1.GatewayClassList
	if err := r.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing GatewayClasses: %w", err)
	}
	classByName := make(map[string]*gwv1.GatewayClass, len(classes.Items))
	for i := range classes.Items {
		classByName[classes.Items[i].Name] = &classes.Items[i]
	}
	asking := []*gwv1.Gateway{gw} // first: the caller's copy wins over a stale cache
	for i := range gws.Items {
		g := &gws.Items[i]
		if len(provision.ParamsRefs(g, classByName[string(g.Spec.GatewayClassName)])) > 0 {
			asking = append(asking, g)
		}
	}
	c, ok := provision.DedicatedNameConflicts(asking)[client.ObjectKeyFromObject(gw)]
	if !ok {
		return nil, nil
	}
	return &c, nil
}

// namesakes are the other Gateways of the namespaces of gws whose dedicated
// object names overlap theirs: when one of gws changes class, asks for
// dedicated proxies or goes away, which of them keeps the names may change.
func namesakes(ctx context.Context, r client.Reader, gws ...*gwv1.Gateway) []reconcile.Request {
	var out []reconcile.Request
	listed := map[string][]gwv1.Gateway{}
	for _, gw := range gws {
		if gw == nil {
			continue
		}
		peers, ok := listed[gw.Namespace]
		if !ok {
			// Read only: the cache's own objects, not copies (with 1,000
			// Gateways in a namespace, creating them copied a million).
			var list gwv1.GatewayList
			if err := r.List(ctx, &list, client.InNamespace(gw.Namespace), client.UnsafeDisableDeepCopy); err != nil {
				log.FromContext(ctx).Error(err, "listing Gateways to find namesakes", "namespace", gw.Namespace)
				continue
			}
			peers = list.Items
			listed[gw.Namespace] = peers
		}
		own := provision.DedicatedObjectNames(gw.Name, string(gw.Spec.GatewayClassName))
		for i := range peers {
			p := &peers[i]
			if p.Name == gw.Name {
				continue
			}
			for _, n := range provision.DedicatedObjectNames(p.Name, string(p.Spec.GatewayClassName)) {
				if slices.Contains(own, n) {
					req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}}
					if !slices.Contains(out, req) {
						out = append(out, req)
					}
					break
				}
			}
		}
	}
	return out
}

// withNamesakes adds the namesakes of the requested Gateways to reqs.
func withNamesakes(ctx context.Context, r client.Reader, reqs []reconcile.Request) []reconcile.Request {
	var gws []*gwv1.Gateway
	for _, req := range reqs {
		gw := &gwv1.Gateway{}
		if err := r.Get(ctx, req.NamespacedName, gw); err == nil {
			gws = append(gws, gw)
		}
	}
	for _, req := range namesakes(ctx, r, gws...) {
		if !slices.Contains(reqs, req) {
			reqs = append(reqs, req)
		}
	}
	return reqs
}

// namesakeHandler enqueues the namesakes of a Gateway that was created or
// deleted or whose spec changed (a new class changes its names: the
// namesakes of the old and the new names are both enqueued).
func namesakeHandler(r client.Reader) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var gws []*gwv1.Gateway
		for _, o := range objs {
			if gw, ok := o.(*gwv1.Gateway); ok {
				gws = append(gws, gw)
			}
		}
		for _, req := range namesakes(ctx, r, gws...) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
				enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// DedicatedServiceAccountLookup returns the ServiceAccount a dedicated
// Gateway's proxies must present ({gateway}-{gatewayclass}), read from the
// cache; ok is false for unknown Gateways and for Gateways refused because
// an older Gateway has that name, so one ServiceAccount is never authorised
// for two Gateways' scopes. Discovery's bootstrap server calls it.
func DedicatedServiceAccountLookup(c client.Reader) func(ns, name string) (string, bool) {
	return func(ns, name string) (string, bool) {
		ctx := context.Background()
		gw := &gwv1.Gateway{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
			return "", false
		}
		class := &gwv1.GatewayClass{}
		if err := c.Get(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, class); err != nil {
			return "", false
		}
		params := &gatewayv1alpha1.CoxswainGatewayParametersList{}
		if err := c.List(ctx, params); err != nil {
			return "", false
		}
		if _, dedicated, err := provision.Resolve(gw, class, params.Items); err != nil || !dedicated {
			return "", false
		}
		if conflict, err := dedicatedNameConflict(ctx, c, gw); err != nil || conflict != nil {
			return "", false
		}
		return names.DedicatedName(gw.Name, class.Name), true
	}
}
