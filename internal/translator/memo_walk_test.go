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
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestCarriedWalkEqualsTranslate: sequences of route changes in one
// environment (routes edited, added, removed, moved in the input,
// EndpointSlices churned), each translated by a Memo whose walks start
// from the last ones, equal fresh translations; and the walks did start
// from them.
func TestCarriedWalkEqualsTranslate(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	inputs := map[string]*Resources{"generated": generate(300, 7, 5), "a Service each": generateServices(120, 4, 2, 200)}
	for in, res := range goldenResources(t) {
		inputs[in] = res
	}
	carriedSteps, steps := 0, 0
	for k, in := range slices.Sorted(maps.Keys(inputs)) {
		res := inputs[in]
		v := &versioner{}
		v.stampAll(res)
		memo := memoSteps{m: memoKinds[k%len(memoKinds)].new()} // each kind on half the inputs
		for step := 0; step < 24; step++ {
			if step > 0 {
				res = v.routeChanges(rng, res, step)
			}
			memo.nextWalked(t, fmt.Sprintf("%s step %d", in, step), res)
			if step > 0 && len(res.HTTPRoutes) > 0 {
				steps++
				if memo.m.lastRoutesCarried > 0 {
					carriedSteps++
				}
			}
		}
	}
	t.Logf("walks carried over in %d of %d steps", carriedSteps, steps)
	if carriedSteps < steps/2 {
		t.Fatalf("walks carried over in %d of %d steps: the carry is not doing its job", carriedSteps, steps)
	}
}

// nextWalked is next, with every listener's route list checked against a
// fresh Memo's (a walk's).
func (s *memoSteps) nextWalked(t testing.TB, step string, res *Resources) *Result {
	t.Helper()
	got := s.next(t, step, res)
	fresh := NewMemo()
	fresh.Translate(res)
	if d := diffRouteLists(s.m.routeLists, fresh.routeLists); d != "" {
		t.Fatalf("%s: the listeners' route lists are not a walk's: %s", step, d)
	}
	return got
}

// routeChanges returns a copy of res with one to four random changes to
// its routes or EndpointSlices, which leave the environment as it was.
func (v *versioner) routeChanges(rng *rand.Rand, res *Resources, step int) *Resources {
	next := *res
	for range 1 + rng.Intn(4) {
		switch rng.Intn(6) {
		case 0, 1:
			next.HTTPRoutes = v.changeHTTPRoute(rng, next.HTTPRoutes, step)
		case 2: // two routes swap places in the input
			if n := len(next.HTTPRoutes); n > 1 {
				moved := append(next.HTTPRoutes[:0:0], next.HTTPRoutes...)
				i, j := rng.Intn(n), rng.Intn(n)
				moved[i], moved[j] = moved[j], moved[i]
				next.HTTPRoutes = moved
			}
		case 3: // a route added with a name of its own, first in the input
			if n := len(next.HTTPRoutes); n > 0 && next.HTTPRoutes[n-1] != nil {
				c := next.HTTPRoutes[rng.Intn(n)]
				if c == nil {
					break
				}
				c = c.DeepCopy()
				c.Name = "a-new-" + v.next()
				c.UID = ""
				v.stamp(c)
				next.HTTPRoutes = append([]*gwv1.HTTPRoute{c}, next.HTTPRoutes...)
			}
		case 4:
			next.EndpointSlices = v.churned(rng, next.EndpointSlices, step)
		case 5: // a route re-versioned with its spec unchanged: its status written (as our status writes do), or relabelled
			if n := len(next.HTTPRoutes); n > 0 {
				i := rng.Intn(n)
				if next.HTTPRoutes[i] == nil {
					break
				}
				c := next.HTTPRoutes[i].DeepCopy()
				if rng.Intn(3) == 0 {
					// Relabelled: metadata, which the apiserver
					// versions without a new generation.
					c.Labels = map[string]string{"relabelled": v.next()}
				} else {
					c.Status.Parents = append(c.Status.Parents, gwv1.RouteParentStatus{
						ParentRef: gwv1.ParentReference{Name: "web"}, ControllerName: "example.com/written-" + gwv1.GatewayController(v.next()),
					})
				}
				v.stampStatus(c)
				next.HTTPRoutes = append(next.HTTPRoutes[:0:0], next.HTTPRoutes...)
				next.HTTPRoutes[i] = c
			}
		}
	}
	return &next
}

// TestCarriedWalkDropsRemovedRoutes: a route removed while the walk is
// carried over is gone from the statuses, the listeners' route lists and
// the Memo's entries, and one added back is attached again.
func TestCarriedWalkDropsRemovedRoutes(t *testing.T) {
	res := generate(200, 5, 3)
	m, _ := memoOf(res)
	entries := len(m.routes)
	gone := res.HTTPRoutes[17]
	less := *res
	less.HTTPRoutes = append(append(res.HTTPRoutes[:0:0], res.HTTPRoutes[:17]...), res.HTTPRoutes[18:]...)
	steps := memoSteps{m: m}
	got := steps.nextWalked(t, "a route removed", &less)
	if m.lastRoutesCarried == 0 {
		t.Fatal("the walk was not carried over")
	}
	for _, s := range got.HTTPRoutes {
		if s.NamespacedName == key(&gone.ObjectMeta) {
			t.Fatalf("the removed route %v still has a status", s.NamespacedName)
		}
	}
	if len(m.routes) != entries-1 || len(m.byMeta) != entries-1 {
		t.Fatalf("the Memo has %d entries (%d by object) after a removal from %d", len(m.routes), len(m.byMeta), entries)
	}
	steps.nextWalked(t, "the route back", res)
	if m.lastRoutesCarried == 0 {
		t.Fatal("the walk was not carried over")
	}
	if len(m.routes) != entries {
		t.Fatalf("the Memo has %d entries after the route came back, want %d", len(m.routes), entries)
	}
}

// TestCarryGivesWayToAWalk: a name twice in the input, or more changes
// than maxCarried, are walked.
func TestCarryGivesWayToAWalk(t *testing.T) {
	res := generate(200, 5, 3)
	m, v := memoOf(res)
	steps := memoSteps{m: m}

	twice := *res
	dup := res.HTTPRoutes[3].DeepCopy()
	dup.UID = "another"
	v.stamp(dup)
	twice.HTTPRoutes = append(append(res.HTTPRoutes[:0:0], res.HTTPRoutes...), dup)
	steps.next(t, "a name twice", &twice)
	if m.lastRoutesCarried != 0 {
		t.Fatalf("a name twice: %d routes carried over", m.lastRoutesCarried)
	}

	many := *res
	many.HTTPRoutes = append(res.HTTPRoutes[:0:0], res.HTTPRoutes...)
	for i := range maxCarried + 1 {
		c := many.HTTPRoutes[i].DeepCopy()
		v.stamp(c)
		many.HTTPRoutes[i] = c
	}
	m.Translate(res)
	m.Translate(res) // the last translation's walk had no name twice
	steps.next(t, "many changes", &many)
	if m.lastRoutesCarried != 0 {
		t.Fatalf("%d changes: %d routes carried over", maxCarried+1, m.lastRoutesCarried)
	}
}

// TestMergeTail: attachments appended after a listener's carried list
// move into name order.
func TestMergeTail(t *testing.T) {
	att := func(name string) attachment {
		return attachment{cr: &compiledRoute{meta: &metav1.ObjectMeta{Namespace: "ns", Name: name}}}
	}
	names := func(l []attachment) string {
		var b bytes.Buffer
		for _, a := range l {
			b.WriteString(a.cr.meta.Name)
		}
		return b.String()
	}
	for _, c := range []struct{ head, list, tail, want string }{
		{"", "bdf", "aceg", "abcdefg"},
		{"z", "bdf", "a", "zabdf"},
		{"", "", "ab", "ab"},
		{"", "ac", "", "ac"},
		{"yz", "b", "cd", "yzbcd"},
	} {
		var l []attachment
		for _, s := range c.head + c.list + c.tail {
			l = append(l, att(string(s)))
		}
		mergeTail(l, len(c.head), len(c.head)+len(c.list))
		if got := names(l); got != c.want {
			t.Errorf("mergeTail(%q+%q, %q) = %q, want %q", c.head, c.list, c.tail, got, c.want)
		}
	}
}

// diffRouteLists describes the first difference between two
// translations' listener route lists ("": none): the routes in order,
// with their hosts.
func diffRouteLists(got, want [][]attachment) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d listeners, want %d", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			return fmt.Sprintf("listener %d has %d routes, want %d", i+1, len(got[i]), len(want[i]))
		}
		for j, w := range want[i] {
			g := got[i][j]
			if key(g.cr.meta) != key(w.cr.meta) || !slices.Equal(g.hosts, w.hosts) || g.bits != w.bits {
				return fmt.Sprintf("listener %d route %d is %v %v, want %v %v", i+1, j, key(g.cr.meta), g.hosts, key(w.cr.meta), w.hosts)
			}
		}
	}
	return ""
}

// TestCarriedWalkKeepsItsEntries: when another kind's walk leaves entries
// to sweep, those of a carried walk stay, though it did not visit them.
func TestCarriedWalkKeepsItsEntries(t *testing.T) {
	var res *Resources
	for in, r := range goldenResources(t) {
		if strings.HasSuffix(in, "grpc-and-http-share-service.in.yaml") {
			res = r
		}
	}
	if res == nil || len(res.GRPCRoutes) != 1 || len(res.HTTPRoutes) == 0 {
		t.Fatal("no golden input with one GRPCRoute and HTTPRoutes")
	}
	v := &versioner{}
	v.stampAll(res)
	g1 := res.GRPCRoutes[0]
	g2 := g1.DeepCopy()
	g2.Name, g2.UID = g1.Name+"-two", ""
	v.stamp(g2)
	res.GRPCRoutes = append(res.GRPCRoutes, g2)
	m := NewMemo()
	m.Translate(res)
	m.Translate(res)

	// g2 gone and g1's name twice: the GRPCRoute walk is a walk, and
	// leaves g2's entry to sweep.
	next := *res
	dup := g1.DeepCopy()
	dup.UID = "another"
	v.stamp(dup)
	next.GRPCRoutes = []*gwv1.GRPCRoute{g1, dup}
	(&memoSteps{m: m}).next(t, "a GRPCRoute walked", &next)
	if m.lastRoutesCarried == 0 {
		t.Fatal("the HTTPRoute walk was not carried over")
	}
	for _, r := range next.HTTPRoutes {
		if mr := m.byMeta[&r.ObjectMeta]; mr == nil || m.routes[memoKey{kindHTTPRoute, r.Namespace, r.Name}] != mr {
			t.Fatalf("HTTPRoute %s/%s lost its entry", r.Namespace, r.Name)
		}
	}
	if _, ok := m.routes[memoKey{kindGRPCRoute, g2.Namespace, g2.Name}]; ok {
		t.Fatal("the removed GRPCRoute's entry was not swept")
	}
}

// TestMergeRuns: elements gone are left out, added ones go in before the
// element of their place (and before a gone one there).
func TestMergeRuns(t *testing.T) {
	for _, c := range []struct {
		last, added  string
		gone, places []int
		want         string
		wantAt       []int
	}{
		{"abcd", "", nil, nil, "abcd", nil},
		{"abcd", "", []int{0, 3}, nil, "bc", nil},
		{"bdf", "aceg", nil, []int{0, 1, 2, 3}, "abcdefg", []int{0, 2, 4, 6}},
		{"abc", "B", []int{1}, []int{1}, "aBc", []int{1}},
		{"abc", "xy", []int{2}, []int{3, 3}, "abxy", []int{2, 3}},
		{"", "xy", nil, []int{0, 0}, "xy", []int{0, 1}},
		{"abc", "", []int{0, 1, 2}, nil, "", nil},
	} {
		got, at := mergeRuns(nil, []byte(c.last), c.gone, []byte(c.added), c.places, nil)
		if string(got) != c.want || !slices.Equal(at, c.wantAt) {
			t.Errorf("mergeRuns(%q less %v, %q at %v) = %q %v, want %q %v", c.last, c.gone, c.added, c.places, got, at, c.want, c.wantAt)
		}
	}
}

// FuzzMemoCarry: a Memo translating a sequence of changes, mostly to
// routes and EndpointSlices (so that walks start from the last ones),
// sometimes to anything, equals fresh translations at every step. The
// input is the bytes FuzzTranslate takes and a seed for the changes.
func FuzzMemoCarry(f *testing.F) {
	for i, in := range goldenInputs(f) {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, int64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		if len(data) > 1<<20 {
			return
		}
		inputs := []*Resources{structuredResources(data)}
		if res, err := loadResources(data, false); err == nil {
			inputs = append(inputs, res)
		}
		rng := rand.New(rand.NewSource(seed))
		for k, res := range inputs {
			v := &versioner{}
			v.stampAll(res)
			steps := memoSteps{m: memoKinds[(int(seed)+k)&1].new()}
			for step := 0; step < 8; step++ {
				if step > 0 {
					if rng.Intn(5) == 0 {
						res = v.change(rng, res, step)
					} else {
						res = v.routeChanges(rng, res, step)
					}
				}
				steps.nextWalked(t, fmt.Sprintf("step %d", step), res)
			}
		}
	})
}

// TestScopeSetsFollowABackendMove: a route whose backend moves from a
// Service no other route uses to one no route used, a change that leaves
// the scope as many endpoint sets as before, lists the new set and not
// the old one, as a fresh translation does; and a route change that
// moves no backend lists the scope's sets as the last translation did,
// in the very same list.
func TestScopeSetsFollowABackendMove(t *testing.T) {
	res := generateServices(120, 4, 2, 200)
	m, v := memoOf(res)
	steps := memoSteps{m: m}
	steps.next(t, "first", res)
	names := func(r *Result) []string {
		var out []string
		for _, s := range r.Snapshots {
			for _, es := range s.EndpointSets {
				out = append(out, es.Name)
			}
		}
		return out
	}
	before, beforeOrder := names(steps.last), m.setOrder[snapshot.SharedPool()].names

	next := *res
	next.HTTPRoutes = append(res.HTTPRoutes[:0:0], res.HTTPRoutes...)
	c := res.HTTPRoutes[9].DeepCopy()
	c.Spec.Rules[0].Matches[0].Path.Value = ptr.To("/elsewhere")
	v.stamp(c)
	next.HTTPRoutes[9] = c
	steps.next(t, "a path changed", &next)
	if got := m.setOrder[snapshot.SharedPool()].names; len(got) == 0 || &got[0] != &beforeOrder[0] {
		t.Error("a change that moved no backend made a new list of the scope's sets")
	}

	moved := next
	moved.HTTPRoutes = append(next.HTTPRoutes[:0:0], next.HTTPRoutes...)
	// route-116 (in ns-0) is the only one to use svc-120, its second
	// rule's second backend; no route uses svc-196, in ns-0 too.
	c = next.HTTPRoutes[116].DeepCopy()
	if ref := &c.Spec.Rules[1].BackendRefs[1]; ref.Name != "svc-120" {
		t.Fatalf("route-116's backend is %s", ref.Name)
	}
	c.Spec.Rules[1].BackendRefs[1].Name = "svc-196"
	v.stamp(c)
	moved.HTTPRoutes[116] = c
	after := names(steps.next(t, "a backend moved", &moved))
	if m.lastRoutesCarried == 0 {
		t.Fatal("the walk was not carried over")
	}
	if len(after) != len(before) || slices.Equal(after, before) {
		t.Errorf("sets before the move %d, after %d: want as many, not the same", len(before), len(after))
	}
}

// TestMemoForgetsTheEndpointsOfSetsGone: the Memo keeps the endpoint
// entries of the sets the last translation made, and no others: a set no
// route uses any more is forgotten, whether the walk was carried over or
// not.
func TestMemoForgetsTheEndpointsOfSetsGone(t *testing.T) {
	res := generateServices(120, 4, 2, 200)
	m, _ := memoOf(res)
	sets := func() int {
		n := 0
		for _, s := range m.setLists {
			n += len(s.sets)
		}
		return n
	}
	if len(m.endpoints) != sets() {
		t.Fatalf("%d endpoint entries for %d sets", len(m.endpoints), sets())
	}
	// route-116 is the only one to use svc-120 (TestScopeSetsFollowABackendMove).
	less := *res
	less.HTTPRoutes = append(append(res.HTTPRoutes[:0:0], res.HTTPRoutes[:116]...), res.HTTPRoutes[117:]...)
	steps := memoSteps{m: m}
	steps.next(t, "route-116 removed", &less)
	if m.lastRoutesCarried == 0 {
		t.Fatal("the walk was not carried over")
	}
	if _, ok := m.endpoints["ns-0/svc-120:80"]; ok || len(m.endpoints) != sets() {
		t.Errorf("after the only route to svc-120 went: %d endpoint entries for %d sets (svc-120's kept: %v)", len(m.endpoints), sets(), ok)
	}
}

// TestSetListKeepsItsEntries: with a Service per route, a route change
// that keeps the scope's sets lists them with the Memo entry each was
// remade from, in their places (from the second change on), and the next
// such change hands that list of entries on as it is (eachSetWithLast
// finds the sets through it, by position). A change to one set's slices
// gives a translation equal to a fresh one.
func TestSetListKeepsItsEntries(t *testing.T) {
	res := generateScale(40)
	m, v := memoOf(res)
	steps := memoSteps{m: m}
	change := pathChanges(&res, v)
	pool := func() setList { return m.setLists[snapshot.SharedPool()] }
	var ends []*memoEndpoints
	for step, path := range []string{"/a", "/b", "/c", "/d"} {
		steps.next(t, "route 7 "+path, change(7, path))
		l := pool()
		if step == 0 {
			continue // the first change after a full translation remakes no set
		}
		if len(l.sets) != 40 || len(l.ends) != len(l.sets) {
			t.Fatalf("step %d: %d sets with %d entries; want 40 of each", step, len(l.sets), len(l.ends))
		}
		remade := 0
		for i, e := range l.ends {
			if e != nil {
				remade++
				if m.endpoints[l.sets[i].Name] != e {
					t.Fatalf("step %d: set %s listed with another's entry", step, l.sets[i].Name)
				}
			}
		}
		if remade < 39 {
			t.Fatalf("step %d: %d of 40 sets listed with their entry; want all but the changed route's", step, remade)
		}
		if step == 3 && &l.ends[0] != &ends[0] {
			t.Error("an unchanged list of entries was made anew")
		}
		ends = l.ends
	}
	next := *res
	next.EndpointSlices = slices.Clone(res.EndpointSlices)
	sl := res.EndpointSlices[3].DeepCopy()
	sl.Endpoints[0].Addresses = []string{"10.99.0.1"}
	v.stamp(sl)
	next.EndpointSlices[3] = sl
	steps.next(t, "one slice changed", &next)
	steps.next(t, "route 9 changed after it", change(9, "/d"))
}

// TestRemadeSetIsTheOneListed: once a route change has listed the sets it
// remade, the next one remakes each as the very set the list holds; and a
// GRPCRoute that upgrades such a set to h2c changes a copy, not the set
// the last translation's snapshot holds.
func TestRemadeSetIsTheOneListed(t *testing.T) {
	res := generateScale(40)
	m, v := memoOf(res)
	steps := memoSteps{m: m}
	change := pathChanges(&res, v)
	pool := func() setList { return m.setLists[snapshot.SharedPool()] }
	for step, path := range []string{"/a", "/b", "/c"} {
		steps.next(t, "route 7 "+path, change(7, path))
		if step < 2 {
			continue // the first change remakes no set, the second lists those it remade
		}
		l, listed := pool(), 0
		for i, e := range l.ends {
			if e != nil && e.remade == l.sets[i] {
				listed++
			}
		}
		if listed < 39 {
			t.Fatalf("step %d: %d of 40 sets remade as the set listed; want all but the changed route's", step, listed)
		}
	}

	// A GRPCRoute on Service pre-5, whose set the last snapshot holds.
	last := steps.last
	setOf := func(r *Result, name string) *snapshot.EndpointSet {
		for _, s := range r.Snapshots {
			for _, es := range s.EndpointSets {
				if es.Name == name {
					return es
				}
			}
		}
		return nil
	}
	name := setKey{"ns-0", "pre-5", 80, false}.setName()
	was := setOf(last, name)
	if was == nil || was.AppProtocol != snapshot.AppProtocolHTTP {
		t.Fatalf("set %s is %+v in the last snapshot; want http", name, was)
	}
	g := &gwv1.GRPCRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: "grpc-5", Generation: 1},
		Spec: gwv1.GRPCRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw-0", Namespace: ptr.To(gwv1.Namespace("infra"))}}},
			Hostnames:       []gwv1.Hostname{"grpc-5.example.com"},
			Rules: []gwv1.GRPCRouteRule{{BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Name: "pre-5", Port: ptr.To(gwv1.PortNumber(80))}}}}}},
		}}
	v.stamp(g)
	next := *res
	next.GRPCRoutes = []*gwv1.GRPCRoute{g}
	got := steps.next(t, "a GRPCRoute on pre-5", &next)
	if es := setOf(got, name); es == nil || es.AppProtocol != snapshot.AppProtocolH2C {
		t.Fatalf("set %s is %+v with the GRPCRoute; want h2c", name, es)
	}
	if was.AppProtocol != snapshot.AppProtocolHTTP {
		t.Fatal("the h2c upgrade changed the set the last snapshot holds")
	}
}

// pathChanges returns a func that gives route i of *res the path path in
// its second rule, in a copy of *res (route i a new version of it), and
// makes that copy *res.
func pathChanges(res **Resources, v *versioner) func(i int, path string) *Resources {
	return func(i int, path string) *Resources {
		next := **res
		next.HTTPRoutes = slices.Clone(next.HTTPRoutes)
		r := next.HTTPRoutes[i].DeepCopy()
		r.Generation++
		r.Spec.Rules[1].Matches[0].Path.Value = ptr.To(path)
		v.stamp(r)
		next.HTTPRoutes[i] = r
		*res = &next
		return *res
	}
}
