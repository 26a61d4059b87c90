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
	"net/http"
	"time"
)

// The termination drain. A proxy being replaced must not reset a single
// request: load balancers (kube-proxy, a cloud LB) take a moment to stop
// sending it new connections, and clients hold keep-alive connections that
// only they can close without a race. So, on SIGTERM, the proxy
//
//  1. reports not ready (/readyz 503) for good;
//  2. keeps accepting and serving for the drain window, and ends every
//     connection after its next response: HTTP/1.x responses carry
//     "Connection: close", HTTP/2 connections get GOAWAY, so each client
//     reconnects - through the converged endpoints, to another replica;
//  3. then closes its listeners, lets in-flight requests finish (bounded)
//     and exits.
//
// Closing idle keep-alive connections at once (http.Server's
// SetKeepAlivesEnabled(false) does) would race with requests already on
// the wire and reset them; only connections that stay idle for the whole
// window are closed that way, in step 3.
//
// Stream connections (TLS and TCP listeners) carry no response to end
// them: they go on through the window and, in step 3, until the shutdown
// bound, then are closed; UDP sessions end when step 3 closes their
// listener.

// BeginDrain starts step 2: the proxy turns not ready and, from now on,
// every response ends its connection. Listeners keep accepting.
func (d *DataPlane) BeginDrain() {
	if d.opts.Readiness != nil {
		d.opts.Readiness.ShuttingDown()
	}
	d.drainFlag.Store(true)
}

// draining reports whether BeginDrain was called; the fast path checks it
// for every response it writes.
func (d *DataPlane) draining() bool { return d.drainFlag.Load() }

// closeWhenDraining makes net/http end the connection after this response
// while draining: "Connection: close" on HTTP/1.x, and on HTTP/2 the server
// takes the header as a request for a graceful GOAWAY (and drops it).
// Upgrades write their own response head, so they are unaffected.
func (d *DataPlane) closeWhenDraining(w http.ResponseWriter) {
	if d.draining() {
		w.Header()["Connection"] = []string{"close"}
	}
}

// drain runs steps 1 and 2 for window; the caller then shuts the data
// plane down. A proxy that bound no listener has nothing to drain.
func drain(dp *DataPlane, window time.Duration) {
	dp.BeginDrain()
	if window <= 0 || len(dp.BoundPorts()) == 0 {
		return
	}
	dp.log.Info("draining before shutdown: serving with Connection: close", "window", window)
	time.Sleep(window)
}
