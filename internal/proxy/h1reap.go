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

// The lean client has no goroutine per connection watching it while it
// is idle (that is what keeps its requests cheap), so nothing notices
// when an upstream closes a pooled connection or leaves the snapshot:
// without reaping, such sockets sit in CLOSE_WAIT until a request happens
// to pick them. The data plane drops the pools whose keys (poolKey) leave
// the snapshot on Apply and calls reap on a timer.

// drop closes the idle connections of the pools keyed by keys (poolKey)
// and forgets those pools.
func (c *h1Client) drop(keys []string) {
	c.mu.Lock()
	var closing []*h1Conn
	for _, key := range keys {
		closing = append(closing, c.idle[key]...)
		delete(c.idle, key)
	}
	c.mu.Unlock()
	closeConns(closing)
}

// reap closes idle connections that are past the idle timeout, that the
// upstream closed (or wrote to unasked), or whose pool key is not live.
// It checks one pool at a time, out of the pool, so that no request can
// pick a connection while it is being probed and requests to other pools
// never wait for the probes. A TLS connection is probed on its socket: a
// close_notify, like any byte nobody asked for, makes it unusable.
func (c *h1Client) reap(now time.Time, live map[string]struct{}) {
	c.mu.Lock()
	keys := make([]string, 0, len(c.idle))
	for key := range c.idle {
		keys = append(keys, key)
	}
	c.mu.Unlock()
	for _, key := range keys {
		if _, ok := live[key]; !ok {
			c.drop([]string{key})
			continue
		}
		c.mu.Lock()
		taken := c.idle[key]
		delete(c.idle, key)
		c.mu.Unlock()
		keep := taken[:0]
		var closing []*h1Conn
		for _, pc := range taken {
			if pc.expired(now) || peerClosed(pc.raw) {
				closing = append(closing, pc)
				continue
			}
			keep = append(keep, pc)
		}
		closeConns(closing)
		c.giveBack(key, keep)
	}
}

// giveBack returns probed connections to the front of their pool: they
// are older than any put there meanwhile, and get takes from the back.
func (c *h1Client) giveBack(key string, conns []*h1Conn) {
	if len(conns) == 0 {
		return
	}
	c.mu.Lock()
	merged := append(conns, c.idle[key]...)
	var excess []*h1Conn
	if len(merged) > c.maxIdle {
		excess = merged[:len(merged)-c.maxIdle]
		merged = merged[len(merged)-c.maxIdle:]
	}
	c.idle[key] = merged
	c.mu.Unlock()
	closeConns(excess)
}

func closeConns(conns []*h1Conn) {
	for _, pc := range conns {
		_ = pc.nc.Close()
	}
}
