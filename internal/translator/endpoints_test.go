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
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math/rand"
	"os"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// TestRefreshEndpointsEqualsTranslate: over random sequences of
// EndpointSlice changes to every golden input, refreshing the previous
// Result's endpoints gives what a full translation gives, and leaves the
// previous Result as it was.
func TestRefreshEndpointsEqualsTranslate(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	for in, res := range goldenResources(t) {
		// Half the inputs with their slices in key order, as the provider
		// gathers them: refreshes then compare the slices and list again
		// the changed Services' sets alone.
		sorted := rng.Intn(2) == 0
		if sorted {
			sortSlices(res.EndpointSlices)
		}
		prev := Translate(res)
		for step := 0; step < 12; step++ {
			next := *res
			next.EndpointSlices = churnSlices(rng, res.EndpointSlices, step)
			if sorted {
				sortSlices(next.EndpointSlices)
			}
			before := mustJSON(t, prev)
			got, ok := RefreshEndpoints(prev, &next)
			if !ok {
				t.Fatalf("%s step %d: RefreshEndpoints refused a Result of Translate", in, step)
			}
			if !bytes.Equal(before, mustJSON(t, prev)) {
				t.Fatalf("%s step %d: RefreshEndpoints changed the previous Result", in, step)
			}
			want := Translate(&next)
			if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
				t.Fatalf("%s step %d: refreshed and translated Results differ:\n%s", in, step, firstDifference(w, g))
			}
			for i, s := range got.Snapshots {
				if i < len(prev.Snapshots) && s != prev.Snapshots[i] && bytes.Equal(mustJSON(t, s), mustJSON(t, prev.Snapshots[i])) {
					t.Fatalf("%s step %d: snapshot %s was copied though its endpoints did not change", in, step, s.Scope)
				}
			}
			res, prev = &next, got
		}
	}
}

// TestRefreshEndpointsOfChangedServices: with slices in key order, as the
// provider gathers them, and a few of them changed at each step (the
// others the same objects), refreshing lists again only the changed
// Services' sets and still gives what a full translation gives. Random
// steps add, remove, relabel, renumber and turn slices ready or not.
func TestRefreshEndpointsOfChangedServices(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	res := generate(400, 5, 1)
	sortSlices(res.EndpointSlices)
	prev := NewMemo().Translate(res)
	for step := 0; step < 60; step++ {
		next := *res
		next.EndpointSlices = changeSomeSlices(rng, res.EndpointSlices, step)
		want := Translate(&next)
		if step%5 == 4 {
			// An unsorted list is compared as a whole.
			next.EndpointSlices = slices.Clone(next.EndpointSlices)
			rng.Shuffle(len(next.EndpointSlices), func(i, j int) {
				next.EndpointSlices[i], next.EndpointSlices[j] = next.EndpointSlices[j], next.EndpointSlices[i]
			})
		}
		before := mustJSON(t, prev)
		got, ok := RefreshEndpoints(prev, &next)
		if !ok {
			t.Fatalf("step %d: refused", step)
		}
		if !bytes.Equal(before, mustJSON(t, prev)) {
			t.Fatalf("step %d: RefreshEndpoints changed the previous Result", step)
		}
		if g, w := mustJSON(t, got), mustJSON(t, want); !bytes.Equal(g, w) {
			t.Fatalf("step %d: refreshed and translated Results differ:\n%s", step, firstDifference(w, g))
		}
		if step%3 == 0 {
			// A second refresh from prev, whose slice index the first
			// took: another change.
			other := *res
			other.EndpointSlices = changeSomeSlices(rng, res.EndpointSlices, step+1000)
			branch, ok := RefreshEndpoints(prev, &other)
			if !ok {
				t.Fatalf("step %d: the second refresh was refused", step)
			}
			if g, w := mustJSON(t, branch), mustJSON(t, Translate(&other)); !bytes.Equal(g, w) {
				t.Fatalf("step %d: a second refresh from one Result differs from a translation:\n%s", step, firstDifference(w, g))
			}
		}
		res, prev = &next, got
	}
}

// TestSliceIndexIsHandedOnOnce: a refresh from a Result whose slice index
// a refresh took already (it now indexes that refresh's slices) does not
// use it. Two refreshes from one Result each add a slice to the same
// Service; the second must not list the first's endpoint.
func TestSliceIndexIsHandedOnOnce(t *testing.T) {
	res := generate(40, 2, 1)
	sortSlices(res.EndpointSlices)
	prev := NewMemo().Translate(res)
	// The first refresh builds the index (a change elsewhere).
	first := *res
	first.EndpointSlices = slices.Clone(res.EndpointSlices)
	c := first.EndpointSlices[0].DeepCopy()
	c.Endpoints = append(c.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.99.0.9"}})
	first.EndpointSlices[0] = c
	base, ok := RefreshEndpoints(prev, &first)
	if !ok || base.sliceIndex == nil {
		t.Fatal("the first refresh made no slice index")
	}
	addTo := func(from *Resources, name, addr string) *Resources {
		next := *from
		s := from.EndpointSlices[3].DeepCopy()
		s.Name += name
		s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{addr}}}
		next.EndpointSlices = append(slices.Clone(from.EndpointSlices), s)
		sortSlices(next.EndpointSlices)
		return &next
	}
	one, two := addTo(&first, "-one", "10.77.0.1"), addTo(&first, "-two", "10.77.0.2")
	for _, in := range []*Resources{one, two} {
		got, ok := RefreshEndpoints(base, in)
		if !ok {
			t.Fatal("refused")
		}
		if g, w := mustJSON(t, got), mustJSON(t, Translate(in)); !bytes.Equal(g, w) {
			t.Fatalf("refreshed and translated Results differ:\n%s", firstDifference(w, g))
		}
	}
}

// changeSomeSlices is in (in key order, never modified) with one to
// three slices changed, added or removed, in key order again.
func changeSomeSlices(rng *rand.Rand, in []*discoveryv1.EndpointSlice, step int) []*discoveryv1.EndpointSlice {
	out := slices.Clone(in)
	if !inKeyOrder(out) {
		sortSlices(out)
	}
	for range 1 + rng.Intn(3) {
		k := rng.Intn(len(out))
		c := out[k].DeepCopy()
		switch rng.Intn(6) {
		case 0: // toggle readiness
			toggleReady(c)
		case 1: // a new address
			c.Endpoints = append(c.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.200.%d.%d", step%250, rng.Intn(250)+1)}})
		case 2: // remove the slice
			if len(out) > 1 {
				out = slices.Delete(out, k, k+1)
				continue
			}
		case 3: // a second slice of the same Service
			c.Name += fmt.Sprintf("-split%d", step)
			for i := range c.Endpoints {
				c.Endpoints[i].Addresses = []string{fmt.Sprintf("10.201.%d.%d", step%250, i+1)}
			}
			out = append(out, c)
			sortSlices(out)
			continue
		case 4: // move to another Service
			c.Labels = maps.Clone(c.Labels)
			c.Labels[discoveryv1.LabelServiceName] = fmt.Sprintf("svc-%d", rng.Intn(81))
		case 5: // the same object again, as a relist: nothing changes
			continue
		}
		out[k] = c
	}
	return out
}

// toggleReady turns each endpoint of c ready or not, the other way.
func toggleReady(c *discoveryv1.EndpointSlice) {
	for i := range c.Endpoints {
		ready := c.Endpoints[i].Conditions.Ready == nil || *c.Endpoints[i].Conditions.Ready
		c.Endpoints[i].Conditions.Ready = ptr.To(!ready)
	}
}

func sortSlices(in []*discoveryv1.EndpointSlice) {
	slices.SortFunc(in, compareSlices)
}

// TestChangedServices: the Services of the slices added, removed or
// replaced, and none when the lists are not in key order.
func TestChangedServices(t *testing.T) {
	sl := func(ns, name, svc string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{}
		s.Namespace, s.Name = ns, name
		s.Labels = map[string]string{discoveryv1.LabelServiceName: svc}
		return s
	}
	svc := func(ns, name string) nn { return nn{Namespace: ns, Name: name} }
	a, b, c, d := sl("a", "1", "x"), sl("a", "2", "y"), sl("b", "1", "z"), sl("b", "2", "z")
	b2 := sl("a", "2", "w")
	for _, tc := range []struct {
		name       string
		last, next []*discoveryv1.EndpointSlice
		want       []nn // nil: every Service
		sorted     bool
	}{
		{"same", []*discoveryv1.EndpointSlice{a, b, c}, []*discoveryv1.EndpointSlice{a, b, c}, []nn{}, true},
		{"replaced", []*discoveryv1.EndpointSlice{a, b, c}, []*discoveryv1.EndpointSlice{a, b2, c}, []nn{svc("a", "y"), svc("a", "w")}, true},
		{"added", []*discoveryv1.EndpointSlice{a, c}, []*discoveryv1.EndpointSlice{a, b, c, d}, []nn{svc("a", "y"), svc("b", "z")}, true},
		{"removed", []*discoveryv1.EndpointSlice{a, b, c, d}, []*discoveryv1.EndpointSlice{b, d}, []nn{svc("a", "x"), svc("b", "z")}, true},
		{"emptied", []*discoveryv1.EndpointSlice{a, b}, nil, []nn{svc("a", "x"), svc("a", "y")}, true},
		{"next unsorted", []*discoveryv1.EndpointSlice{a, b, c}, []*discoveryv1.EndpointSlice{b, a, c}, nil, false},
		{"new out of order", []*discoveryv1.EndpointSlice{a, c}, []*discoveryv1.EndpointSlice{a, c, b}, nil, false},
		{"last unsorted", []*discoveryv1.EndpointSlice{c, a}, []*discoveryv1.EndpointSlice{a, c}, nil, true},
		{"repeat", []*discoveryv1.EndpointSlice{a, c}, []*discoveryv1.EndpointSlice{a, b, b, c}, nil, false},
		{"nil", []*discoveryv1.EndpointSlice{a, c}, []*discoveryv1.EndpointSlice{a, nil, c}, nil, false},
	} {
		d, sorted := changedServices(tc.last, tc.next, 0)
		got := d.changed
		if sorted != tc.sorted {
			t.Errorf("%s: sorted %v, want %v", tc.name, sorted, tc.sorted)
		}
		if (got == nil) != (tc.want == nil) {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
			continue
		}
		want := map[nn]bool{}
		for _, s := range tc.want {
			want[s] = true
		}
		if got != nil && !maps.Equal(got, want) {
			t.Errorf("%s: changed %v, want %v", tc.name, got, want)
		}
	}
}

func TestRefreshEndpointsNeedsATranslatedResult(t *testing.T) {
	if _, ok := RefreshEndpoints(nil, &Resources{}); ok {
		t.Fatal("refreshed a nil Result")
	}
	if _, ok := RefreshEndpoints(&Result{}, nil); ok {
		t.Fatal("refreshed from nil Resources")
	}
}

// goldenResources yields every golden input, loaded leniently, by file.
func goldenResources(t *testing.T) iter.Seq2[string, *Resources] {
	return func(yield func(string, *Resources) bool) {
		for _, in := range goldenInputs(t) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			res, err := loadResources(data, false)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if !yield(in, res) {
				return
			}
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// churnSlices returns a changed copy of slices (never modifying them):
// endpoints turned ready or not, removed or added, ports renumbered,
// slices removed, split or moved to another Service.
func churnSlices(rng *rand.Rand, in []*discoveryv1.EndpointSlice, step int) []*discoveryv1.EndpointSlice {
	out := make([]*discoveryv1.EndpointSlice, 0, len(in)+1)
	for _, s := range in {
		if s == nil {
			continue
		}
		c := s.DeepCopy()
		switch rng.Intn(8) {
		case 0: // toggle readiness
			toggleReady(c)
		case 1: // drop an endpoint
			if len(c.Endpoints) > 0 {
				c.Endpoints = c.Endpoints[1:]
			}
		case 2: // add one
			c.Endpoints = append(c.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.200.%d.%d", step, rng.Intn(250)+1)}})
		case 3: // renumber the ports
			for i := range c.Ports {
				if c.Ports[i].Port != nil {
					c.Ports[i].Port = ptr.To(*c.Ports[i].Port + 1)
				}
			}
		case 4: // remove the slice
			continue
		case 5: // split: a second slice of the same Service
			d := c.DeepCopy()
			d.Name += fmt.Sprintf("-split%d", step)
			for i := range d.Endpoints {
				d.Endpoints[i].Addresses = []string{fmt.Sprintf("10.201.%d.%d", step, i+1)}
			}
			out = append(out, d)
		case 6: // move to another Service
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[discoveryv1.LabelServiceName] += "-other"
		}
		out = append(out, c)
	}
	return out
}
