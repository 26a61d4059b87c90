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

// Package lists holds the slice helpers that the pipeline's packages
// share for lists they keep from one change to the next.
package lists

// Same reports whether a and b are the same list: both empty, or the same
// elements of the same array. Lists that are never modified in place
// (snapshots, Results) are then equal too.
func Same[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Reuse is list emptied, with room for n: its own array when that is
// enough, else a new one with room for an eighth more, so that a list
// growing a little at every use (routes being added) is not made anew
// every time.
func Reuse[E any](list []E, n int) []E {
	if cap(list) < n {
		return make([]E, 0, n+n/8)
	}
	return list[:0]
}
