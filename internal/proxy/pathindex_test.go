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
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// TestPathIndexEqualsMap adds routes to a pathIndex and to a plain map,
// on both sides of the count of paths where the index becomes a map: it
// answers every path as the map does, routes in the order added, and an
// unknown path (the empty one included) not at all.
func TestPathIndexEqualsMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, paths := range []int{0, 1, 2, pathIndexMapAt, pathIndexMapAt + 1, 40} {
		var p pathIndex
		want := map[string][]int{}
		for i := 0; i < 3*paths; i++ {
			path := "/p" + strconv.Itoa(rng.Intn(paths))
			if i < paths {
				path = "/p" + strconv.Itoa(i) // every path at least once
			}
			p.add(path, i)
			want[path] = append(want[path], i)
		}
		if p.empty() != (paths == 0) {
			t.Errorf("%d paths: empty() = %v", paths, p.empty())
		}
		if inMap := p.m != nil; inMap != (paths > pathIndexMapAt) {
			t.Errorf("%d paths: indexed in a map: %v", paths, inMap)
		}
		for path, routes := range want {
			if got, ok := p.get(path); !ok || !slices.Equal(got, routes) {
				t.Errorf("%d paths: get(%q) = %v, %v; want %v", paths, path, got, ok, routes)
			}
		}
		for _, path := range []string{"", "/", "/p", "/p" + strconv.Itoa(paths)} {
			if got, ok := p.get(path); ok {
				t.Errorf("%d paths: get(%q) = %v for a path never added", paths, path, got)
			}
		}
	}
}
