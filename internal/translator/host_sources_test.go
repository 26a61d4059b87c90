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
// order, or is the list of the one compiled route of the entries; pruning
// keeps the records of the hosts' lists alone, once they outnumber them.
func TestHostSources(t *testing.T) {
	a, b := &snapshot.Route{ID: "a"}, &snapshot.Route{ID: "b"}
	own := []snapshot.Route{{ID: "c"}}
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
	case !s.made(own, []entry{{route: &own[0], one: own}}):
		t.Error("a compiled route's own list is not made from it")
	case s.made(made[:1], []entry{{route: a, one: []snapshot.Route{*a}}}):
		t.Error("a copy is the compiled route's own list")
	}
	var none *hostSources
	if !none.made(own, []entry{{route: &own[0], one: own}}) || none.made(made, []entry{{route: a}, {route: b}}) {
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
