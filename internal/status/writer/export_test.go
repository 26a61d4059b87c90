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

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangesTracked reports whether w tracks the changes of kind in full.
func ChangesTracked(w *Writer, kind string) bool {
	c := changesOf(w, kind)
	c.mu.Lock()
	defer c.mu.Unlock()
	reg := c.regs[kind]
	return reg != nil && reg.HasSynced()
}

// ChangePending reports whether an event on the object of kind named key
// waits for w's next round.
func ChangePending(w *Writer, kind string, key types.NamespacedName) bool {
	c := changesOf(w, kind)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[settledKey{kind, key}]
	return ok
}

// changesOf is where w collects the changes of kind.
func changesOf(w *Writer, kind string) *routeChanges {
	if kind == "Gateway" {
		return &w.gatewayChanges
	}
	return &w.changes
}

// LastUnread is how many routes w's last route walk settled without
// reading them.
func LastUnread(w *Writer) int { return int(w.unread.Load()) }

// SweptFully reports whether w's next stale sweep of kind looks only at
// what changed or was forgotten since its last full one.
func SweptFully(w *Writer, kind string) bool { return w.sweptFully[kind] }

// SkippedRouteRounds is how many of w's rounds skipped the routes, their
// lists the very ones of the Result written before.
func SkippedRouteRounds(w *Writer) int64 { return w.skippedRouteRounds.Load() }

// SkippedClassReads is how many times w found a GatewayClass's status
// settled by its stamp, without comparing it.
func SkippedClassReads(w *Writer) int64 { return w.skippedClassReads.Load() }

// PatchStatus is w's status patch of obj from orig.
func PatchStatus(ctx context.Context, w *Writer, obj, orig client.Object) error {
	return w.patchStatus(ctx, obj, orig)
}
