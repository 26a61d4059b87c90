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
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// scratch is what a translation works in and its Result does not keep:
// maps of the endpoint sets it made by name and by source, of the
// EndpointSlices by Service, of the endpoint sets the shared pool lists
// and of the sets' sources (unless the Result keeps them, keepSources),
// and room for endpoint sets, listener builders and listener states. A
// Memo hands the last translation's, emptied, to the next one: made anew,
// and grown, at every change they were a third of what a change to one
// of 10,000 routes allocated.
type scratch struct {
	endpointSets map[string]*snapshot.EndpointSet
	setNames     map[setKey]string
	slices       map[nn][]*discoveryv1.EndpointSlice
	// slicesOf is the list slices indexes (nil: none): a translation of
	// the very same list takes the index as it is (slicesFor).
	slicesOf []*discoveryv1.EndpointSlice
	poolSets map[string]bool
	// poolStamped is the room of the shared pool's scope builder's list
	// of stamped sets (scopeBuilder.stamped).
	poolStamped []string
	sources     map[string]endpointSource
	// remade is the sets remakeSet made, whose sources are not in sources
	// until keepSources needs them.
	remade []remadeSet
	// poolGateways and ports are the room of the shared pool's Gateway
	// list and of every GatewayRef's ports (memoPass.gatewayList copies
	// them when they changed).
	poolGateways []snapshot.GatewayRef
	ports        portSlab
	// sets holds the endpoint sets endpointSets points to, used of them
	// in use: a snapshot takes copies, so they are refilled from the start
	// by the next translation. Chunks of a fixed size keep every pointer
	// valid while more are added.
	sets [][]snapshot.EndpointSet
	used int
	// builders holds the listener builders (as sets holds the endpoint
	// sets), buildersUsed of them in use; poolListeners is the shared
	// pool's scope builder's map of them, and states the room of the
	// listener states. At 2,000 listeners, each made anew at every change
	// was a quarter of what the change allocated.
	builders      [][]listenerBuilder
	buildersUsed  int
	poolListeners map[string]*listenerBuilder
	states        []listenerState
}

// scratchChunk is how many elements a chunk of scratch.sets or
// scratch.builders holds.
const scratchChunk = 256

// newSet is an endpoint set of the scratch, zero.
func (s *scratch) newSet() *snapshot.EndpointSet {
	return nextInChunks(&s.sets, &s.used)
}

// newListenerBuilder is a listener builder of the scratch, zero.
func (s *scratch) newListenerBuilder() *listenerBuilder {
	return nextInChunks(&s.builders, &s.buildersUsed)
}

// listenerStates is n zero listener states, in the room of the last
// translation's when it has enough.
func (s *scratch) listenerStates(n int) []listenerState {
	if cap(s.states) < n {
		s.states = make([]listenerState, n+n/8)
	}
	return s.states[:n] // zeroed by empty
}

// nextInChunks is the next unused element of chunks (scratchChunk
// each), *used of them in use, with a chunk added when all are.
func nextInChunks[T any](chunks *[][]T, used *int) *T {
	c, i := *used/scratchChunk, *used%scratchChunk
	if c == len(*chunks) {
		*chunks = append(*chunks, make([]T, scratchChunk))
	}
	*used++
	return &(*chunks)[c][i]
}

// emptyChunks zeroes the elements of chunks in use, of which nothing is
// then kept alive.
func emptyChunks[T any](chunks [][]T, used *int) {
	for c := 0; c*scratchChunk < *used; c++ {
		clear(chunks[c])
	}
	*used = 0
}

// newScratch makes empty maps for about sets endpoint sets and slices
// EndpointSlices.
func newScratch(sets, slices int) *scratch {
	return &scratch{
		endpointSets:  make(map[string]*snapshot.EndpointSet, sets),
		setNames:      make(map[setKey]string, sets),
		slices:        make(map[nn][]*discoveryv1.EndpointSlice, slices),
		poolSets:      make(map[string]bool, sets),
		sources:       make(map[string]endpointSource, sets),
		poolListeners: map[string]*listenerBuilder{},
	}
}

// empty clears the maps, which keep their room, and with it nothing of
// the translation that filled them.
//
// setNames is the exception: a set's name is made from its key alone, so
// it stays right, and making every set's name again was two allocations
// per set at every change (2,000 Services: a third of what a route change
// allocated). It is cleared once it holds many more names than this
// translation made sets, so that Services gone are forgotten. slices is
// kept too: it is the index of the list slicesOf (which it keeps alive),
// for the next translation of that list.
func (s *scratch) empty() {
	if len(s.setNames) > 2*len(s.endpointSets)+64 {
		clear(s.setNames)
	}
	clear(s.endpointSets)
	clear(s.poolSets)
	clear(s.sources)
	clear(s.remade)
	s.remade = s.remade[:0]
	clear(s.poolGateways)
	s.poolGateways, s.ports = s.poolGateways[:0], s.ports[:0]
	emptyChunks(s.sets, &s.used)
	emptyChunks(s.builders, &s.buildersUsed)
	clear(s.poolListeners)
	clear(s.states)
}

// slicesFor is the index of list by Service for a translation to fill,
// and whether it holds list's already: the last translation's, of the
// very same list (a Resources' lists are never modified in place). At
// 10,000 Services, indexing their EndpointSlices again was a sixth of a
// route change.
func (s *scratch) slicesFor(list []*discoveryv1.EndpointSlice) (map[nn][]*discoveryv1.EndpointSlice, bool) {
	if s.slicesOf != nil && lists.Same(s.slicesOf, list) {
		return s.slices, true
	}
	clear(s.slices)
	s.slicesOf = list
	return s.slices, false
}

// scratchFor is the maps a translation of res works in: the Memo's spare
// ones when it has them, else new ones (always, without a Memo).
func (p *memoPass) scratchFor(res *Resources) *scratch {
	if p == nil {
		return newScratch(0, len(res.EndpointSlices))
	}
	if p.scratch == nil {
		p.scratch = newScratch(p.sizes.sources, len(res.EndpointSlices))
	}
	if p.scratch.sources == nil { // the last Result kept them
		p.scratch.sources = make(map[string]endpointSource, p.sizes.sources)
	}
	return p.scratch
}
