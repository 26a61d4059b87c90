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
	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// routeWalk goes through one route kind's desired statuses alongside
// those of the last Result whose routes a round brought in full without
// an error (both in namespace/name order, as the translator lists them).
// A route desired as the very list it was desired as there, that the
// informer saw no change of since, is as that round left it: settled,
// without a read or a lookup among the settled statuses. What the last
// list has and this one lacks is forgotten, as a sweep would. At 10,000
// routes with one changed, the lookups were most of a round.
type routeWalk struct {
	last    []translator.RouteStatus
	changed map[settledKey]struct{}
	kind    string
}

// settled reports whether d, the next desired status, is known to be
// written, forgetting the routes of the last list before it.
func (r *routeWalk) settled(s *settledStatuses, d *translator.RouteStatus) bool {
	for len(r.last) > 0 && nnBefore(r.last[0].NamespacedName, d.NamespacedName) {
		s.forget(settledKey{r.kind, r.last[0].NamespacedName})
		r.last = r.last[1:]
	}
	if len(r.last) == 0 || r.last[0].NamespacedName != d.NamespacedName {
		return false
	}
	same := len(d.Parents) > 0 && lists.Same(r.last[0].Parents, d.Parents)
	r.last = r.last[1:]
	if !same {
		return false
	}
	if len(r.changed) > 0 {
		if _, ok := r.changed[settledKey{r.kind, d.NamespacedName}]; ok {
			return false
		}
	}
	return true
}

// forgetRest forgets the routes of the last list after the last desired
// one.
func (r *routeWalk) forgetRest(s *settledStatuses) {
	for i := range r.last {
		s.forget(settledKey{r.kind, r.last[i].NamespacedName})
	}
	r.last = nil
}
