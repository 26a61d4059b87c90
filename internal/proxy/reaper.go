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

package proxy

import (
	"time"
)

// maxReapInterval bounds how long a connection the upstream closed may
// sit in CLOSE_WAIT in the lean client's pool. Each round probes every
// idle connection with one non-blocking syscall.
const maxReapInterval = 5 * time.Second

// reapInterval is how often idle upstream connections are checked.
func reapInterval(idleTimeout time.Duration) time.Duration {
	return min(idleTimeout/2, maxReapInterval)
}

// liveAddrs are the pool keys (poolKey: endpoint addresses, with the TLS
// fingerprint of a TLS set) a state may send requests through.
func liveAddrs(st *state) map[string]struct{} {
	live := map[string]struct{}{}
	if st == nil {
		return live
	}
	for _, es := range st.sets.list {
		for _, ep := range es.eps {
			live[ep.key] = struct{}{}
		}
	}
	return live
}

// keyCounts counts how many endpoints of the state in force's sets have
// each pool key (poolKey: an endpoint address, with the TLS fingerprint
// of a TLS set): a key may be in several sets. Swaps are serialised
// (DataPlane.apply), and so are its moves.
type keyCounts struct {
	n map[string]int32
}

// move makes the counts next's where they were prev's (nil: none), and
// returns the keys of prev that next no longer has: addresses that left,
// and those whose set's TLS settings changed. Only the sets that are not
// the very ones of prev are looked at (changedSets). At 10,000 sets,
// reading every key of next to see whether another set still had one
// that left a set was most of what the proxy did under endpoint churn.
func (k *keyCounts) move(prev, next *state) []string {
	var from []*endpointSet
	if prev != nil {
		from = prev.sets.list
	}
	if k.n == nil {
		k.n = map[string]int32{}
		for _, es := range from {
			for _, ep := range es.eps {
				k.n[ep.key]++
			}
		}
	}
	var left []string
	for o, n := range changedSets(from, next.sets.list) {
		if o != nil {
			for _, ep := range o.eps {
				k.n[ep.key]--
				left = append(left, ep.key)
			}
		}
		if n != nil {
			for _, ep := range n.eps {
				k.n[ep.key]++
			}
		}
	}
	var gone []string
	for _, key := range left {
		if c, ok := k.n[key]; ok && c <= 0 {
			delete(k.n, key)
			gone = append(gone, key)
		}
	}
	return gone
}

// dropUpstreams closes the idle upstream connections of the pool keys
// that left the snapshot, in both upstream clients: so a set whose TLS
// settings changed (or whose client certificate rotated) never has a
// connection made under the old ones reused.
func (d *DataPlane) dropUpstreams(prev, next *state) {
	gone := d.keys.move(prev, next)
	if len(gone) == 0 {
		return
	}
	if d.lean != nil {
		d.lean.drop(gone)
	}
	d.h1.drop(gone)
	d.h2c.drop(gone)
}

// startReaper reaps idle upstream connections every interval until the
// data plane is shut down: idle past the timeout, closed by the upstream,
// or left behind for an address that is gone (a request that was in
// flight when its address was dropped pools its connection afterwards).
// A timer rather than a goroutine: nothing is left running after
// Shutdown but one last tick that sees it.
func (d *DataPlane) startReaper(interval time.Duration) {
	var seen *state
	var live map[string]struct{}
	var tick func()
	tick = func() {
		d.mu.Lock()
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return
		}
		if st := d.state.Load(); st != nil {
			if st != seen {
				seen, live = st, liveAddrs(st)
			}
			if d.lean != nil {
				d.lean.reap(time.Now(), live)
			}
			d.h1.retain(live)
			d.h2c.retain(live)
		}
		time.AfterFunc(interval, tick)
	}
	time.AfterFunc(interval, tick)
}
