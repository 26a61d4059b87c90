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
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// routeWalk goes through one route kind's desired statuses alongside
// those of the last Result whose routes a round brought in full without
// an error (lastWalk). A route desired as the very list it was desired as
// there, that the informer saw no change of since, is as that round left
// it: settled, without a read or a lookup among the settled statuses. At
// 10,000 routes with one changed, the lookups were most of a round.
type routeWalk struct {
	lastWalk[translator.RouteStatus]
}

// newRouteWalk walks last, the last complete round's statuses of kind,
// with the routes of kind marked in changed.
func newRouteWalk(kind string, last []translator.RouteStatus, changed map[settledKey]struct{}) *routeWalk {
	name := func(r *translator.RouteStatus) types.NamespacedName { return r.NamespacedName }
	return &routeWalk{lastWalk[translator.RouteStatus]{last: last, kind: kind, changed: changedIn(changed, kind, last, name), name: name}}
}

// settled reports whether d, the next desired status, is known to be
// written, forgetting the routes of the last list before it. The very
// RouteState of the last list's next entry is settled without a look at
// either (the translator lists no route without parents): a Memo hands
// unchanged states on, scattered over the heap.
func (r *routeWalk) settled(s *settledStatuses, d *translator.RouteStatus) bool {
	if r.at < len(r.last) && r.last[r.at].RouteState == d.RouteState {
		r.at++
		return !r.changed.has(r.at - 1)
	}
	prev, i := r.next(s, d.NamespacedName)
	return prev != nil && len(d.Parents) > 0 && lists.Same(prev.Parents, d.Parents) && !r.changed.has(i)
}
