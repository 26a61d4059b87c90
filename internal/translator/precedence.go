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
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// precKey orders routes as the Gateway API spec says: Exact path, then
// the longest PathPrefix, then regular expressions (whose precedence is ours
// to choose; longest pattern first), then method, number of
// header matches, number of query matches, then the oldest route, then
// "<namespace>/<name>", then rule and match order. It holds only what
// compare reads: the match's rank packed into one integer (precRank) and
// the route's creation time in nanoseconds. Every compiled match keeps
// one, so the rank's own fields and the creation time as a metav1.Time
// (72 bytes of 152) are not kept.
type precKey struct {
	packed    uint64
	createdNs int64
	namespace string
	name      string
	kind      string
	rule      int
	match     int
}

// precRank is what ranks a match before its route's identity: its path,
// method and the number of header and query matches (matchRank).
type precRank struct {
	pathRank   int // 0 exact, 1 GRPCRoute regex, 2 prefix, 3 regex
	pathLen    int
	method     bool
	headers    int
	query      int
	lastResort bool // Ingress defaultBackend
}

// key is the precKey of a match of rank r: match match of rule rule of
// the route of kind kind, namespace, name and creation time created.
func (r precRank) key(created metav1.Time, namespace, name, kind string, rule, match int) precKey {
	return precKey{packed: r.packed(), createdNs: created.UnixNano(), namespace: namespace, name: name, kind: kind, rule: rule, match: match}
}

// clampU is v limited to [0, limit], as an unsigned field of packed.
func clampU(v int, limit uint64) uint64 {
	if v < 0 {
		return 0
	}
	if uint64(v) > limit {
		return limit
	}
	return uint64(v)
}

// packed is the rank as one integer that orders like precKey: lastResort,
// pathRank, longer path, method, more headers, more query params.
func (r precRank) packed() uint64 {
	var p uint64
	if r.lastResort {
		p |= 1 << 63
	}
	p |= clampU(r.pathRank, 3) << 61
	p |= (0xFFFFF - clampU(r.pathLen, 0xFFFFF)) << 41
	if !r.method {
		p |= 1 << 40
	}
	p |= (0xFFFF - clampU(r.headers, 0xFFFF)) << 24
	p |= (0xFFFF - clampU(r.query, 0xFFFF)) << 8
	return p
}

// less orders k before o (see precKey).
func (k *precKey) less(o *precKey) bool { return k.compare(o) < 0 }

// compare is -1, 0 or +1 as k sorts before, with or after o; it stops at
// the first field that differs (most keys differ in packed already).
func (k *precKey) compare(o *precKey) int {
	if c := cmp.Compare(k.packed, o.packed); c != 0 {
		return c
	}
	if c := cmp.Compare(k.createdNs, o.createdNs); c != 0 {
		return c
	}
	if c := cmp.Compare(k.namespace, o.namespace); c != 0 {
		return c
	}
	if c := cmp.Compare(k.name, o.name); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(k.kind, o.kind), cmp.Compare(k.rule, o.rule), cmp.Compare(k.match, o.match))
}

// matchRank is the rank of one match; grpc ranks a regular expression as
// a GRPCRoute method pattern.
func matchRank(m *snapshot.Match, grpc bool) precRank {
	k := precRank{method: m.Method != "", headers: len(m.Headers), query: len(m.QueryParams)}
	// Exact > longest PathPrefix > RegularExpression for HTTPRoute and
	// Ingress paths. A GRPCRoute regex (a service/method pattern) ranks
	// before prefixes, so a catch-all gRPC rule cannot shadow it.
	prefix, regex := 2, 3
	if grpc {
		regex = 1
	}
	switch {
	case m.Path == nil:
		k.pathRank, k.pathLen = prefix, 1
	case m.Path.Type == snapshot.PathExact:
		k.pathRank, k.pathLen = 0, len(m.Path.Value)
	case m.Path.Type == snapshot.PathRegularExpression:
		k.pathRank, k.pathLen = regex, len(m.Path.Value)
	default:
		k.pathRank, k.pathLen = prefix, len(m.Path.Value)
	}
	return k
}
