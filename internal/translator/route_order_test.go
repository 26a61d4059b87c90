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
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestSortNamedWhateverTheRanks checks that sortNamed gives the order a
// plain sort does, with ranks that are right, stale, shuffled, repeated or
// absent, and names that repeat.
func TestSortNamedWhateverTheRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type route struct{}
	for round := range 300 {
		n := rng.IntN(400)
		metas := make([]*metav1.ObjectMeta, n)
		for i := range metas {
			metas[i] = &metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", rng.IntN(5)), Name: fmt.Sprintf("r%03d", rng.IntN(n+1))}
		}
		in := make([]namedRoute[route], n)
		for i, m := range metas {
			in[i] = namedRoute[route]{meta: m, at: i}
		}
		want := slices.Clone(in)
		slices.SortFunc(want, compareNamed)
		// Right ranks for most, as the Memo gives them.
		rankOf := map[*metav1.ObjectMeta]int{}
		for i, w := range want {
			rankOf[w.meta] = i
		}
		for i := range in {
			switch mode := rng.IntN(10); {
			case mode == 0: // no entry
			case mode == 1 && round%3 == 0: // a wrong one
				in[i].kept = &memoRoute{rank: rng.IntN(2*n + 1)}
			default:
				in[i].kept = &memoRoute{rank: rankOf[in[i].meta]}
			}
		}
		if round%3 == 1 && n > 1 {
			// Two ranks swapped: stale, and colliding with no other.
			i, j := rng.IntN(n), rng.IntN(n)
			if in[i].kept != nil && in[j].kept != nil {
				in[i].kept.rank, in[j].kept.rank = in[j].kept.rank, in[i].kept.rank
			}
		}
		got := sortNamed(slices.Clone(in))
		if len(got) != len(want) {
			t.Fatalf("round %d: %d routes, want %d", round, len(got), len(want))
		}
		for i := range want {
			if got[i].meta != want[i].meta || got[i].at != want[i].at {
				t.Fatalf("round %d: position %d is %s/%s@%d, want %s/%s@%d", round, i,
					got[i].meta.Namespace, got[i].meta.Name, got[i].at, want[i].meta.Namespace, want[i].meta.Name, want[i].at)
			}
		}
	}
}

// TestSortedHostsWhateverTheHint checks that sortedHosts lists every host
// once, in order, with a hint that is right, stale (hosts gone, hosts
// new), out of order or repeated.
func TestSortedHostsWhateverTheHint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 300 {
		vhosts := map[string]*vhostBuilder{}
		for range rng.IntN(200) {
			h := fmt.Sprintf("h%03d.example.com", rng.IntN(300))
			vhosts[h] = &vhostBuilder{host: h}
		}
		var hint []string
		for range rng.IntN(200) {
			hint = append(hint, fmt.Sprintf("h%03d.example.com", rng.IntN(300)))
		}
		if round%2 == 0 {
			slices.Sort(hint) // as the Memo keeps them
		}
		want := make([]string, 0, len(vhosts))
		for h := range vhosts {
			want = append(want, h)
		}
		slices.Sort(want)
		if got := sortedHosts(vhosts, hint); !slices.Equal(got, want) {
			t.Fatalf("round %d: got %v, want %v", round, got, want)
		}
	}
}

// TestSortedHostsKeepAnUnchangedHint: hosts that are the hint's, in
// order, are listed as the hint itself, without an allocation; a hint
// with one host more or less, or out of order, is not.
func TestSortedHostsKeepAnUnchangedHint(t *testing.T) {
	hint := []string{"a.example.com", "b.example.com", "c.example.com"}
	vhosts := func(hosts ...string) map[string]*vhostBuilder {
		m := map[string]*vhostBuilder{}
		for _, h := range hosts {
			m[h] = &vhostBuilder{host: h}
		}
		return m
	}
	same := vhosts(hint...)
	if got := sortedHosts(same, hint); &got[0] != &hint[0] || len(got) != len(hint) {
		t.Errorf("the hint's hosts gave a new list %v", got)
	}
	if allocs := testing.AllocsPerRun(10, func() {
		for _, vb := range same {
			vb.listed = false
		}
		sortedHosts(same, hint)
	}); allocs != 0 {
		t.Errorf("listing the hint's hosts allocated %v times", allocs)
	}
	for _, c := range []struct {
		hosts []string
		hint  []string
	}{
		{hosts: hint[:2], hint: hint},
		{hosts: append(slices.Clone(hint), "d.example.com"), hint: hint},
		{hosts: hint, hint: []string{hint[1], hint[0], hint[2]}},
		{hosts: hint, hint: []string{hint[0], hint[1], hint[1], hint[2]}},
	} {
		got := sortedHosts(vhosts(c.hosts...), c.hint)
		want := slices.Sorted(slices.Values(c.hosts))
		if !slices.Equal(got, want) || &got[0] == &c.hint[0] {
			t.Errorf("hosts %v, hint %v: got %v (the hint: %v)", c.hosts, c.hint, got, &got[0] == &c.hint[0])
		}
	}
}

// TestSortStableByNameLeavesSortedListsAlone checks that statuses already
// in name order are checked without an allocation (a compare that took
// its arguments' addresses once moved every one to the heap: 1.3 MB a
// translation at 10,000 routes) and that others are sorted stably.
func TestSortStableByNameLeavesSortedListsAlone(t *testing.T) {
	sorted := make([]RouteStatus, 100)
	for i := range sorted {
		sorted[i].RouteState = &RouteState{NamespacedName: nn{Namespace: fmt.Sprintf("ns%d", i/10), Name: fmt.Sprintf("r%02d", i%10)}}
	}
	name := func(r RouteStatus) nn { return r.NamespacedName }
	if allocs := testing.AllocsPerRun(10, func() { sortStableByName(sorted, name) }); allocs != 0 {
		t.Errorf("checking a sorted list allocated %v times", allocs)
	}
	shuffled := make([]RouteStatus, len(sorted))
	for i := range shuffled {
		shuffled[i].RouteState = &RouteState{NamespacedName: sorted[i].NamespacedName, Generation: int64(i % 2)} // tells equal names apart
	}
	shuffled = append(shuffled, RouteStatus{&RouteState{NamespacedName: shuffled[0].NamespacedName, Generation: 7}})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled)-1, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	want := slices.Clone(shuffled)
	slices.SortStableFunc(want, func(a, b RouteStatus) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	sortStableByName(shuffled, name)
	if !slices.EqualFunc(shuffled, want, func(a, b RouteStatus) bool {
		return a.NamespacedName == b.NamespacedName && a.Generation == b.Generation
	}) {
		t.Errorf("sorted %v, want %v", shuffled, want)
	}
}

// TestOrderedListenersWhateverTheHint: orderedListeners lists every
// listener once, in snapshot.CompareListeners order, with keys to match,
// whatever the hint (right, stale, out of order, repeated); and with the
// right hint its keys are the hint itself.
func TestOrderedListenersWhateverTheHint(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 300 {
		sb := &scopeBuilder{listeners: map[string]*listenerBuilder{}}
		for range rng.IntN(60) {
			l := snapshot.Listener{Port: int32(1 + rng.IntN(80)), Protocol: snapshot.ProtocolHTTP}
			if rng.IntN(4) == 0 {
				l.Protocol = snapshot.ProtocolUDP
			}
			sb.listeners[snapshot.ListenerKey(&l)] = &listenerBuilder{l: l}
		}
		want := slices.SortedFunc(maps.Values(sb.listeners), func(a, b *listenerBuilder) int { return snapshot.CompareListeners(&a.l, &b.l) })
		var hint []string
		switch round % 3 {
		case 0: // right
			for _, lb := range want {
				hint = append(hint, lb.keyOf())
			}
		case 1: // stale and repeated, in order
			for _, lb := range want {
				if rng.IntN(3) > 0 {
					hint = append(hint, lb.keyOf())
				}
				if rng.IntN(5) == 0 {
					hint = append(hint, lb.keyOf(), "999")
				}
			}
		case 2: // out of order
			for range rng.IntN(60) {
				l := snapshot.Listener{Port: int32(1 + rng.IntN(80))}
				hint = append(hint, snapshot.ListenerKey(&l))
			}
		}
		got, keys := sb.orderedListeners(hint)
		if !slices.Equal(got, want) || len(keys) != len(got) {
			t.Fatalf("round %d: %d listeners, %d keys, want %d in order", round, len(got), len(keys), len(want))
		}
		for i, lb := range got {
			if keys[i] != lb.keyOf() {
				t.Fatalf("round %d: key %d is %q, its listener's %q", round, i, keys[i], lb.keyOf())
			}
		}
		if round%3 == 0 && len(hint) > 0 && &keys[0] != &hint[0] {
			t.Fatalf("round %d: the right hint gave new keys", round)
		}
	}
}

// TestSortEntriesWhateverTheCount: a compiled route's entries, few (sorted
// in place) or many, end in precedence order with each route beside its
// entry.
func TestSortEntriesWhateverTheCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	meta := &metav1.ObjectMeta{Namespace: "ns", Name: "r"}
	for round := range 200 {
		n := rng.IntN(24)
		cr := &compiledRoute{kind: kindHTTPRoute, meta: meta}
		cr.reserve(n)
		for i := range n {
			path := "/" + fmt.Sprint(rng.IntN(1000))
			typ := []snapshot.PathMatchType{snapshot.PathExact, snapshot.PathPrefix, snapshot.PathRegularExpression}[rng.IntN(3)]
			cr.addEntry(snapshot.Route{ID: fmt.Sprint(i), Match: snapshot.Match{Path: &snapshot.PathMatch{Type: typ, Value: path}}}, i/3, i%3)
		}
		cr.sortEntries()
		for i := range cr.keys {
			if id := fmt.Sprint(cr.keys[i].rule*3 + cr.keys[i].match); cr.routes[i].ID != id {
				t.Fatalf("round %d: entry %d (rule %d, match %d) has route %s", round, i, cr.keys[i].rule, cr.keys[i].match, cr.routes[i].ID)
			}
			if i > 0 && cr.keys[i-1].compare(&cr.keys[i]) >= 0 {
				t.Fatalf("round %d: %d entries not in precedence order at %d", round, n, i)
			}
		}
	}
}
