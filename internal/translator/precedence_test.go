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
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestPrecedenceOrder lists matches in the order the HTTPRoute spec
// requires and checks that sorting any permutation restores it.
func TestPrecedenceOrder(t *testing.T) {
	old := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	young := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	path := func(typ snapshot.PathMatchType, v string) *snapshot.PathMatch {
		return &snapshot.PathMatch{Type: typ, Value: v}
	}
	hdr := func(n int) []snapshot.StringMatch {
		out := make([]snapshot.StringMatch, n)
		for i := range out {
			out[i] = snapshot.StringMatch{Type: snapshot.MatchExact, Name: string(rune('a' + i)), Value: "v"}
		}
		return out
	}
	type spec struct {
		m       snapshot.Match
		created metav1.Time
		ns, n   string
		rule    int
	}
	want := []spec{
		{m: snapshot.Match{Path: path(snapshot.PathExact, "/a/b/c")}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathExact, "/a")}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a/b")}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a"), Method: "GET"}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a"), Headers: hdr(2)}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a"), Headers: hdr(1), QueryParams: hdr(3)}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a"), Headers: hdr(1), QueryParams: hdr(1)}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a")}, created: old, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a")}, created: young, ns: "a", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a")}, created: young, ns: "z", n: "a"},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a")}, created: young, ns: "z", n: "z", rule: 0},
		{m: snapshot.Match{Path: path(snapshot.PathPrefix, "/a")}, created: young, ns: "z", n: "z", rule: 1},
		{m: snapshot.Match{}, created: old, ns: "a", n: "a"},
		// Regular expressions come after every PathPrefix, even "/".
		{m: snapshot.Match{Path: path(snapshot.PathRegularExpression, "/a/[0-9]+/long")}, created: young, ns: "z", n: "z"},
		{m: snapshot.Match{Path: path(snapshot.PathRegularExpression, "/a/[0-9]+")}, created: young, ns: "z", n: "z"},
	}
	keys := make([]*precKey, len(want))
	for i, w := range want {
		k := matchRank(&w.m, false).key(w.created, w.ns, w.n, kindHTTPRoute, w.rule, 0)
		keys[i] = &k
	}
	for i := 1; i < len(keys); i++ {
		if !keys[i-1].less(keys[i]) || keys[i].less(keys[i-1]) {
			t.Fatalf("entry %d does not sort before entry %d", i-1, i)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		perm := slices.Clone(keys)
		rng.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
		slices.SortStableFunc(perm, func(a, b *precKey) int {
			if a.less(b) {
				return -1
			}
			if b.less(a) {
				return 1
			}
			return 0
		})
		for i := range perm {
			if perm[i] != keys[i] {
				t.Fatalf("round %d: position %d holds the wrong match", round, i)
			}
		}
	}
}

// TestIngressRegexAfterPrefix: on Ingress listeners regular expressions
// are checked after Exact and Prefix paths.
func TestIngressRegexAfterPrefix(t *testing.T) {
	re := matchRank(&snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: "/a/.*/long/pattern"}}, false).key(metav1.Time{}, "", "", "", 0, 0)
	pre := matchRank(&snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: "/"}}, false).key(metav1.Time{}, "", "", "", 0, 0)
	if !pre.less(&re) {
		t.Fatal("Ingress prefix \"/\" should sort before a regex")
	}
}
