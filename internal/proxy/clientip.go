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
	"net"
	"net/http"
	"net/netip"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// clientIPPolicy derives a request's client IP (snapshot.ClientIPDetection).
// A nil policy takes the connection's peer.
type clientIPPolicy struct{}

// compileClientIP compiles a route's detection, else its listener's.
func compileClientIP(in *snapshot.ClientIPDetection, lr *listenerRouter) (*clientIPPolicy, error) {
	return nil, nil
}

// clientIP is the request's client address (the zero Addr when the peer
// address cannot be parsed).
func (p *clientIPPolicy) clientIP(r *http.Request) netip.Addr {
	return peerIP(r)
}

// peerIP is the address of the connection's peer.
func peerIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}
