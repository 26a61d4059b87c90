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

package translator

import (
	"fmt"
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestHostSources: a list is made from the entries recorded for it, in
// order, or is the list of the one compiled route of the entries (all of
// them, in order, or one); pruning
// keeps the records of the hosts' lists alone, once they outnumber them.
func TestHostSources(t *testing.T) {
	a, b := &snapshot.Route{ID: "a"}, &snapshot.Route{ID: "b"}
	one := &compiledRoute{routes: []snapshot.Route{{ID: "c"}}, keys: make([]precKey, 1)}
	own := one.routes
	two := &compiledRoute{routes: []snapshot.Route{{ID: "d"}, {ID: "e"}}, keys: make([]precKey, 2)}
	made := []snapshot.Route{*a, *b}
	var s hostSources
	s.add(made, []*snapshot.Route{a, b})
	switch {
	case !s.made(made, []entry{{route: a}, {route: b}}):
		t.Error("a list is not made from the routes recorded for it")
	case s.made(made, []entry{{route: b}, {route: a}}):
		t.Error("a list is made from its routes in another order")
	case s.made([]snapshot.Route{*a, *b}, []entry{{route: a}, {route: b}}):
		t.Error("an equal list with no record is made from the routes")
	case !s.made(own, []entry{one.entry(0)}):
		t.Error("a compiled route's own list is not made from it")
	case s.made(made[:1], []entry{{route: a, of: &compiledRoute{routes: []snapshot.Route{*a}}}}):
		t.Error("a copy is the compiled route's own list")
	case !s.made(two.routes, []entry{two.entry(0), two.entry(1)}):
		t.Error("the own list of a compiled route of two entries is not made from them")
	case s.made(two.routes, []entry{two.entry(1), two.entry(0)}) || ownList([]entry{two.entry(1), two.entry(0)}) != nil:
		t.Error("a compiled route's own list is made from its entries in another order")
	case ownList([]entry{two.entry(0)}) == nil || &ownList([]entry{two.entry(1)})[0] != &two.routes[1]:
		t.Error("one entry of a compiled route is not its route as a list of one")
	case ownList([]entry{two.entry(0), one.entry(0)}) != nil || ownList([]entry{two.entry(0), {route: &two.routes[1]}}) != nil:
		t.Error("entries of two compiled routes, or one changed, are a compiled route's own list")
	}
	var none *hostSources
	if !none.made(own, []entry{one.entry(0)}) || none.made(made, []entry{{route: a}, {route: b}}) {
		t.Error("without records, only a compiled route's own list is made from it")
	}

	hosts := []*snapshot.VirtualHost{{Hostname: "kept", Routes: made}}
	for i := range 200 {
		l := []snapshot.Route{{ID: fmt.Sprint(i)}}
		s.add(l, []*snapshot.Route{a})
	}
	s.prune(hosts)
	if len(s.m) != 1 || !s.made(made, []entry{{route: a}, {route: b}}) {
		t.Errorf("pruned to %d records; want the host's alone", len(s.m))
	}
}
