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

// Package cachestore reaches the store behind one of controller-runtime's
// informers, for readers that take the cache's own objects rather than
// copies (the provider's Gather, the status writer's rounds). What it
// returns is shared with the cache: callers must never modify it.
package cachestore

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Indexer returns the store of obj's type in informers once its informer
// has synced; nil when there is none to read: no informers, an informer
// that cannot be had or has not synced, or one that keeps no single store
// (a cache restricted to several namespaces). Callers then read through a
// client instead.
func Indexer(ctx context.Context, informers cache.Informers, obj client.Object) toolscache.Indexer {
	if informers == nil {
		return nil
	}
	inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return nil
	}
	si, ok := inf.(toolscache.SharedIndexInformer)
	if !ok || !si.HasSynced() {
		return nil
	}
	return si.GetIndexer()
}
