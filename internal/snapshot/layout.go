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
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"iter"
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
)

// Layout is how a snapshot is cut into discovery resources, and how its
// version is computed.
type Layout int

const (
	// LayoutListeners is the first layout: a listener resource carries all
	// its virtual hosts, and the version hashes the whole re-encoded
	// snapshot (Resources, Assemble, Version). Proxies that predate
	// LayoutVirtualHosts read only this one.
	LayoutListeners Layout = iota
	// LayoutVirtualHosts gives every virtual host its own resource
	// ("vhost|<listener key>|<hostname>", the listener resource keeps the
	// rest), so a change to one hostname's routes travels and decodes
	// alone, and the version is a hash of the resources' digests
	// (ResourceVersion), which needs no re-encoding.
	LayoutVirtualHosts
	// LayoutVersionBuckets has the resources of LayoutVirtualHosts and a
	// version whose cost follows what changed rather than how much there
	// is: a hash of bucket digests (BucketedResourceVersion,
	// version_buckets.go).
	LayoutVersionBuckets
)

// PerHost reports whether l gives every virtual host its own resource
// (the same resources in every such layout: only the version differs).
func (l Layout) PerHost() bool {
	return l == LayoutVirtualHosts || l == LayoutVersionBuckets
}

func (l Layout) String() string {
	switch l {
	case LayoutListeners:
		return "listeners"
	case LayoutVirtualHosts:
		return "virtual-hosts"
	case LayoutVersionBuckets:
		return "version-buckets"
	}
	return fmt.Sprintf("layout(%d)", int(l))
}

// vhostKind is the key kind of a virtual host resource.
const vhostKind = "vhost"

// VirtualHostKey is the resource key of virtual host hostname on the
// listener with key listenerKey (ListenerKey) in LayoutVirtualHosts.
func VirtualHostKey(listenerKey, hostname string) string {
	return vhostKind + "|" + listenerKey + "|" + hostname
}

// ResourcesIn splits a snapshot into keyed resources in layout, sorted by
// key.
func ResourcesIn(layout Layout, s *Snapshot) ([]Resource, error) {
	switch layout {
	case LayoutListeners:
		return Resources(s)
	case LayoutVirtualHosts, LayoutVersionBuckets:
		return (&Encoder{}).Resources(s)
	}
	return nil, fmt.Errorf("unknown resource layout %s", layout)
}

// Encoder is ResourcesIn(LayoutVirtualHosts, ·) for the successive
// snapshots of one scope. It remembers the body of each virtual host it
// encoded: a virtual host of the next snapshot with the same hostname and
// flags and the very same route list (the same slice: snapshots are never
// modified, and a translator that reuses an unchanged host's list says
// thereby that it is unchanged) is not encoded again. So are the rest of
// the snapshot's resources (encode_rest.go). The zero value is ready; an
// Encoder serves one caller at a time.
type Encoder struct {
	// listeners holds, by listener (portKey), the hosts last encoded for it in
	// their order: a normalized snapshot lists a listener's hosts by
	// hostname, so the next one's are matched by walking both lists, with
	// no map of every host to build and probe.
	listeners map[portKey]encodedListener
	// spare holds the lists of the call before the last, whose arrays
	// the next call fills again; bare is that call's scratch list of
	// listeners, which no result keeps.
	spare map[portKey]encodedListener
	bare  []Listener
	// free is the map spare was before the last call, emptied: the next
	// call's listeners (at 2,000 listeners a new map was an eighth of
	// what a change allocated in the controller).
	free map[portKey]encodedListener
	// rest are the encodings of the rest of the last snapshot (its
	// listeners without hosts, endpoint sets, certificates and Gateways:
	// encode_rest.go), restSpare the storage of the call before the
	// last's.
	rest, restSpare encodedRest
	// restOut is the list of the rest's resources the last call returned,
	// restRoom the room the next call lists them in (encode_rest.go).
	restOut, restRoom []Resource
	// run is the scratch list a listener's resources are encoded into
	// before they are cut into chunks (host_chunks.go); mask, when set,
	// is the chunk mask instead of the default (tests).
	run  []Resource
	mask uint32
	// setChunks are the endpoint set resources of the last call, in
	// chunks (as a listener's hosts are: encodeSets).
	setChunks []setChunk
}

// Encoded is a snapshot's resources in a layout PerHost as an Encoder
// makes them: Rest, every resource but the virtual hosts and the endpoint
// sets, in key order, the endpoint sets in chunks (Sets, whose keys sort
// among Rest's: after the certificates), then the virtual hosts of each
// listener, Runs in the order of their key prefixes; a listener's hosts
// are a run of consecutive chunks
// (host_chunks.go), each a HostRun with the listener's prefix. Every key
// of Rest sorts before every virtual host key ("cert", "endpoints",
// "gateway" and "listener" before "vhost"), and no listener key makes a
// prefix of another's, so Rest followed by the runs is the list in key
// order, one per key. A chunk the Encoder took over is the very slice of
// its last call: an unchanged listener, or an unchanged part of one, costs
// nothing to hand on, and a comparison of two Encoded (Diff) skips it at
// once. Never modified once made.
type Encoded struct {
	Rest []Resource
	Sets []HostRun
	Runs []HostRun
}

// setsPrefix is the key prefix of endpoint set resources, and the Prefix
// of Encoded.Sets's chunks.
const setsPrefix = "endpoints|"

// restSplit is how many of e's Rest resources sort before the endpoint
// sets (Sets): the certificates.
func (e Encoded) restSplit() int {
	n, _ := slices.BinarySearchFunc(e.Rest, setsPrefix, func(r Resource, p string) int { return strings.Compare(r.Key, p) })
	return n
}

// HostRun is resources of one listener's virtual hosts, in key order, all
// under Prefix (VirtualHostKey(listener key, "")): all of them, or one
// chunk of them.
type HostRun struct {
	Prefix    string
	Resources []Resource
}

// Len is how many resources e holds.
func (e Encoded) Len() int {
	n := 0
	e.parts(func(part []Resource) bool {
		n += len(part)
		return true
	})
	return n
}

// parts calls f with e's lists of resources in key order (the
// certificates, the chunks of sets, the rest of Rest, then the chunks of
// hosts) until it reports false.
func (e Encoded) parts(f func([]Resource) bool) {
	k := e.restSplit()
	if !f(e.Rest[:k]) {
		return
	}
	for _, run := range e.Sets {
		if !f(run.Resources) {
			return
		}
	}
	if !f(e.Rest[k:]) {
		return
	}
	for _, run := range e.Runs {
		if !f(run.Resources) {
			return
		}
	}
}

// All yields e's resources in key order.
func (e Encoded) All() iter.Seq[Resource] {
	return func(yield func(Resource) bool) {
		e.parts(func(part []Resource) bool {
			for _, r := range part {
				if !yield(r) {
					return false
				}
			}
			return true
		})
	}
}

// Flat is e's resources in one new list, in key order.
func (e Encoded) Flat() []Resource {
	out := make([]Resource, 0, e.Len())
	e.parts(func(part []Resource) bool {
		out = append(out, part...)
		return true
	})
	return out
}

// Diff is what changed from prev to cur: the resources of cur that prev
// lacks or has with another body, and the keys of prev that cur lacks,
// both in key order. A chunk of cur that is prev's very chunk is skipped
// without a look at its resources.
func Diff(prev, cur Encoded) (upserts []Resource, removed []string) {
	pk, ck := prev.restSplit(), cur.restSplit()
	upserts, removed = diffLists(prev.Rest[:pk], cur.Rest[:ck], upserts, removed)
	upserts, removed = diffChunks(prev.Sets, cur.Sets, upserts, removed)
	upserts, removed = diffLists(prev.Rest[pk:], cur.Rest[ck:], upserts, removed)
	p, c := prev.Runs, cur.Runs
	for len(p) > 0 || len(c) > 0 {
		switch {
		case len(c) == 0 || (len(p) > 0 && p[0].Prefix != c[0].Prefix && p[0].Prefix < c[0].Prefix):
			upserts, removed = diffLists(p[0].Resources, nil, upserts, removed)
			p = p[1:]
		case len(p) == 0 || (p[0].Prefix != c[0].Prefix && c[0].Prefix < p[0].Prefix):
			upserts, removed = diffLists(nil, c[0].Resources, upserts, removed)
			c = c[1:]
		default:
			pn, cn := prefixRuns(p), prefixRuns(c)
			upserts, removed = diffChunks(p[:pn], c[:cn], upserts, removed)
			p, c = p[pn:], c[cn:]
		}
	}
	return upserts, removed
}

// diffLists appends to upserts and removed what changed from prev to cur
// (each in key order, one per key).
func diffLists(prev, cur []Resource, upserts []Resource, removed []string) ([]Resource, []string) {
	for len(prev) > 0 || len(cur) > 0 {
		switch {
		case len(prev) == 0 || (len(cur) > 0 && cur[0].Key < prev[0].Key):
			upserts = append(upserts, cur[0])
			cur = cur[1:]
		case len(cur) == 0 || prev[0].Key < cur[0].Key:
			removed = append(removed, prev[0].Key)
			prev = prev[1:]
		default:
			if !SameBody(prev[0].Body, cur[0].Body) {
				upserts = append(upserts, cur[0])
			}
			prev, cur = prev[1:], cur[1:]
		}
	}
	return upserts, removed
}

// encodedListener is the encoding of one listener's virtual hosts: from
// is the first of the host list encoded (the snapshot's own array, which
// it keeps alive), chunks its resources in key order under prefix, cut
// into chunks.
type encodedListener struct {
	// key is the listener's key (ListenerKey), made once.
	key    string
	hosts  []encodedHost
	from   **VirtualHost
	chunks [][]Resource
	prefix string
	// ordered: hosts are in strict key order (the run's order); else
	// the run was sorted.
	ordered bool
}

// portKey is what a listener's key is made of: the Encoder's maps are
// keyed by it, so that a listener's key is made once (at 1,000 Gateways,
// the key of every listener at every call was most of what encoding a
// route change allocated).
type portKey struct {
	port int32
	udp  bool
}

func portKeyOf(l *Listener) portKey { return portKey{l.Port, l.Protocol == ProtocolUDP} }

// takesOver reports whether hosts is the very host list el encoded (a
// snapshot whose listener is unchanged, as an endpoint refresh hands it
// on): its encoding is el's, with no host to look at.
func (el *encodedListener) takesOver(hosts []*VirtualHost) bool {
	return len(hosts) > 0 && len(hosts) == len(el.hosts) && el.from == &hosts[0]
}

// encodedHost is one virtual host's hostname, resource key and body and
// the route list it encoded; vh is the host itself, ends says a chunk
// ends after it (chunkEnds of its key).
type encodedHost struct {
	vh       *VirtualHost
	hostname string
	routes   *Route
	n        int
	single   bool
	ends     bool
	key      string
	body     []byte
}

// encodes reports whether eh is the encoding of vh.
func (eh *encodedHost) encodes(vh *VirtualHost) bool {
	return eh.hostname == vh.Hostname && eh.n == len(vh.Routes) && eh.single == vh.SingleLabelWildcard &&
		(len(vh.Routes) == 0 || eh.routes == &vh.Routes[0])
}

// Resources is ResourcesIn(LayoutVirtualHosts, s): Encode's resources in
// one list.
func (e *Encoder) Resources(s *Snapshot) ([]Resource, error) {
	enc, err := e.Encode(s)
	if err != nil {
		return nil, err
	}
	return enc.Flat(), nil
}

// Encode is s's resources in a layout PerHost, in key order with no key
// twice (a snapshot that would make one, such as two listeners of a key,
// fails), so that its callers need not walk them to check it.
func (e *Encoder) Encode(s *Snapshot) (Encoded, error) {
	next := e.free
	e.free = nil // a failed call leaves no map in two places
	if next == nil {
		next = make(map[portKey]encodedListener, len(s.Listeners))
	}
	bare := lists.Reuse(e.bare, len(s.Listeners))[:len(s.Listeners)] // the listeners without hosts
	runs := make([]HostRun, 0, len(s.Listeners))
	// taken are the listeners whose last encoding was taken over: their
	// lists stay in use, so they are no spare storage.
	var taken []portKey
	for i := range s.Listeners {
		l := s.Listeners[i]
		pk := portKeyOf(&l)
		if _, dup := next[pk]; dup {
			clear(bare)
			return Encoded{}, fmt.Errorf("duplicate resource key %q", "listener|"+ListenerKey(&l))
		}
		last := e.listeners[pk]
		switch {
		case last.takesOver(l.VirtualHosts):
			next[pk] = last
			taken = append(taken, pk)
		case len(l.VirtualHosts) > 0:
			lk, prefix := last.key, last.prefix // the same strings at every call
			if lk == "" {
				lk = ListenerKey(&l)
			}
			if prefix == "" {
				prefix = VirtualHostKey(lk, "")
			}
			el, err := e.encodeHosts(pk, lk, prefix, l.VirtualHosts, last)
			if err != nil {
				clear(bare)
				return Encoded{}, err
			}
			next[pk] = el
		default:
			next[pk] = encodedListener{}
		}
		el := next[pk]
		for _, c := range el.chunks {
			runs = append(runs, HostRun{Prefix: el.prefix, Resources: c})
		}
		l.VirtualHosts = nil
		bare[i] = l
	}
	rest, sets, err := e.restResources(s, bare)
	clear(bare) // no scratch list keeps a snapshot's memory
	e.bare = bare
	if err != nil {
		return Encoded{}, err
	}
	if n := len(rest); n > 0 && rest[n-1].Key >= vhostKind+"|" {
		// A kind of resource that sorts among the hosts: Encoded's order
		// would be wrong.
		return Encoded{}, fmt.Errorf("resource %q sorts among the virtual hosts", rest[n-1].Key)
	}
	// Listeners come in port order, which is not their keys' string
	// order; a listener's chunks stay in theirs.
	slices.SortStableFunc(runs, func(a, b HostRun) int { return strings.Compare(a.Prefix, b.Prefix) })
	if e.spare != nil {
		clear(e.spare) // it keeps no list alive
		e.free = e.spare
	}
	e.spare, e.listeners = e.listeners, next
	for _, pk := range taken {
		delete(e.spare, pk)
	}
	return Encoded{Rest: rest, Sets: sets, Runs: runs}, nil
}

// encodeHosts encodes listener lk's hosts (keys under prefix), those last
// (lk's last encoding) does not hold anew, into chunks, each one of last's
// when its resources are; the list of their encodings is the spare
// storage of lk.
func (e *Encoder) encodeHosts(pk portKey, lk, prefix string, hosts []*VirtualHost, last encodedListener) (encodedListener, error) {
	encoded := lists.Reuse(e.spare[pk].hosts, len(hosts))
	run := lists.Reuse(e.run, len(hosts))
	mask := e.chunkMask()
	prev := last.hosts // by hostname, from the first not yet passed
	// Keys are checked for strict order where a host was encoded anew:
	// two hosts taken over one after the other are in the order they had
	// in last, when last was in order.
	ordered, tookLast := true, false
	for _, vh := range hosts {
		var eh encodedHost
		took := false
		// The very host encoded last (hosts are shared between
		// snapshots, and never modified): taken without a look at it,
		// where reading each of 10,000 hosts scattered over the heap
		// was most of the walk.
		if len(prev) > 0 && prev[0].vh == vh {
			eh, took, prev = prev[0], last.ordered, prev[1:]
			if n := len(run); n > 0 && (!took || !tookLast) && run[n-1].Key >= eh.key {
				ordered = false
			}
			tookLast = took
			encoded = append(encoded, eh)
			run = append(run, Resource{Key: eh.key, Body: eh.body})
			continue
		}
		// Equal first: an unchanged host's name is the very string it
		// had, which equality tells at once and ordering compares byte
		// by byte.
		for len(prev) > 0 && prev[0].hostname != vh.Hostname && prev[0].hostname < vh.Hostname {
			prev = prev[1:]
		}
		if len(prev) > 0 && prev[0].encodes(vh) {
			eh = prev[0]
			// The snapshot's string from now on: a translation that made
			// the name anew would otherwise have every later comparison
			// read both names byte by byte.
			eh.hostname, eh.vh = vh.Hostname, vh
			took = last.ordered
		} else {
			b, err := json.Marshal(vh)
			if err != nil {
				return encodedListener{}, err
			}
			// An equal host made anew (a route compiled again to the same
			// routes) keeps the body it had: the one an Assembler and the
			// forms before hold, not a second copy beside it (3.6 MB at
			// 10,000 routes), and a diff then finds it the same without
			// reading it.
			if len(prev) > 0 && prev[0].hostname == vh.Hostname && bytes.Equal(prev[0].body, b) {
				b = prev[0].body
			}
			eh = encodedHost{vh: vh, hostname: vh.Hostname, n: len(vh.Routes), single: vh.SingleLabelWildcard, body: b}
			if len(prev) > 0 && prev[0].hostname == vh.Hostname {
				eh.key, eh.ends = prev[0].key, prev[0].ends
			} else {
				eh.key = VirtualHostKey(lk, vh.Hostname)
				eh.ends = chunkEnds(eh.key, mask)
			}
			if len(vh.Routes) > 0 {
				eh.routes = &vh.Routes[0]
			}
		}
		if len(prev) > 0 && prev[0].hostname == vh.Hostname {
			// Passed: the next host's name comes after it, and the walk
			// then meets the very string it looks for first.
			prev = prev[1:]
		}
		if n := len(run); n > 0 && (!took || !tookLast) && run[n-1].Key >= eh.key {
			ordered = false
		}
		tookLast = took
		encoded = append(encoded, eh)
		run = append(run, Resource{Key: eh.key, Body: eh.body})
	}
	ends := func(j int) bool { return encoded[j].ends }
	// A normalized snapshot lists a listener's hosts by hostname.
	if !ordered {
		err := sortUnique(run)
		if err != nil {
			clear(run)
			e.run = run[:0]
			return encodedListener{}, err
		}
		ends = func(j int) bool { return chunkEnds(run[j].Key, mask) }
	}
	chunks := chunkRun(run, ends, last.chunks)
	clear(run) // the scratch keeps no body alive
	e.run = run[:0]
	return encodedListener{key: lk, hosts: encoded, from: &hosts[0], chunks: chunks, prefix: prefix, ordered: ordered}, nil
}

// compareKeys orders resources by key.
func compareKeys(a, b Resource) int { return strings.Compare(a.Key, b.Key) }

// inStrictOrder reports whether res is in key order with no key twice.
func inStrictOrder(res []Resource) bool {
	for i := 1; i < len(res); i++ {
		if res[i-1].Key >= res[i].Key {
			return false
		}
	}
	return true
}

// sortUnique sorts res by key, and fails when a key is there twice.
func sortUnique(res []Resource) error {
	slices.SortFunc(res, compareKeys)
	for i := 1; i < len(res); i++ {
		if res[i-1].Key == res[i].Key {
			return fmt.Errorf("duplicate resource key %q", res[i].Key)
		}
	}
	return nil
}

// ResourceVersion is the version of a resource set in LayoutVirtualHosts:
// hex SHA-256 over every key, in order, each followed by a zero byte and
// the SHA-256 of its body. Equal sets have equal versions however they
// were built.
func ResourceVersion(resources []Resource) string {
	sorted := sortedByKey(resources)
	h := newDigestBuffer()
	for _, r := range sorted {
		d := sha256.Sum256(r.Body)
		h.add(r.Key, &d)
	}
	return h.sum()
}

// digestBuffer is a version hash (ResourceVersion) fed in chunks rather
// than a write per resource: at 10,000 resources the writes' overhead was
// most of the hashing. It hashes the same bytes.
type digestBuffer struct {
	h   hash.Hash
	buf []byte
}

func newDigestBuffer() *digestBuffer { return newDigestBufferOf(16 << 10) }

// newDigestBufferOf is a digestBuffer that writes in chunks of size
// bytes.
func newDigestBufferOf(size int) *digestBuffer {
	return &digestBuffer{h: sha256.New(), buf: make([]byte, 0, size)}
}

// add adds one resource: its key, a zero byte and its body's digest.
func (b *digestBuffer) add(key string, digest *[sha256.Size]byte) {
	if len(b.buf)+len(key)+1+len(digest) > cap(b.buf) {
		b.h.Write(b.buf)
		b.buf = b.buf[:0]
	}
	b.buf = append(append(append(b.buf, key...), 0), digest[:]...)
}

// sum is the hex version.
func (b *digestBuffer) sum() string {
	b.h.Write(b.buf)
	b.buf = b.buf[:0]
	return hex.EncodeToString(b.h.Sum(nil))
}

// state is the state of the hash after every resource added so far.
func (b *digestBuffer) state() []byte {
	b.h.Write(b.buf)
	b.buf = b.buf[:0]
	st, err := b.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil // a mark without a state is never resumed from
	}
	return st
}

// digestMark is the state of a version's hash after the first at
// resources of a list.
type digestMark struct {
	at    int
	state []byte
}

// digestMarkEvery is how many resources apart an Assembler marks its
// version's hash: a change resumes it from the last mark before the first
// resource it changes rather than hashing every resource again (at 10,000
// resources that was most of patching a change, in the controller and in
// every proxy). A mark is some hundred bytes.
const digestMarkEvery = 256

// versionOf is the version of list and its marks: the hash resumed from
// the last of marks (made of a list whose first from resources are
// list's) at or before from, or from the start.
func versionOf(list []keptResource, marks []digestMark, from int) (string, []digestMark) {
	keep := 0
	for keep < len(marks) && marks[keep].at <= from && marks[keep].at <= len(list) {
		keep++
	}
	b, start := newDigestBuffer(), 0
	for keep > 0 {
		m := marks[keep-1]
		if m.state != nil && b.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(m.state) == nil {
			start = m.at
			break
		}
		b, keep = newDigestBuffer(), 0 // an unusable mark: from the start
	}
	// Appended to, never written into: a copy of the Assembler shares the
	// marks' array.
	out := marks[:keep:keep]
	for i := start; i < len(list); i++ {
		if i > start && i%digestMarkEvery == 0 {
			out = append(out, digestMark{at: i, state: b.state()})
		}
		b.add(list[i].key, &list[i].d.digest)
	}
	return b.sum(), out
}

// sortedByKey is resources in key order: resources itself when it is
// already in order (as discovery hands them over), else a sorted copy.
func sortedByKey(resources []Resource) []Resource {
	if slices.IsSortedFunc(resources, compareKeys) {
		return resources
	}
	sorted := slices.Clone(resources)
	slices.SortFunc(sorted, compareKeys)
	return sorted
}

// Assembler rebuilds the snapshots of one scope from their resources, in
// one layout. In a layout PerHost it remembers what it decoded: a
// resource whose body is unchanged since the last successful Assemble is
// not decoded, normalized, hashed or validated again, so the cost of a
// delta follows what changed. The snapshots it returns share those decoded
// values and must not be modified (no consumer does: snapshots are
// immutable).
type Assembler struct {
	Scope  Scope
	Layout Layout

	// DigestsOnly keeps of each resource its digest and decoded value, not
	// its body: a resource sent again is then found unchanged by hashing
	// it. For a proxy, whose bodies are its own copies of the wire's
	// (about 3 MB at 10,000 virtual hosts with their endpoint sets); the
	// controller's are the very bodies its encoder keeps, told unchanged
	// without a hash.
	DigestsOnly bool

	// Hosts, when set, gives the virtual host of a resource key instead
	// of its body decoded (Hosts reports false: decoded): a source that
	// encoded the resources itself hands over the snapshot they were
	// encoded from (HostsOf), so that it does not keep a decoded copy of
	// every route besides its own.
	Hosts *HostSource

	// decoded is the resources of the last successful Assemble, in key
	// order: the next one walks them alongside its own, which are in key
	// order too, rather than looking each up by key.
	decoded []keptResource
	// spare is the storage of the list decoded replaced, emptied, which
	// the next Assemble or Apply fills again (at 10,000 resources a new
	// list was a quarter of a megabyte a change, in the controller and in
	// every proxy). An Assembler may be copied to try a change on the
	// copy: both write only to spare storage (keepDecoded).
	spare []keptResource
	// marks are states of the version's hash over decoded, every
	// digestMarkEvery resources (versionOf): LayoutVirtualHosts's.
	marks []digestMark
	// buckets is the version's state in LayoutVersionBuckets.
	buckets *versionBuckets
	// sets is how many endpoint sets it had, to allocate the next
	// snapshot's at once rather than grow them.
	sets int
	// last is the snapshot of the last successful Assemble or Apply, and
	// listenerAt the index of each of its listeners by key: the baseline
	// Apply patches (apply.go).
	last       *Snapshot
	listenerAt map[string]int
}

// keepDecoded makes next the decoded resources, and the list it replaces
// the spare one. That list is not cleared: a copy of the Assembler (a
// discovery client tries a change on one, keeping the original should it
// fail) shares it as the original's decoded list; only the spare
// storage, which no copy reads, is ever written.
func (a *Assembler) keepDecoded(next []keptResource) {
	a.decoded, a.spare = next, a.decoded[:0]
}

// keptResource is one remembered resource and its key.
type keptResource struct {
	key string
	d   *decodedResource
}

// pendingHost is a decoded virtual host waiting for its listener; known
// when it is unchanged since the last successful Assemble.
type pendingHost struct {
	listener string
	vh       *VirtualHost
	known    bool
}

// decodedResource is one resource body and what it decodes to.
type decodedResource struct {
	body   []byte // nil: not kept (DigestsOnly; no body decodes when empty)
	digest [sha256.Size]byte
	value  any // Listener (without virtual hosts), *VirtualHost, *EndpointSet, Certificate or GatewayRef; nil: not kept (keep)
}

// sameBody reports whether body is d's: by the bodies when d keeps its
// own, else by digest, then returning body's.
func (d *decodedResource) sameBody(body []byte) (same bool, digest *[sha256.Size]byte) {
	if d.body != nil {
		return SameBody(d.body, body), nil
	}
	sum := sha256.Sum256(body)
	return sum == d.digest, &sum
}

// keep is what the assembler keeps of a resource body decoded to v;
// digest is body's when already known. A value taken from the source
// (Hosts) is not kept with a body: the source's next snapshot has its
// own, and the one kept would hold a host, and its routes, that the
// translator has since made again as equal ones (a route's status
// written is a new object, compiled again to the same routes), a second
// copy of each for as long as the body stands (5.7 MB of route lists at
// 10,000 routes).
func (a *Assembler) keep(body []byte, digest *[sha256.Size]byte, v any, sourced bool) *decodedResource {
	d := &decodedResource{value: v}
	if sourced && !a.DigestsOnly {
		d.value = nil // valueOf finds it again
	}
	if digest != nil {
		d.digest = *digest
	} else {
		d.digest = sha256.Sum256(body)
	}
	if !a.DigestsOnly {
		d.body = body
	}
	return d
}

// SameBody reports equal bodies, at once when they are the same bytes
// (discovery hands unchanged resources over as the very bodies it had).
func SameBody(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}

// Assemble rebuilds and validates the snapshot of resources (any order)
// and returns it with its version in the assembler's layout. A failure
// leaves what the assembler remembers unchanged.
func (a *Assembler) Assemble(resources []Resource) (*Snapshot, string, error) {
	return a.assemble(resources, false)
}

// assemble is Assemble; nilKept takes a resource without a body for the
// one of its key last assembled (Apply's merge, when bodies are not kept).
func (a *Assembler) assemble(resources []Resource, nilKept bool) (*Snapshot, string, error) {
	switch a.Layout {
	case LayoutListeners:
		s, err := Assemble(a.Scope, resources)
		if err != nil {
			return nil, "", err
		}
		v, err := Version(s)
		if err != nil {
			return nil, "", err
		}
		return s, v, nil
	case LayoutVirtualHosts, LayoutVersionBuckets:
	default:
		return nil, "", fmt.Errorf("unknown resource layout %s", a.Layout)
	}
	marked := a.Layout == LayoutVirtualHosts
	sorted := sortedByKey(resources)
	prev, j := a.decoded, 0
	next := lists.Reuse(a.spare, len(sorted))
	// setGone says an endpoint set of the last Assemble is not listed.
	setGone := false
	skipTo := func(key string) {
		for j < len(prev) && prev[j].key < key {
			setGone = setGone || strings.HasPrefix(prev[j].key, "endpoints|")
			j++
		}
	}
	version := newDigestBuffer()
	var hashMarks []digestMark
	s := &Snapshot{Scope: a.Scope, EndpointSets: make([]*EndpointSet, 0, a.sets)}
	listenerAt := map[string]int{} // listener key → index in s.Listeners
	hosts := make([]pendingHost, 0, len(sorted))
	setKnown := make([]bool, 0, a.sets)
	for i, r := range sorted {
		if i > 0 && sorted[i-1].Key == r.Key {
			return nil, "", fmt.Errorf("duplicate resource key %q", r.Key)
		}
		var d *decodedResource
		if j < len(prev) && prev[j].key != r.Key {
			skipTo(r.Key)
		}
		if j < len(prev) && prev[j].key == r.Key {
			d = prev[j].d
			j++
		}
		known := false
		var digest *[sha256.Size]byte
		switch {
		case d == nil:
		case nilKept && r.Body == nil:
			known = true
		default:
			known, digest = d.sameBody(r.Body)
		}
		var v any
		if !known {
			var sourced bool
			var err error
			if v, sourced, err = a.decode(r); err != nil {
				return nil, "", fmt.Errorf("resource %q: %w", r.Key, err)
			}
			d = a.keep(r.Body, digest, v, sourced)
		} else {
			var err error
			if v, err = a.valueOf(r, d); err != nil {
				return nil, "", fmt.Errorf("resource %q: %w", r.Key, err)
			}
		}
		next = append(next, keptResource{r.Key, d})
		if marked {
			if i > 0 && i%digestMarkEvery == 0 {
				hashMarks = append(hashMarks, digestMark{at: i, state: version.state()})
			}
			version.add(r.Key, &d.digest)
		}
		switch v := v.(type) {
		case Listener:
			listenerAt[ListenerKey(&v)] = len(s.Listeners)
			s.Listeners = append(s.Listeners, v)
		case *VirtualHost:
			rest, _ := strings.CutPrefix(r.Key, vhostKind+"|")
			lk, _, _ := strings.Cut(rest, "|")
			hosts = append(hosts, pendingHost{lk, v, known})
		case *EndpointSet:
			s.EndpointSets = append(s.EndpointSets, v)
			setKnown = append(setKnown, known)
		case Certificate:
			s.Certificates = append(s.Certificates, v)
		case GatewayRef:
			s.Gateways = append(s.Gateways, v)
		}
	}
	for ; j < len(prev); j++ { // the rest are gone

		setGone = setGone || strings.HasPrefix(prev[j].key, "endpoints|")
	}
	// What was validated before still is unless an endpoint set it may
	// name is gone: then every route is checked again.
	trust := !setGone
	perListener := make([]int, len(s.Listeners))
	for _, h := range hosts {
		i, ok := listenerAt[h.listener]
		if !ok {
			return nil, "", fmt.Errorf("resource %q: no listener %q", VirtualHostKey(h.listener, h.vh.Hostname), h.listener)
		}
		perListener[i]++
	}
	marks := make(map[string][]bool, len(s.Listeners)) // listener key → its hosts'
	for i, n := range perListener {
		// Every listener's list is new (decoded listeners carry none), so
		// filling it never writes into a remembered value.
		s.Listeners[i].VirtualHosts = make([]*VirtualHost, 0, n)
	}
	for _, h := range hosts {
		i := listenerAt[h.listener]
		s.Listeners[i].VirtualHosts = append(s.Listeners[i].VirtualHosts, h.vh)
		marks[h.listener] = append(marks[h.listener], trust && h.known)
	}
	// Resources come in key order, so the endpoint sets and each
	// listener's hosts are in order already (checked: a mark is only
	// good for the position it was made at).
	if !trust || !slices.IsSortedFunc(s.EndpointSets, func(a, b *EndpointSet) int { return strings.Compare(a.Name, b.Name) }) {
		setKnown = nil
	}
	normalizeTop(s)
	known := &validated{hosts: make([][]bool, len(s.Listeners)), sets: setKnown}
	if known.sets == nil {
		known.sets = make([]bool, len(s.EndpointSets))
	}
	for i := range s.Listeners {
		l := &s.Listeners[i]
		if !slices.IsSortedFunc(l.VirtualHosts, compareHostnames) {
			sortVirtualHosts(l.VirtualHosts)
			continue // nil marks: every host checked, uniqueness too
		}
		known.hosts[i] = marks[ListenerKey(l)]
	}
	if err := validate(s, known); err != nil {
		return nil, "", err
	}
	var v string
	var buckets *versionBuckets
	if marked {
		v = version.sum()
	} else {
		buckets = newVersionBuckets(next)
		v = buckets.version()
	}
	a.keepDecoded(next)
	a.sets, a.marks, a.buckets = len(s.EndpointSets), hashMarks, buckets
	a.last, a.listenerAt = s, listenerIndex(s)
	return s, v, nil
}

// decodeResource strictly decodes one resource of a layout PerHost and
// sorts the lists inside it that carry no order.
func decodeResource(r Resource) (any, error) {
	kind, name, ok := strings.Cut(r.Key, "|")
	if !ok {
		return nil, fmt.Errorf("resource key %q has no kind", r.Key)
	}
	switch kind {
	case "listener":
		var l Listener
		if err := strictUnmarshal(r.Body, &l); err != nil {
			return nil, err
		}
		if len(l.VirtualHosts) > 0 {
			return nil, errors.New("a listener resource carries virtual hosts in a layout of a resource per virtual host")
		}
		if k := ListenerKey(&l); k != name {
			return nil, fmt.Errorf("listener %q under key %q", k, r.Key)
		}
		sortStreamRoutes(l.StreamRoutes)
		return l, nil
	case vhostKind:
		lk, host, ok := strings.Cut(name, "|")
		if !ok || lk == "" {
			return nil, fmt.Errorf("virtual host key %q has no listener", r.Key)
		}
		vh := new(VirtualHost)
		if err := strictUnmarshal(r.Body, vh); err != nil {
			return nil, err
		}
		if vh.Hostname != host {
			return nil, fmt.Errorf("virtual host %q under key %q", vh.Hostname, r.Key)
		}
		return vh, nil
	case "endpoints":
		e := new(EndpointSet)
		if err := strictUnmarshal(r.Body, e); err != nil {
			return nil, err
		}
		if e.Name != name {
			return nil, fmt.Errorf("endpoint set %q under key %q", e.Name, r.Key)
		}
		sortEndpoints(e.Endpoints)
		return e, nil
	case "cert":
		var c Certificate
		if err := strictUnmarshal(r.Body, &c); err != nil {
			return nil, err
		}
		if c.Name != name {
			return nil, fmt.Errorf("certificate %q under key %q", c.Name, r.Key)
		}
		return c, nil
	case "gateway":
		var g GatewayRef
		if err := strictUnmarshal(r.Body, &g); err != nil {
			return nil, err
		}
		if g.Namespace+"/"+g.Name != name {
			return nil, fmt.Errorf("gateway %s/%s under key %q", g.Namespace, g.Name, r.Key)
		}
		return g, nil
	}
	return nil, fmt.Errorf("resource key %q: unknown kind %q", r.Key, kind)
}
