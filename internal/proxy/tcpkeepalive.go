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
	"context"
	"crypto/tls"
	"net"
	"time"
)

// TCP keep-alive probes on client connections. Go's listeners turn them
// on for every accepted connection: four setsockopt calls, a tenth of the
// CPU of a request that comes on a connection of its own. The fast path's
// listeners accept without them, and a connection gets them once it
// outlives its first request (it is kept alive for a next one) or goes to
// net/http (HTTP/2, upgrades, any head the fast path does not serve),
// where it may stay open for long. A connection closed after one request
// never pays for them. nginx, HAProxy and Envoy send no probes on client
// connections unless configured to; this keeps Go's probes, with Go's
// timing, where a connection can live long.

// clientKeepAlive is what Go's listeners set on accepted connections.
var clientKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 15 * time.Second, Count: 9}

// listenTCP binds a TCP listener whose accepted connections get TCP
// keep-alive probes (clientKeepAlive) only when keepAlive is true.
func listenTCP(network, address string, keepAlive bool) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	if keepAlive {
		lc = net.ListenConfig{KeepAliveConfig: clientKeepAlive}
	}
	return lc.Listen(context.Background(), network, address)
}

// enableKeepAlive turns clientKeepAlive on for the TCP connection under
// c (a PROXY protocol connection or a TLS one unwrapped).
func enableKeepAlive(c net.Conn) {
	for {
		switch t := c.(type) {
		case *net.TCPConn:
			_ = t.SetKeepAliveConfig(clientKeepAlive)
			return
		case *proxiedConn:
			c = t.Conn
		case *tls.Conn:
			c = t.NetConn()
		case *coalescingConn:
			c = t.Conn
		default:
			return
		}
	}
}
