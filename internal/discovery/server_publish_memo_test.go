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
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// memoSnapshot is a shared-pool snapshot with one endpoint set per address.
func memoSnapshot(t *testing.T, addrs ...string) *published {
	t.Helper()
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	for i, a := range addrs {
		s.EndpointSets = append(s.EndpointSets, snapshot.EndpointSet{
			Name: fmt.Sprintf("apps/svc-%d:80", i), Endpoints: []snapshot.Endpoint{{Address: a, Port: 8080}},
		})
	}
	p, err := toPublished(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The per-version message resources are computed once and are what the
// per-stream computation gives.
func TestPublishedMessagesAreShared(t *testing.T) {
	base := memoSnapshot(t, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	other := memoSnapshot(t, "10.0.0.9")
	cur := memoSnapshot(t, "10.0.0.1", "10.0.0.7")

	full := cur.fullResources()
	if len(full) != len(cur.keys) || &full[0] != &cur.fullResources()[0] {
		t.Fatal("fullResources is not computed once")
	}
	for i, r := range full {
		if r.GetKey() != cur.keys[i] || string(r.GetBody()) != string(cur.bodies[cur.keys[i]]) {
			t.Fatalf("full resource %d = %s, want %s", i, r.GetKey(), cur.keys[i])
		}
	}
	for _, b := range []*published{base, other} {
		wantUp, wantRm := delta(b, cur)
		up, rm := cur.deltaFrom(b)
		up2, _ := cur.deltaFrom(b)
		if len(up) == 0 || &up[0] != &up2[0] {
			t.Fatal("deltaFrom is not computed once per baseline")
		}
		if !slices.Equal(rm, wantRm) || len(up) != len(wantUp) {
			t.Fatalf("deltaFrom = %v upserts, removed %v; want %v, %v", len(up), rm, len(wantUp), wantRm)
		}
		for i := range up {
			if !proto.Equal(up[i], wantUp[i]) {
				t.Fatalf("upsert %d = %v, want %v", i, up[i], wantUp[i])
			}
		}
	}
	// Beyond the cap, deltas are still right, just not kept.
	for i := range maxCachedDeltas + 2 {
		b := memoSnapshot(t, fmt.Sprintf("10.1.0.%d", i+1))
		up, rm := cur.deltaFrom(b)
		wantUp, wantRm := delta(b, cur)
		if len(up) != len(wantUp) || !slices.Equal(rm, wantRm) {
			t.Fatalf("baseline %d: deltaFrom differs from delta", i)
		}
	}
	if len(cur.deltas) > maxCachedDeltas {
		t.Fatalf("%d deltas kept, at most %d", len(cur.deltas), maxCachedDeltas)
	}
	// The messages of two streams share the resources; each has its nonce.
	a := nextMessage(cur, &streamState{baseline: base})
	b := nextMessage(cur, &streamState{baseline: base})
	a.Nonce, b.Nonce = "1", "2"
	if &a.Resources[0] != &b.Resources[0] || a.Nonce == b.Nonce {
		t.Fatal("two streams of one baseline do not share the delta")
	}
	if got := nextMessage(cur, &streamState{}); !got.GetFull() || len(got.GetResources()) != len(cur.keys) {
		t.Fatalf("full message = %v", got)
	}
}
