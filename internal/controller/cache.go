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
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheOptions are the controller's informer cache settings: objects are
// cached without their managedFields, which nothing reads but the
// dedicated reconciler's check of who applied a Deployment's replicas
// (handOffReplicas). At 10,000 HTTPRoutes the managedFields were a large
// share of the cache.
func CacheOptions() cache.Options {
	return cache.Options{DefaultTransform: stripManagedFields(cache.TransformStripManagedFields())}
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
