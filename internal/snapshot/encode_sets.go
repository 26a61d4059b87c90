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
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// setChunk is one chunk of endpoint set resources as an Encoder last made
// it: the very sets it was encoded from, in name order, and their
// resources, the list Encoded.Sets hands on. byKey says the chunk ended
// because its last key ends one (chunkEnds), not because it was long
// (maxHostChunk) or the sets ran out.
type setChunk struct {
	sets  []*EndpointSet
	res   []Resource
	byKey bool
}

// encodeSets cuts sets into chunks of resources, as a listener's hosts
// are (host_chunks.go), handing last's chunks on: a run of sets that is
// the very run of one of last's chunks, starting where a chunk starts,
// is that chunk, with no look at a set and nothing made (at 10,000 sets,
// a list of every set's encoding made at every endpoint change was most
// of the Encoder's work under churn). Another chunk is encoded set by
// set, taking the body of last's set of the same name when it is the
// same set (SameEndpointSet), and is last's chunk of the same resources
// when there is one, so that Diff skips it.
//
// Sets out of name order are encoded from a sorted copy; a name twice is
// an error.
func encodeSets(sets []*EndpointSet, last []setChunk, mask uint32) ([]setChunk, error) {
	if out, ok, err := encodeSortedSets(sets, last, mask); ok || err != nil {
		return out, err
	}
	sorted := slices.Clone(sets)
	slices.SortFunc(sorted, func(a, b *EndpointSet) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1].Name == sorted[i].Name {
			return nil, fmt.Errorf("duplicate resource key %q", setsPrefix+sorted[i].Name)
		}
	}
	out, _, err := encodeSortedSets(sorted, last, mask)
	return out, err
}

// encodeSortedSets is encodeSets of sets in strict name order; ok is false
// when they are not.
//
// A run of chunks handed on one after the other, as last had them, reads
// no set at all: their order is last's.
func encodeSortedSets(sets []*EndpointSet, last []setChunk, mask uint32) (out []setChunk, ok bool, err error) {
	whole := last // last's chunks from the first that may still be handed on whole
	bodies := setBodies{chunks: last}
	var cur []Resource    // the chunk being encoded
	start := 0            // its first set
	var prev *EndpointSet // the set before sets[i]
	// next: whole[0] is the chunk of last after the one just handed on.
	next := false
	for i := 0; i < len(sets); {
		es := sets[i]
		// The first set of the chunk of last after the one just handed on
		// is in order after it, as in last (followsLast).
		followsLast := len(cur) == 0 && next && len(whole) > 0 && whole[0].sets[0] == es
		if !followsLast {
			if prev != nil && prev.Name >= es.Name {
				return nil, false, nil
			}
			if len(cur) == 0 {
				for len(whole) > 0 && whole[0].sets[0] != es && whole[0].sets[0].Name < es.Name {
					whole = whole[1:]
				}
			}
		}
		next = false
		if len(cur) == 0 && len(whole) > 0 && handsOn(whole[0], sets[i:]) {
			out = append(out, whole[0])
			// In order inside: the very sets of a chunk that was.
			i += len(whole[0].sets)
			prev, whole, next = sets[i-1], whole[1:], true
			// The sets after it sort after its own.
			bodies = setBodies{chunks: whole}
			start = i
			continue
		}
		r, byKey, err := bodies.resource(es, mask)
		if err != nil {
			return nil, false, err
		}
		cur = append(cur, r)
		prev, i = es, i+1
		if !byKey && len(cur) < maxHostChunk && i < len(sets) {
			continue
		}
		c := setChunk{sets: slices.Clone(sets[start:i]), res: cur, byKey: byKey}
		for len(whole) > 0 && whole[0].res[0].Key < cur[0].Key {
			whole = whole[1:]
		}
		if len(whole) > 0 && sameResources(whole[0].res, cur) {
			c.res = whole[0].res // the very list: Diff skips it
		}
		out = append(out, c)
		cur, start = nil, i
	}
	return out, true, nil
}

// handsOn reports whether chunk c is the chunk that starts at rest[0]:
// rest starts with c's very sets, and the chunk ends where it ended (by
// its last key, by its length, or with the sets).
func handsOn(c setChunk, rest []*EndpointSet) bool {
	n := len(c.sets)
	if n > len(rest) || !slices.Equal(c.sets, rest[:n]) { // the same pointers
		return false
	}
	return c.byKey || n == maxHostChunk || n == len(rest)
}

// setBodies finds the encodings of the last call's sets by name, walking
// its chunks once in order: sets come in name order.
type setBodies struct {
	chunks []setChunk
	k      int // the next set of chunks[0]
}

// resource is es's resource, and whether a chunk ends after it
// (chunkEnds): the body of the last call's set of its name when that is
// the same set, a new encoding otherwise. Inside a chunk of the last call
// no key but the last ends one, so a body taken over needs no hash.
func (b *setBodies) resource(es *EndpointSet, mask uint32) (_ Resource, ends bool, _ error) {
	for len(b.chunks) > 0 {
		c := &b.chunks[0]
		if b.k == len(c.sets) {
			b.chunks, b.k = b.chunks[1:], 0
			continue
		}
		old := c.sets[b.k]
		if old != es && old.Name < es.Name {
			b.k++
			continue
		}
		if old == es || SameEndpointSet(old, es) {
			b.k++
			return c.res[b.k-1], b.k == len(c.sets) && c.byKey, nil
		}
		break
	}
	body, err := json.Marshal(es)
	if err != nil {
		return Resource{}, false, err
	}
	key := setsPrefix + es.Name
	return Resource{Key: key, Body: body}, chunkEnds(key, mask), nil
}
