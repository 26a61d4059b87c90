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
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"

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

// recordingApplier keeps the last snapshot a client applied.
type recordingApplier struct{ last *snapshot.Snapshot }

func (r *recordingApplier) Apply(s *snapshot.Snapshot) error { r.last = s; return nil }
func (r *recordingApplier) BoundPorts() []int32              { return nil }
func (r *recordingApplier) OnBoundPortsChange(func([]int32)) {}

// TestClientPatchesDeltasOntoItsLastGoodState: deltas are patched onto
// the assembler's last snapshot, so a refused delta (an announced version
// the resources do not have, a route to a set that does not exist) must
// leave that baseline at the last applied state: the next delta, against
// that state, is applied as if the refused one never came, and every
// applied snapshot is the one its resources assemble to from scratch.
func TestClientPatchesDeltasOntoItsLastGoodState(t *testing.T) {
	for _, layout := range []snapshot.Layout{snapshot.LayoutVirtualHosts, snapshot.LayoutVersionBuckets} {
		t.Run(layout.String(), func(t *testing.T) {
			versionIn := func(res []snapshot.Resource) string {
				t.Helper()
				v, err := snapshot.VersionIn(layout, res)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
			l := snapshot.Listener{Name: "web", Port: 30000, Protocol: snapshot.ProtocolHTTP}
			host := func(h, set string) *snapshot.VirtualHost {
				return &snapshot.VirtualHost{Hostname: h, Routes: []snapshot.Route{{ID: "httproute/default/" + h + ":0",
					Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}}, Backends: []snapshot.Backend{{EndpointSet: set, Weight: 1}}}}}
			}
			for i := range 5 {
				l.VirtualHosts = append(l.VirtualHosts, host(fmt.Sprintf("h%d.example.com", i), "default/svc:80"))
			}
			s.Listeners = []snapshot.Listener{l}
			s.EndpointSets = []*snapshot.EndpointSet{{Name: "default/svc:80", Endpoints: []snapshot.Endpoint{{Address: "10.0.0.1", Port: 80}}}}
			snapshot.Normalize(s)
			res, err := snapshot.ResourcesIn(layout, s)
			if err != nil {
				t.Fatal(err)
			}
			body := func(v any) []byte {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			applier := &recordingApplier{}
			c := &Client{opts: ClientOptions{Scope: snapshot.SharedPool(), Applier: applier}, log: logr.Discard(), metrics: newClientMetrics()}
			wire := func(rs []snapshot.Resource) []*discoveryv1.Resource {
				out := make([]*discoveryv1.Resource, 0, len(rs))
				for _, r := range rs {
					out = append(out, &discoveryv1.Resource{Key: r.Key, Body: r.Body})
				}
				return out
			}
			wireLayout := LayoutToProto(layout)
			if _, err := c.apply(&discoveryv1.Snapshot{Full: true, Layout: wireLayout, Version: versionIn(res), Resources: wire(res)}); err != nil {
				t.Fatal(err)
			}
			good := res
			send := func(upserts []snapshot.Resource, removed []string, version string) error {
				t.Helper()
				_, err := c.apply(&discoveryv1.Snapshot{Layout: wireLayout, Version: version, Resources: wire(upserts), Removed: removed})
				return err
			}
			moved := snapshot.Resource{Key: snapshot.VirtualHostKey("30000", "h1.example.com"), Body: body(host("h1.example.com", "default/svc:80"))}
			moved.Body = body(snapshot.VirtualHost{Hostname: "h1.example.com", Routes: []snapshot.Route{{ID: "httproute/default/h1:moved",
				Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/moved"}}, Backends: []snapshot.Backend{{EndpointSet: "default/svc:80", Weight: 1}}}}})
			gone := snapshot.VirtualHostKey("30000", "h2.example.com")
			// Refused: the version announced is not the resources'.
			if err := send([]snapshot.Resource{moved}, []string{gone}, "not-the-version"); err == nil {
				t.Fatal("a delta with a wrong version was applied")
			}
			// Refused: a route to a set that does not exist.
			bad := snapshot.Resource{Key: snapshot.VirtualHostKey("30000", "h3.example.com"), Body: body(host("h3.example.com", "default/absent:80"))}
			if err := send([]snapshot.Resource{bad}, nil, versionIn(upsert(slices.Clone(good), bad))); err == nil {
				t.Fatal("a route to an absent set was applied")
			}
			// Against the last good state, a delta that only adds a host.
			added := snapshot.Resource{Key: snapshot.VirtualHostKey("30000", "h9.example.com"), Body: body(host("h9.example.com", "default/svc:80"))}
			want := upsert(slices.Clone(good), added)
			if err := send([]snapshot.Resource{added}, nil, versionIn(want)); err != nil {
				t.Fatalf("a delta against the last good state: %v", err)
			}
			fresh, _, err := (&snapshot.Assembler{Scope: snapshot.SharedPool(), Layout: layout}).Assemble(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(applier.last, fresh) {
				t.Fatalf("applied %+v, want %+v", applier.last, fresh)
			}
			if c.resources != nil {
				t.Fatal("the client keeps a list of the resources its assembler holds")
			}
			// And the refused ones' changes, now with their version, apply too.
			want2 := upsert(slices.Clone(want), moved)
			want2 = slices.DeleteFunc(want2, func(r snapshot.Resource) bool { return r.Key == gone })
			if err := send([]snapshot.Resource{moved}, []string{gone}, versionIn(want2)); err != nil {
				t.Fatal(err)
			}
			fresh, _, err = (&snapshot.Assembler{Scope: snapshot.SharedPool(), Layout: layout}).Assemble(want2)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(applier.last, fresh) {
				t.Fatalf("applied %+v, want %+v", applier.last, fresh)
			}
		})
	}
}

// upsert sets the resource of r.Key to r, keeping key order.
func upsert(res []snapshot.Resource, r snapshot.Resource) []snapshot.Resource {
	i, found := slices.BinarySearchFunc(res, r.Key, func(x snapshot.Resource, k string) int { return strings.Compare(x.Key, k) })
	if found {
		res[i] = r
		return res
	}
	return slices.Insert(res, i, r)
}
