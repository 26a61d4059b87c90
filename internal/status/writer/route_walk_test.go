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
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestRouteWalkSettlesOnlyTheSameLists: walking a Result's routes
// alongside the last complete round's, a route is settled when its
// desired list is the very list it had and no event marked it; a new
// list, a new route or an event sends it to be read, and the routes the
// last list has and this one lacks (before, between and after the
// desired ones) are forgotten, and only those.
func TestRouteWalkSettlesOnlyTheSameLists(t *testing.T) {
	status := func(name string, parents []gwv1.RouteParentStatus) translator.RouteStatus {
		return translator.RouteStatus{RouteState: &translator.RouteState{NamespacedName: types.NamespacedName{Namespace: "apps", Name: name}, Generation: 1, Parents: parents}}
	}
	parents := func() []gwv1.RouteParentStatus {
		return []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "web"}}}
	}
	last := []translator.RouteStatus{
		status("a", parents()), status("b", parents()), status("c", parents()),
		status("d", parents()), status("e", parents()), status("g", parents()),
	}
	var s settledStatuses
	s.collectForgotten()
	s.begin()
	for _, r := range last {
		s.record(settledKey{"HTTPRoute", r.NamespacedName}, "1", statusDigest{}, parentsID(r.Parents))
	}
	s.end(true, true)

	cur := []translator.RouteStatus{
		status("b", last[1].Parents), // the same list
		status("c", parents()),       // a new list
		status("ca", parents()),      // a new route
		status("e", last[4].Parents), // the same list, but an event marked it
		status("f", parents()),       // a new route
	}
	changed := map[settledKey]struct{}{{"HTTPRoute", cur[3].NamespacedName}: {}}
	walk := newRouteWalk("HTTPRoute", last, changed)
	var settled []string
	for i := range cur {
		if walk.settled(&s, &cur[i]) {
			settled = append(settled, cur[i].Name)
		}
	}
	walk.forgetRest(&s)
	if !slices.Equal(settled, []string{"b"}) {
		t.Errorf("settled %v, want [b]", settled)
	}
	var forgotten []string
	for k := range s.takeForgotten() {
		forgotten = append(forgotten, k.name.Name)
	}
	slices.Sort(forgotten)
	if want := []string{"a", "d", "g"}; !slices.Equal(forgotten, want) {
		t.Errorf("forgot %v, want %v", forgotten, want)
	}
	for _, name := range []string{"b", "c", "e"} {
		if !s.has(settledKey{"HTTPRoute", types.NamespacedName{Namespace: "apps", Name: name}}) {
			t.Errorf("%s, still desired, was forgotten", name)
		}
	}
}

// TestRouteWalkSettlesTheSameStates: a desired status that is the very
// RouteState of the last list's entry it meets is settled without a look
// at it, unless an event marked the route; a new state goes the long way.
func TestRouteWalkSettlesTheSameStates(t *testing.T) {
	status := func(name string) translator.RouteStatus {
		return translator.RouteStatus{RouteState: &translator.RouteState{NamespacedName: types.NamespacedName{Namespace: "apps", Name: name}, Generation: 1,
			Parents: []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "web"}}}}}
	}
	last := []translator.RouteStatus{status("a"), status("b"), status("c"), status("d"), status("e")}
	var s settledStatuses
	s.begin()
	for _, r := range last {
		s.record(settledKey{"HTTPRoute", r.NamespacedName}, "1", statusDigest{}, parentsID(r.Parents))
	}
	s.end(true, true)
	cur := []translator.RouteStatus{last[0], last[1], status("c"), last[3], last[4]}
	walk := newRouteWalk("HTTPRoute", last, map[settledKey]struct{}{{"HTTPRoute", last[3].NamespacedName}: {}})
	var settled []string
	for i := range cur {
		if walk.settled(&s, &cur[i]) {
			settled = append(settled, cur[i].Name)
		}
	}
	if want := []string{"a", "b", "e"}; !slices.Equal(settled, want) {
		t.Errorf("settled %v, want %v", settled, want)
	}
}
