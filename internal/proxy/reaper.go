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
	"slices"
	"time"

	"github.com/coxswain-go/coxswain/internal/lists"
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

// goneAddrs are the pool keys (poolKey: endpoint addresses, with the
// TLS fingerprint of a TLS set) of prev that next no longer has:
// addresses that left, and those whose set's TLS settings changed.
//
// Only the sets that are not the very ones of prev can have lost one, so
// both states' sets (in name order) are walked side by side for them;
// a key they lost is gone unless another set of next still has it. At
// 10,000 sets, a map of every key of both states at every swap was most
// of what the proxy did under endpoint churn.
func goneAddrs(prev, next *state) []string {
	if prev == nil {
		return nil
	}
	a, b := prev.sets.list, next.sets.list
	if len(a) == len(b) && lists.Same(a, b) {
		return nil
	}
	var lost map[string]struct{}
	lose := func(key string) {
		if lost == nil {
			lost = map[string]struct{}{}
		}
		lost[key] = struct{}{}
	}
	for i, j := 0, 0; i < len(a); {
		switch {
		case j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && b[j].name < a[i].name:
			j++ // a set added: it loses nothing
		case j < len(b) && b[j].name == a[i].name:
			for _, ep := range a[i].eps {
				if !slices.ContainsFunc(b[j].eps, func(e *endpoint) bool { return e.key == ep.key }) {
					lose(ep.key)
				}
			}
			i, j = i+1, j+1
		default: // a set gone
			for _, ep := range a[i].eps {
				lose(ep.key)
			}
			i++
		}
	}
	for _, es := range b {
		if len(lost) == 0 {
			return nil
		}
		for _, ep := range es.eps {
			delete(lost, ep.key)
		}
	}
	gone := make([]string, 0, len(lost))
	for key := range lost {
		gone = append(gone, key)
	}
	return gone
}

// dropUpstreams closes the idle upstream connections of the pool keys
// that left the snapshot, in both upstream clients: so a set whose TLS
// settings changed (or whose client certificate rotated) never has a
// connection made under the old ones reused.
func (d *DataPlane) dropUpstreams(prev, next *state) {
	gone := goneAddrs(prev, next)
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
