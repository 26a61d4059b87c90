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

package writer

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// settledStatuses remembers, per object (routes; Gateways), the
// resourceVersion at which its status was found to carry (or was patched
// to carry) what a desired status of a given digest asks. A later round that finds the same
// resourceVersion and desires the same skips the merge and the
// comparison: at 10,000 routes those took 75 ms of CPU a round, and every
// rebuild and every proxy ack starts a round. Any write to the route, ours
// or another controller's, changes its resourceVersion, and any change to
// what we desire changes the digest.
//
// A round marks what it sees with its number rather than copying it into
// a new map, and a desired list that is the very list settled last time
// (the translator's Memo hands an unchanged route the parents it gave it
// before) is settled without a digest: at 10,000 routes the digests and
// the copy were half of a round's CPU.
type settledStatuses struct {
	mu  sync.Mutex
	cur map[settledKey]*settledAt
	// byList indexes the entries of cur by the desired list they were
	// taken of (from.first), for settledList to find one without hashing
	// the object's names: at 10,000 routes that lookup was most of a
	// round that wrote nothing.
	byList map[*gwv1.RouteParentStatus]*settledAt
	round  uint64
	// forgotten, when non-nil, collects the keys complete rounds forgot
	// (objects no longer desired, or gone), until takeForgotten.
	forgotten map[settledKey]struct{}
}

type settledKey struct {
	kind string
	name types.NamespacedName
}

type settledAt struct {
	key             settledKey
	resourceVersion string
	digest          statusDigest
	// from is the desired list digest was taken of (none for a Gateway).
	from listID
	// round is the last round that saw it.
	round uint64
	// replaced says a later entry for key took its place in cur.
	replaced bool
	// changed says the informer saw the object change after this entry
	// was taken (routeChanges): only a read can settle it again.
	changed bool
}

// listID is the identity of a non-empty desired list: its first element
// and length. A Result is never modified, so the same list has the same
// contents; and the entry that names it keeps it from being freed and its
// memory reused.
type listID struct {
	first *gwv1.RouteParentStatus
	n     int
}

// parentsID is the identity of ps (none when empty).
func parentsID(ps []gwv1.RouteParentStatus) listID {
	if len(ps) == 0 {
		return listID{}
	}
	return listID{&ps[0], len(ps)}
}

// begin starts a round: what the round does not see again is forgotten
// at its end.
func (s *settledStatuses) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.round++
}

// end finishes a round; a round that stopped early keeps everything, and
// one that does not sweep (it forgot what it no longer desires itself:
// forget) keeps what it did not see.
func (s *settledStatuses) end(complete, sweep bool) {
	if !sweep {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if complete {
		maps.DeleteFunc(s.cur, func(k settledKey, at *settledAt) bool {
			if at.round == s.round {
				return false
			}
			if s.forgotten != nil {
				s.forgotten[k] = struct{}{}
			}
			return true
		})
	}
	maps.DeleteFunc(s.byList, func(first *gwv1.RouteParentStatus, at *settledAt) bool {
		return at.replaced || at.from.first != first || (complete && at.round != s.round)
	})
}

// settled reports whether k is known to carry digest at resourceVersion
// (and keeps it known for the next round, taken of from).
func (s *settledStatuses) settled(k settledKey, resourceVersion string, digest statusDigest, from listID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.cur[k]
	if at == nil || resourceVersion == "" || at.resourceVersion != resourceVersion || at.digest != digest {
		return false
	}
	at.round, at.from, at.changed = s.round, from, false
	s.index(at)
	return true
}

// settledList reports whether k is known to carry, at resourceVersion,
// the very list from (and keeps it known for the next round).
func (s *settledStatuses) settledList(k settledKey, resourceVersion string, from listID) bool {
	if from.first == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.byList[from.first]
	if at == nil || at.replaced || at.key != k {
		at = s.cur[k] // a list two objects share is filed under one
	}
	if at == nil || at.from != from || resourceVersion == "" || at.resourceVersion != resourceVersion {
		return false
	}
	at.round, at.changed, at.key = s.round, false, k
	return true
}

// collectForgotten makes complete rounds collect the keys they forget.
func (s *settledStatuses) collectForgotten() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forgotten == nil {
		s.forgotten = map[settledKey]struct{}{}
	}
}

// takeForgotten returns the keys forgotten since the last take.
func (s *settledStatuses) takeForgotten() map[settledKey]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.forgotten
	if out != nil {
		s.forgotten = map[settledKey]struct{}{}
	}
	return out
}

// has reports whether k is known (the last complete round saw it).
func (s *settledStatuses) has(k settledKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur[k] != nil
}

// changedObjects marks the entries of the objects the informer saw change
// (routeChanges.take): they are settled again only through a read.
func (s *settledStatuses) changedObjects(keys map[settledKey]struct{}) {
	if len(keys) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range keys {
		if at := s.cur[k]; at != nil {
			at.changed = true
		}
	}
}

// settledUnchanged reports whether k is known to carry the very list from
// and has not changed since (no event marked it: changedObjects), which
// needs no read of the object; the caller knows its kind's changes are
// tracked in full (routeChanges).
func (s *settledStatuses) settledUnchanged(k settledKey, from listID) bool {
	if from.first == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.byList[from.first]
	if at == nil || at.replaced || at.key != k {
		at = s.cur[k]
	}
	if at == nil || at.from != from || at.changed {
		return false
	}
	at.round = s.round
	at.key = k // the object's own strings: the next compare is by pointer
	return true
}

// record notes that k carries digest, taken of from, at resourceVersion.
func (s *settledStatuses) record(k settledKey, resourceVersion string, digest statusDigest, from listID) {
	if resourceVersion == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		s.cur = map[settledKey]*settledAt{}
	}
	if old := s.cur[k]; old != nil {
		old.replaced = true
		if s.byList[old.from.first] == old {
			delete(s.byList, old.from.first)
		}
	}
	at := &settledAt{key: k, resourceVersion: resourceVersion, digest: digest, from: from, round: s.round}
	s.cur[k] = at
	s.index(at)
}

// forget drops what is known of k, as a complete round that no longer
// sees it does.
func (s *settledStatuses) forget(k settledKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.cur[k]
	if at == nil {
		return
	}
	delete(s.cur, k)
	if s.byList[at.from.first] == at {
		delete(s.byList, at.from.first)
	}
	if s.forgotten != nil {
		s.forgotten[k] = struct{}{}
	}
}

// index files at under its list in byList (s.mu held).
func (s *settledStatuses) index(at *settledAt) {
	if at.from.first == nil {
		return
	}
	if s.byList == nil {
		s.byList = map[*gwv1.RouteParentStatus]*settledAt{}
	}
	s.byList[at.from.first] = at
}

// gatewayDigest is a digest of what a Gateway's status is merged from:
// the desired status and the data plane's gate (every field of both,
// TestGatewayDigestCoversEveryField). A gate with rejections is never
// settled (false): its Events are recorded every round.
func gatewayDigest(d *translator.GatewayStatus, g programmedGate) (statusDigest, bool) {
	return gatedDigest(desiredGatewayDigest(d), g)
}

// gatedDigest is gatewayDigest from the digest of the desired status
// (desiredGatewayDigest), which a Result's rounds share.
func gatedDigest(desired statusDigest, g programmedGate) (statusDigest, bool) {
	if g.dp != nil && len(g.dp.Rejections) > 0 {
		return statusDigest{}, false
	}
	w := newDigestWriter()
	w.int(int64(desired[0])) //nolint:gosec // G115: the bits, not a quantity
	w.int(int64(desired[1])) //nolint:gosec // G115: the bits, not a quantity
	if dp := g.dp; dp != nil {
		w.int(1)
		w.bool(dp.Published)
		w.string(dp.Scope)
		w.int(int64(dp.Proxies))
		w.int(int64(dp.Ready))
	} else {
		w.int(0)
	}
	w.string(g.scope)
	w.int(g.generation)
	return w.sum(), true
}

// desiredGatewayDigest is a digest of every field of a desired Gateway
// status.
func desiredGatewayDigest(d *translator.GatewayStatus) statusDigest {
	w := newDigestWriter()
	st := &d.Status
	w.int(int64(len(st.Addresses)))
	for i := range st.Addresses {
		a := &st.Addresses[i]
		w.optString((*string)(a.Type))
		w.string(a.Value)
	}
	w.conditions(st.Conditions)
	w.int(int64(len(st.Listeners)))
	for i := range st.Listeners {
		l := &st.Listeners[i]
		w.string(string(l.Name))
		w.int(int64(len(l.SupportedKinds)))
		for j := range l.SupportedKinds {
			w.optString((*string)(l.SupportedKinds[j].Group))
			w.string(string(l.SupportedKinds[j].Kind))
		}
		w.int(int64(l.AttachedRoutes))
		w.conditions(l.Conditions)
	}
	if st.AttachedListenerSets != nil {
		w.int(1)
		w.int(int64(*st.AttachedListenerSets))
	} else {
		w.int(0)
	}
	return w.sum()
}

// desiredDigests are the desired-status digests of one Result's Gateways,
// by index, taken once for all the rounds of that Result (every proxy ack
// starts one: at 1,000 Gateways the digests were a third of a round).
// They are never modified.
type desiredDigests struct {
	of      *translator.Result
	digests []statusDigest
}

// newDesiredDigests takes the digests of res's Gateways, reusing prev's
// (those of an earlier Result, or nil) for a Gateway whose status there
// is the very same lists: the translator's Memo hands an unchanged
// Gateway the status it made last time, and a Result is never modified.
func newDesiredDigests(res *translator.Result, prev *desiredDigests) *desiredDigests {
	dd := &desiredDigests{of: res, digests: make([]statusDigest, len(res.Gateways))}
	var last []translator.GatewayStatus
	if prev != nil {
		last = prev.of.Gateways
	}
	for i := range res.Gateways {
		d := &res.Gateways[i]
		if i < len(last) && sameGatewayStatus(d, &last[i]) {
			dd.digests[i] = prev.digests[i]
			continue
		}
		dd.digests[i] = desiredGatewayDigest(d)
	}
	return dd
}

// sameGatewayStatus reports whether a and b are the status of one Gateway
// made of the very same lists (hence equal, as neither is modified).
func sameGatewayStatus(a, b *translator.GatewayStatus) bool {
	if a.GatewayState == b.GatewayState {
		return true
	}
	return a.NamespacedName == b.NamespacedName &&
		lists.Same(a.Status.Listeners, b.Status.Listeners) && lists.Same(a.Status.Conditions, b.Status.Conditions) &&
		lists.Same(a.Status.Addresses, b.Status.Addresses) && a.Status.AttachedListenerSets == b.Status.AttachedListenerSets
}

// parentsDigest is a digest of every field of desired route parents
// (TestParentsDigestCoversEveryField).
func parentsDigest(ps []gwv1.RouteParentStatus) statusDigest {
	w := newDigestWriter()
	w.int(int64(len(ps)))
	for i := range ps {
		p := &ps[i]
		r := &p.ParentRef
		w.optString((*string)(r.Group))
		w.optString((*string)(r.Kind))
		w.optString((*string)(r.Namespace))
		w.string(string(r.Name))
		w.optString((*string)(r.SectionName))
		if r.Port != nil {
			w.int(1)
			w.int(int64(*r.Port))
		} else {
			w.int(0)
		}
		w.string(string(p.ControllerName))
		w.conditions(p.Conditions)
	}
	return w.sum()
}

// conditions adds every field of each condition.
func (w *digestWriter) conditions(cs []metav1.Condition) {
	w.int(int64(len(cs)))
	for j := range cs {
		c := &cs[j]
		w.string(c.Type)
		w.string(string(c.Status))
		w.int(c.ObservedGeneration)
		w.int(c.LastTransitionTime.UnixNano())
		w.string(c.Reason)
		w.string(c.Message)
	}
}

// statusDigest is a 128-bit digest of a desired status. It is compared
// within this process only (settledStatuses), so it is two seeded hashes
// of the process (hash/maphash) rather than a cryptographic one: at
// 10,000 routes, SHA-256 and the buffer it read were a third of a round.
type statusDigest [2]uint64

var digestSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// digestWriter hashes length-prefixed fields, so that no two different
// field sequences hash the same bytes.
type digestWriter struct {
	h   [2]maphash.Hash
	buf [8]byte
}

func newDigestWriter() *digestWriter {
	w := &digestWriter{}
	w.h[0].SetSeed(digestSeeds[0])
	w.h[1].SetSeed(digestSeeds[1])
	return w
}

func (w *digestWriter) sum() statusDigest { return statusDigest{w.h[0].Sum64(), w.h[1].Sum64()} }

func (w *digestWriter) bytes(b []byte) {
	_, _ = w.h[0].Write(b)
	_, _ = w.h[1].Write(b)
}

func (w *digestWriter) int(v int64) {
	binary.LittleEndian.PutUint64(w.buf[:], uint64(v)) //nolint:gosec // G115: the bits of v, not a quantity
	w.bytes(w.buf[:])
}

func (w *digestWriter) string(s string) {
	w.int(int64(len(s)))
	_, _ = w.h[0].WriteString(s)
	_, _ = w.h[1].WriteString(s)
}

func (w *digestWriter) optString(s *string) {
	if s == nil {
		w.int(-1)
		return
	}
	w.string(*s)
}

func (w *digestWriter) bool(b bool) {
	if b {
		w.int(1)
	} else {
		w.int(0)
	}
}
