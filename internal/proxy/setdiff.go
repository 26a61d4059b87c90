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

import "iter"

// changedSets yields, in name order, the compiled sets that differ
// between two states' lists (each in name order, as endpointSets keeps
// them): a set of both that is not the very same compiled set as
// (old, new), one that left as (old, nil), and one that came as
// (nil, new). A set both lists hold costs one pointer comparison: a
// swap's work on its sets is in proportion to what it changed, not to
// the 10,000 it may keep.
func changedSets(prev, next []*endpointSet) iter.Seq2[*endpointSet, *endpointSet] {
	return func(yield func(*endpointSet, *endpointSet) bool) {
		i, j := 0, 0
		for i < len(prev) || j < len(next) {
			var o, n *endpointSet
			switch {
			case i < len(prev) && j < len(next) && prev[i] == next[j]:
				i, j = i+1, j+1
				continue
			case j == len(next) || (i < len(prev) && prev[i].name < next[j].name):
				o, i = prev[i], i+1 // left
			case i == len(prev) || next[j].name < prev[i].name:
				n, j = next[j], j+1 // came
			default: // the same name, compiled anew
				o, n, i, j = prev[i], next[j], i+1, j+1
			}
			if !yield(o, n) {
				return
			}
		}
	}
}
