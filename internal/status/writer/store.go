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

package writer

import (
	"context"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/cachestore"
)

// storeReader reads objects straight from the informers' stores: the
// store's own object, not a copy (a round reads every route and Gateway,
// and at 10,000 routes copying each out of the cache was most of a round
// that wrote nothing). Callers must not modify what it returns; a patch
// copies first (oursPatch).
type storeReader struct {
	informers cache.Informers // nil: read through the client
	mu        sync.Mutex
	indexers  map[reflect.Type]toolscache.Indexer
}

// indexer returns the synced store of obj's type, nil when there is none
// (no informer cache, or its informer not synced yet).
func (s *storeReader) indexer(ctx context.Context, obj client.Object) toolscache.Indexer {
	if s.informers == nil {
		return nil
	}
	t := reflect.TypeOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.indexers[t]; ix != nil {
		return ix
	}
	ix := cachestore.Indexer(ctx, s.informers, obj)
	if ix == nil {
		return nil
	}
	if s.indexers == nil {
		s.indexers = map[reflect.Type]toolscache.Indexer{}
	}
	s.indexers[t] = ix
	return ix
}

// cached returns the cached object named key, of newObj's type: the
// store's own when the Writer has its informers (Writer.Informers), else
// newObj filled from the client's cache. ok is false when there is none.
func (w *Writer) cached(ctx context.Context, key types.NamespacedName, newObj client.Object) (obj client.Object, ok bool, err error) {
	return w.reader(ctx, func() client.Object { return newObj }).get(ctx, key)
}

// objectReader reads the cached objects of one type (Writer.cached), its
// store found once for a round's many reads rather than for each.
type objectReader struct {
	w      *Writer
	ix     toolscache.Indexer // nil: read through the client
	typ    reflect.Type
	newObj func() client.Object
}

// reader is the objectReader of newObj's type.
func (w *Writer) reader(ctx context.Context, newObj func() client.Object) objectReader {
	proto := newObj()
	return objectReader{w: w, ix: w.store.indexer(ctx, proto), typ: reflect.TypeOf(proto), newObj: newObj}
}

// get is Writer.cached of key.
func (r objectReader) get(ctx context.Context, key types.NamespacedName) (obj client.Object, ok bool, err error) {
	if r.ix != nil {
		k := key.Name
		if key.Namespace != "" {
			k = key.Namespace + "/" + key.Name
		}
		item, exists, err := r.ix.GetByKey(k)
		if err != nil {
			return nil, false, err
		}
		if !exists {
			return nil, false, nil
		}
		if o, ok := item.(client.Object); ok && reflect.TypeOf(o) == r.typ {
			return o, true, nil
		}
	}
	newObj := r.newObj()
	if err := r.w.Client.Get(ctx, key, newObj, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return newObj, true, nil
}

// list returns every cached object of newObj's type, the stores' own
// (no copies), and false when there is no synced store to read: then the
// caller lists through the client.
func (s *storeReader) list(ctx context.Context, newObj client.Object) ([]client.Object, bool) {
	ix := s.indexer(ctx, newObj)
	if ix == nil {
		return nil, false
	}
	items := ix.List()
	out := make([]client.Object, 0, len(items))
	want := reflect.TypeOf(newObj)
	for _, item := range items {
		o, ok := item.(client.Object)
		if !ok || reflect.TypeOf(o) != want {
			return nil, false
		}
		out = append(out, o)
	}
	return out, true
}
