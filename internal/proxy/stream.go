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

// The stream listeners: TLS, routed by the SNI of the ClientHello, and TCP
// and UDP, with one route each. This file is their compile half and the
// route pick; stream_tcp.go serves TLS and TCP connections, stream_sni.go
// reads the ClientHello, stream_udp.go serves UDP datagrams.

import (
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// defaultUDPIdleTimeout ends a UDP session whose listener sets no
// UDPIdleTimeout.
const defaultUDPIdleTimeout = 10 * time.Second

// streamListener is a compiled TLS, TCP or UDP listener.
type streamListener struct {
	name string
	kind listenerKind
	// exact and wild (keyed by the suffix of "*.<suffix>") hold a TLS
	// listener's routes by SNI; any is "*" there and the one route of a
	// TCP or UDP listener.
	exact map[string]*streamRoute
	wild  map[string]*streamRoute
	any   *streamRoute
	// tlsConfig terminates TLS for terminating routes, with the
	// listener's certificates; nil when it has none.
	tlsConfig *tls.Config
	udpIdle   time.Duration
	// unrouted counts the connections that reached no route.
	unrouted *streamStats
	// active counts open connections (TLS, TCP) or sessions (UDP).
	active  prometheus.Gauge
	dropped [numDropReasons]prometheus.Counter
}

// streamRoute is one compiled StreamRoute.
type streamRoute struct {
	id        string
	terminate bool
	weightedBackends
	stats *streamStats
}

// streamOutcome is how a stream connection (or UDP session) ended up.
type streamOutcome uint8

// The outcomes, as coxswain_proxy_stream_connections_total labels them.
const (
	// outcomeForwarded: spliced to a backend (whatever happened later).
	outcomeForwarded streamOutcome = iota
	// outcomeNoRoute: no route took it (an SNI no route serves, or a
	// TCP listener without its route).
	outcomeNoRoute
	// outcomeRefused: the pick landed on an invalid backend, no weight or
	// no endpoint.
	outcomeRefused
	// outcomeDialError: the endpoint could not be connected.
	outcomeDialError
	// outcomePeekError: no ClientHello within the time and size bound, or
	// a terminating handshake that failed.
	outcomePeekError
	numOutcomes
)

func (o streamOutcome) String() string {
	return [...]string{"forwarded", "no_route", "refused", "dial_error", "peek_error"}[o]
}

// dropReason is why a UDP datagram was dropped.
type dropReason uint8

// The drop reasons, as coxswain_proxy_udp_datagrams_dropped_total labels
// them.
const (
	dropNoRoute dropReason = iota
	dropRefused
	dropSessionLimit
	dropDialError
	dropSendError
	numDropReasons
)

func (r dropReason) String() string {
	return [...]string{"no_route", "refused", "session_limit", "dial_error", "send_error"}[r]
}

// streamStats are the counters of one (listener, stream route); route ""
// counts what reached no route.
type streamStats struct {
	m               *metrics
	listener, route string
	forwarded       prometheus.Counter
	rx, tx          prometheus.Counter
}

// newStreamStats makes the counters of a route; route "" (what reached no
// route) forwards nothing, so it has only the counters of count.
func (m *metrics) newStreamStats(listener, route string) *streamStats {
	s := &streamStats{m: m, listener: listener, route: route}
	if route != "" {
		s.forwarded = m.streamConns.WithLabelValues(listener, route, outcomeForwarded.String())
		s.rx = m.streamBytes.WithLabelValues(listener, route, "rx")
		s.tx = m.streamBytes.WithLabelValues(listener, route, "tx")
	}
	return s
}

// count counts one connection's outcome; the rare ones look their counter
// up when they happen, so a route has no series for outcomes it never had.
func (s *streamStats) count(o streamOutcome) {
	if o == outcomeForwarded {
		s.forwarded.Inc()
		return
	}
	s.m.streamConns.WithLabelValues(s.listener, s.route, o.String()).Inc()
}

// compileStreamListener compiles a TLS, TCP or UDP listener: its routes by
// SNI, the TLS configuration of its terminating routes, its metric
// handles.
func (c *compiler) compileStreamListener(l *snapshot.Listener) (*streamListener, error) {
	sl := &streamListener{
		name:     l.Name,
		kind:     kindOf(l.Protocol),
		exact:    map[string]*streamRoute{},
		wild:     map[string]*streamRoute{},
		unrouted: c.m.newStreamStats(l.Name, ""),
	}
	if sl.kind == kindUDP {
		sl.udpIdle = l.UDPIdleTimeout.D()
		if sl.udpIdle <= 0 {
			sl.udpIdle = defaultUDPIdleTimeout
		}
		sl.active = c.m.udpSessions.WithLabelValues(l.Name)
		for r := range numDropReasons {
			sl.dropped[r] = c.m.udpDropped.WithLabelValues(l.Name, r.String())
		}
	} else {
		sl.active = c.m.streamActive.WithLabelValues(l.Name)
	}
	if l.TLS != nil && len(l.TLS.Certificates) > 0 {
		certs := compileCertSet(l.TLS.Certificates, c.st.certs)
		// One configuration per compiled listener, so session tickets
		// issued under it resume until the next snapshot. No ALPN: the
		// stream after the handshake is the backend's, whatever it speaks.
		sl.tlsConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				if crt := certs.get(hello.ServerName); crt != nil {
					return crt, nil
				}
				return nil, fmt.Errorf("no certificate for server name %q", hello.ServerName)
			},
		}
	}
	for i := range l.StreamRoutes {
		in := &l.StreamRoutes[i]
		r := &streamRoute{id: in.ID, terminate: in.Terminate, stats: c.m.newStreamStats(l.Name, in.ID)}
		if err := r.compileBackends(in.Backends, c.set); err != nil {
			return nil, fmt.Errorf("listener %s stream route %s: %w", l.Name, in.ID, err)
		}
		switch h := in.Hostname; {
		case h == "" || h == "*":
			sl.any = r
		case strings.HasPrefix(h, "*."):
			sl.wild[h[2:]] = r
		default:
			sl.exact[h] = r
		}
	}
	return sl, nil
}

// route picks the route of a TLS connection by its SNI: the exact name,
// else the longest wildcard suffix that follows at least one label, else
// "*" (nil for none). SNI is case-insensitive; crypto/tls already refused
// a name with a trailing dot. TCP and UDP listeners have their one route
// under "*", which any name (also none) reaches.
func (sl *streamListener) route(sni string) *streamRoute {
	if sni != "" && (len(sl.exact) > 0 || len(sl.wild) > 0) {
		h := strings.ToLower(sni)
		if r, ok := sl.exact[h]; ok {
			return r
		}
		for i := 1; i < len(h); i++ {
			if h[i] == '.' {
				if r, ok := sl.wild[h[i+1:]]; ok {
					return r
				}
			}
		}
	}
	return sl.any
}

// pickStream picks the backend and endpoint of a connection on r: nil when
// r refuses it (an invalid backend's share, no weight, no endpoint).
func (r *streamRoute) pickStream() *endpoint {
	b, ep := r.pick()
	if b == nil || b.invalid {
		return nil
	}
	return ep
}
