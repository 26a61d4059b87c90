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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// lastApplied is the annotation kubectl apply keeps the whole applied
// object in (client-side apply).
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// CacheOptions are the controller's informer cache settings: objects are
// cached without their managedFields, which nothing reads but the
// dedicated reconciler's check of who applied a Deployment's replicas
// (handOffReplicas). At 10,000 HTTPRoutes the managedFields were a large
// share of the cache. The objects the controller only reads (or writes
// the status of) are also cached without kubectl's last-applied
// annotation (dropLastApplied), EndpointSlices and the Services that are
// only backends keep only what is read of them (leanBackends), and every
// object's strings are canonical copies, shared with the other objects
// that hold equal ones (interned). installNS is where the controller
// runs: it tells its own Services from the others.
func CacheOptions(installNS string) cache.Options {
	return cache.Options{DefaultTransform: interned(leanBackends(installNS, dropLastApplied(stripManagedFields(cache.TransformStripManagedFields()))))}
}

// stripManagedFields is strip for every object but Deployments.
func stripManagedFields(strip toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if _, ok := in.(*appsv1.Deployment); ok {
			return in, nil
		}
		return strip(in)
	}
}

// dropLastApplied is next, then the last-applied annotation removed from
// the kinds the controller never updates: their cached copies are only
// read, and status patches are made from two such copies, so no write
// carries the missing annotation back. An object applied with kubectl
// holds a second copy of itself there (of a Secret, its data); the
// translator reads no such annotation. Kinds the controller updates, or
// may, keep theirs.
func dropLastApplied(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		out, err := next(in)
		if err != nil {
			return out, err
		}
		switch o := out.(type) {
		case *gwv1.Gateway, *gwv1.HTTPRoute, *gwv1.GRPCRoute, *gwv1.TLSRoute, *gwv1.TCPRoute, *gwv1.UDPRoute,
			*gwv1.ListenerSet, *gwv1.BackendTLSPolicy, *gwv1beta1.ReferenceGrant,
			*corev1.Service, *corev1.Secret, *discoveryv1.EndpointSlice, *networkingv1.Ingress:
			if m := o.(interface{ GetAnnotations() map[string]string }).GetAnnotations(); m[lastApplied] != "" {
				delete(m, lastApplied)
			}
		}
		return out, nil
	}
}

// leanBackends is next, then an EndpointSlice, or a Service that is only
// a backend to a controller installed in installNS, cut to what the
// translator reads of it (translator.LeanEndpointSlice,
// translator.LeanBackendService). Nothing updates either from its cached
// copy; what else reads Services (the provisioners, the status of
// Gateways and Ingresses) reads Coxswain's own, which are kept whole.
func leanBackends(installNS string, next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		out, err := next(in)
		if err != nil {
			return out, err
		}
		switch o := out.(type) {
		case *discoveryv1.EndpointSlice:
			translator.LeanEndpointSlice(o)
		case *corev1.Service:
			if translator.ClassifyService(installNS, o) == translator.ServiceBackend {
				translator.LeanBackendService(o)
			}
		}
		return out, nil
	}
}

// interned is next, then the strings of the object made canonical
// (internStrings).
func interned(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		out, err := next(in)
		if err == nil {
			internStrings(out)
		}
		return out, err
	}
}
