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

package snapshot

import (
	"slices"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// A listener's virtual host resources leave the Encoder in chunks, each a
// HostRun of its own: a change to one host of 10,000 makes a new chunk of
// about a hundred resources, and hands the other chunks on as the very
// lists of the last encoding, where one run of every host was a new list
// of 10,000 (400 KB a change in the controller). Where a chunk ends
// depends on the keys alone (a key whose hash has hostChunkBits low bits
// clear ends one), so a host added or removed moves no boundary but its
// own chunk's, and Diff meets the same chunks on both sides past it.
const (
	// hostChunkBits makes chunks of 2^hostChunkBits hosts on average.
	hostChunkBits = 7
	// maxHostChunk ends a chunk that no key ended (one in 3,000 at 128
	// on average, 1,024 long).
	maxHostChunk = 1024
)

// chunkEnds reports whether a chunk ends after the resource of key, for
// chunks of mask+1 resources on average: FNV-1a's bits above the low
// byte (version buckets use the low byte) under mask are clear.
func chunkEnds(key string, mask uint32) bool {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return (h>>8)&mask == 0
}

// chunkMask is e's chunk mask: chunks of 2^hostChunkBits on average
// unless a test set a smaller one.
func (e *Encoder) chunkMask() uint32 {
	if e.mask != 0 {
		return e.mask
	}
	return 1<<hostChunkBits - 1
}

// chunkRun cuts run, a listener's resources in strict key order, into
// chunks (ends(j) says one ends after run[j]). A chunk that holds the very
// resources of a chunk of last (the same keys and body slices) is that
// chunk; any other is a new list, for run is scratch.
func chunkRun(run []Resource, ends func(j int) bool, last [][]Resource) [][]Resource {
	var out [][]Resource
	start, li := 0, 0
	for j := range run {
		if j+1 < len(run) && j+1-start < maxHostChunk && !ends(j) {
			continue
		}
		c := run[start : j+1]
		start = j + 1
		for li < len(last) && last[li][0].Key != c[0].Key && last[li][0].Key < c[0].Key {
			li++
		}
		if li < len(last) && sameResources(last[li], c) {
			out = append(out, last[li])
			li++
			continue
		}
		out = append(out, slices.Clone(c))
	}
	return out
}

// sameResources reports whether a and b hold the same keys with the very
// same bodies.
func sameResources(a, b []Resource) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].Body, b[i].Body
		if a[i].Key != b[i].Key || len(x) != len(y) || (len(x) > 0 && &x[0] != &y[0]) {
			return false
		}
	}
	return true
}

// prefixRuns is how many runs of runs, from the first, have its prefix.
func prefixRuns(runs []HostRun) int {
	n := 1
	for n < len(runs) && runs[n].Prefix == runs[0].Prefix {
		n++
	}
	return n
}

// diffChunks is diffLists over the resources of the chunks p and c, the
// runs of one listener before and now: a chunk of c that is the very list
// of the chunk of p it meets at their starts is skipped without a look at
// its resources.
func diffChunks(p, c []HostRun, upserts []Resource, removed []string) ([]Resource, []string) {
	var pr, cr []Resource
	pWhole, cWhole := false, false
	for {
		for len(pr) == 0 && len(p) > 0 {
			pr, p, pWhole = p[0].Resources, p[1:], true
		}
		for len(cr) == 0 && len(c) > 0 {
			cr, c, cWhole = c[0].Resources, c[1:], true
		}
		switch {
		case len(pr) == 0 && len(cr) == 0:
			return upserts, removed
		case pWhole && cWhole && lists.Same(pr, cr):
			pr, cr = nil, nil
		case len(pr) == 0 || (len(cr) > 0 && cr[0].Key < pr[0].Key):
			upserts = append(upserts, cr[0])
			cr, cWhole = cr[1:], false
		case len(cr) == 0 || pr[0].Key < cr[0].Key:
			removed = append(removed, pr[0].Key)
			pr, pWhole = pr[1:], false
		default:
			if !SameBody(pr[0].Body, cr[0].Body) {
				upserts = append(upserts, cr[0])
			}
			pr, cr, pWhole, cWhole = pr[1:], cr[1:], false, false
		}
	}
}
