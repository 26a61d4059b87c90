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

package proxy

import (
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestSwapBookkeepingEqualsAFullLook: over random changes to random
// endpoint sets (an address in several sets, sets added, removed, changed,
// given other health checks and left as they are), the bookkeeping of a
// swap, which looks only at the sets it changed (changedSets), is what a
// look at every set would give: the pool keys it drops (keyCounts) are
// the ones the state in force can send to and the next cannot, and the
// running health checkers are one for each endpoint of each checked set,
// on that very endpoint, no unchecked endpoint keeping a verdict.
func TestSwapBookkeepingEqualsAFullLook(t *testing.T) {
	p := newTestPlane(t)
	bs := p.env.backends
	port := testkit.FreePortInt32(t) // nothing listens: a probe is refused at once
	rng := rand.New(rand.NewSource(5))
	addr := func() snapshot.Endpoint {
		return snapshot.Endpoint{Address: "127.0.0." + strconv.Itoa(rng.Intn(12)+1), Port: port}
	}
	checks := []*snapshot.HealthCheck{nil,
		{Path: "/a", Interval: dur(time.Hour), Timeout: dur(50 * time.Millisecond), HealthyThreshold: 1, UnhealthyThreshold: 1},
		{Path: "/b", Interval: dur(time.Hour), Timeout: dur(50 * time.Millisecond), HealthyThreshold: 1, UnhealthyThreshold: 1}}
	var in []*snapshot.EndpointSet
	for i := range 8 {
		in = append(in, &snapshot.EndpointSet{Name: "ns/s" + strconv.Itoa(i) + ":80", Endpoints: []snapshot.Endpoint{addr()}, HealthCheck: checks[rng.Intn(3)]})
	}
	var keys keyCounts
	prev := &state{}
	prev.sets, _ = compileEndpointSets(in, nil, nil)
	keys.move(nil, prev)
	bs.sync(nil, prev)
	for step := range 300 {
		next := slices.Clone(in)
		for c := range 1 + rng.Intn(3) {
			k := rng.Intn(len(next))
			switch rng.Intn(5) {
			case 0: // other endpoints
				es := *next[k]
				es.Endpoints = []snapshot.Endpoint{addr()}
				if rng.Intn(2) == 0 {
					es.Endpoints = append(es.Endpoints, addr())
				}
				next[k] = &es
			case 1: // gone (its name is not used again)
				if len(next) > 1 {
					next = slices.Delete(next, k, k+1)
				}
			case 2: // added
				name := "ns/t" + strconv.Itoa(step) + "-" + strconv.Itoa(c) + ":80"
				next = append(next, &snapshot.EndpointSet{Name: name, Endpoints: []snapshot.Endpoint{addr()}, HealthCheck: checks[rng.Intn(3)]})
				slices.SortFunc(next, func(a, b *snapshot.EndpointSet) int { return strings.Compare(a.Name, b.Name) })
			case 3: // another health check, or none
				es := *next[k]
				es.HealthCheck = checks[rng.Intn(3)]
				next[k] = &es
			}
		}
		st := &state{}
		st.sets, _ = compileEndpointSets(next, prev, nil)
		var want []string
		live := liveAddrs(st)
		for key := range liveAddrs(prev) {
			if _, ok := live[key]; !ok {
				want = append(want, key)
			}
		}
		got := keys.move(prev, st)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: gone %v, want %v", step, got, want)
		}
		bs.sync(prev, st)
		wantCheckers := map[checkerKey]*endpoint{}
		for _, es := range st.sets.list {
			for _, ep := range es.eps {
				if es.health == nil {
					if ep.health.Load() != nil {
						t.Fatalf("step %d: %s of unchecked set %s keeps a health status", step, ep.key, es.name)
					}
					continue
				}
				wantCheckers[checkerKey{set: es.name, fp: es.health.fp, ep: ep.key}] = ep
			}
		}
		gotCheckers := map[checkerKey]*endpoint{}
		bs.mu.Lock()
		for k, c := range bs.checkers {
			gotCheckers[k] = c.ep
		}
		bs.mu.Unlock()
		if !maps.Equal(gotCheckers, wantCheckers) {
			t.Fatalf("step %d: checkers %v, want %v", step, gotCheckers, wantCheckers)
		}
		prev, in = st, next
	}
}
