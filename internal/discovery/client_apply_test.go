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

package discovery

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestMergeResourcesMatchesAMap checks the sorted merge against the plain
// model of a resource set, a map by key, over random fulls and deltas with
// keys listed out of order, twice, and upserted and removed at once.
func TestMergeResourcesMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() string { return fmt.Sprintf("k%03d", rng.IntN(60)) }
	var model map[string]string
	var cur []snapshot.Resource
	for step := range 2000 {
		m := &discoveryv1.Snapshot{Full: model == nil || rng.IntN(20) == 0}
		for range rng.IntN(12) {
			m.Resources = append(m.Resources, &discoveryv1.Resource{Key: key(), Body: fmt.Appendf(nil, "b%d", rng.IntN(1000))})
		}
		if rng.IntN(3) == 0 {
			// As servers send them: strictly in key order.
			slices.SortFunc(m.Resources, func(a, b *discoveryv1.Resource) int { return strings.Compare(a.Key, b.Key) })
			m.Resources = slices.CompactFunc(m.Resources, func(a, b *discoveryv1.Resource) bool { return a.Key == b.Key })
		}
		if !m.Full {
			for range rng.IntN(6) {
				m.Removed = append(m.Removed, key())
			}
		}
		want := map[string]string{}
		if !m.Full {
			maps.Copy(want, model)
		}
		for _, r := range m.Resources {
			want[r.Key] = string(r.Body)
		}
		for _, k := range m.Removed {
			delete(want, k)
		}

		got, err := mergeResources(cur, m)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !strictlyInKeyOrder(got) {
			t.Fatalf("step %d: not strictly in key order: %v", step, got)
		}
		gotMap := map[string]string{}
		for _, r := range got {
			gotMap[r.Key] = string(r.Body)
		}
		if !maps.Equal(gotMap, want) {
			t.Fatalf("step %d: got %v, want %v", step, gotMap, want)
		}
		model, cur = want, got
	}
}

// TestMergeResourcesRefuses checks the messages a client cannot apply.
func TestMergeResourcesRefuses(t *testing.T) {
	base := []snapshot.Resource{{Key: "a", Body: []byte("1")}}
	for name, tc := range map[string]struct {
		cur  []snapshot.Resource
		m    *discoveryv1.Snapshot
		want string
	}{
		"delta without a baseline": {nil, &discoveryv1.Snapshot{}, "without a baseline"},
		"full that removes":        {base, &discoveryv1.Snapshot{Full: true, Removed: []string{"a"}}, "cannot remove"},
		"empty key":                {base, &discoveryv1.Snapshot{Resources: []*discoveryv1.Resource{{Key: ""}}}, "empty key"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mergeResources(tc.cur, tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	// An empty full snapshot is a baseline a delta can follow.
	empty, err := mergeResources(nil, &discoveryv1.Snapshot{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mergeResources(empty, &discoveryv1.Snapshot{Resources: []*discoveryv1.Resource{{Key: "a"}}}); err != nil {
		t.Fatalf("a delta after an empty full: %v", err)
	}
}
