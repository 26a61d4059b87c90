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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// The listeners of the ListenerSets a dedicated Gateway takes are served by
// its proxies: their ports belong on its Deployment and Service too. The
// translator decides which sets a Gateway takes
// (translator.ListenerSetListeners); this file reads what it needs from the
// API and maps ListenerSet events to their Gateway.

// withListenerSets returns gw with the listeners of the ListenerSets it
// takes appended (a copy; gw itself when it takes none). A cluster without
// the ListenerSet kind has none.
func (r *DedicatedReconciler) withListenerSets(ctx context.Context, gw *gwv1.Gateway) (*gwv1.Gateway, error) {
	if gw.Spec.AllowedListeners == nil {
		return gw, nil
	}
	var sets gwv1.ListenerSetList
	if err := r.Client.List(ctx, &sets); meta.IsNoMatchError(err) {
		return gw, nil
	} else if err != nil {
		return nil, fmt.Errorf("list ListenerSets: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := r.Client.List(ctx, &namespaces); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(namespaces.Items))
	for i := range namespaces.Items {
		nsLabels[namespaces.Items[i].Name] = namespaces.Items[i].Labels
	}
	ptrs := make([]*gwv1.ListenerSet, len(sets.Items))
	for i := range sets.Items {
		ptrs[i] = &sets.Items[i]
	}
	extra := translator.ListenerSetListeners(gw, ptrs, nsLabels)
	if len(extra) == 0 {
		return gw, nil
	}
	out := gw.DeepCopy()
	out.Spec.Listeners = append(out.Spec.Listeners, extra...)
	return out, nil
}

// gatewayOfListenerSet maps a ListenerSet to the Gateway its parentRef
// names.
func gatewayOfListenerSet(_ context.Context, o client.Object) []reconcile.Request {
	ls, ok := o.(*gwv1.ListenerSet)
	if !ok {
		return nil
	}
	ref := ls.Spec.ParentRef
	if string(ptr.Deref(ref.Group, gwv1.GroupName)) != gwv1.GroupName || string(ptr.Deref(ref.Kind, "Gateway")) != "Gateway" {
		return nil
	}
	ns := ls.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: string(ref.Name)}}}
}

// servesListenerSets reports whether the apiserver serves ListenerSet at
// the version Coxswain reads; without it there is nothing to watch.
func servesListenerSets(mapper meta.RESTMapper) bool {
	_, err := mapper.RESTMapping(schema.GroupKind{Group: gwv1.GroupName, Kind: "ListenerSet"}, gwv1.GroupVersion.Version)
	return err == nil
}
