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
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the data plane's Prometheus collectors.
type metrics struct {
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec
	snapshotInfo   *prometheus.GaugeVec
	applies        *prometheus.CounterVec
	activeConns    prometheus.Gauge
	mirrorsDropped prometheus.Counter
	retries        *prometheus.CounterVec
	// The stream listeners' (stream.go).
	streamConns  *prometheus.CounterVec
	streamActive *prometheus.GaugeVec
	streamBytes  *prometheus.CounterVec
	udpSessions  *prometheus.GaugeVec
	udpDropped   *prometheus.CounterVec
	// mu serialises snapshot info updates.
	mu sync.Mutex
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_requests_total",
			Help: "Requests served, by listener, route ID, method and status code.",
		}, []string{"listener", "route", "method", "status_code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coxswain_proxy_request_duration_seconds",
			Help:    "Time from receiving a request to finishing its response, by listener.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"listener"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_upstream_errors_total",
			Help: "Upstream failures answered to clients, by route ID and kind (connect, timeout, protocol, tls, no_endpoints, invalid_backend, overloaded, ext_auth).",
		}, []string{"route", "kind"}),
		snapshotInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coxswain_proxy_snapshot_info",
			Help: "1 for the version of the routing snapshot currently applied.",
		}, []string{"version"}),
		applies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_snapshot_applies_total",
			Help: "Snapshot applies by result (success or error).",
		}, []string{"result"}),
		activeConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_active_connections",
			Help: "Client connections currently open on the proxy's listeners.",
		}),
		mirrorsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_mirror_dropped_total",
			Help: "Mirrored requests not sent because the mirror queue was full or the body was above the tee cap.",
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_retries_total",
			Help: "Requests sent again under their route's retry policy, by route ID and reason (status, connect, timeout).",
		}, []string{"route", "reason"}),
		streamConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_stream_connections_total",
			Help: "Connections of TLS and TCP listeners and sessions of UDP listeners, by listener, route ID and outcome " +
				"(forwarded, no_route, refused, dial_error, peek_error). A UDP datagram that opens no session is counted in coxswain_proxy_udp_datagrams_dropped_total instead.",
		}, []string{"listener", "route", "outcome"}),
		streamActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coxswain_proxy_stream_active_connections",
			Help: "Connections currently open on a TLS or TCP listener.",
		}, []string{"listener"}),
		streamBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_stream_bytes_total",
			Help: "Bytes relayed by stream listeners, by listener, route ID and direction (rx: from the client, tx: to the client).",
		}, []string{"listener", "route", "direction"}),
		udpSessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coxswain_proxy_udp_sessions_active",
			Help: "UDP sessions currently open on a UDP listener.",
		}, []string{"listener"}),
		udpDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_proxy_udp_datagrams_dropped_total",
			Help: "UDP datagrams dropped, by listener and reason (no_route, refused, session_limit, dial_error, send_error).",
		}, []string{"listener", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.upstreamErrors, m.snapshotInfo, m.applies, m.activeConns, m.mirrorsDropped, m.retries,
			m.streamConns, m.streamActive, m.streamBytes, m.udpSessions, m.udpDropped)
	}
	return m
}

func (m *metrics) setVersion(v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snapshotInfo.Reset()
	m.snapshotInfo.WithLabelValues(v).Set(1)
}

// routeStats caches the counters of one (listener, route) so the request
// path does not hash label values: a copy-on-write map keyed by method and
// status, read with one atomic load.
type routeStats struct {
	m        *metrics
	listener string
	route    string
	counters atomic.Pointer[map[uint32]prometheus.Counter]
	// duration is the listener's request duration histogram, looked up at
	// the first request (observe): a listener that served none has no
	// series, and a shared pool of 1,000 idle Gateways no thousand
	// histograms (about 1.5 KB of heap each).
	duration atomic.Pointer[observer]
	mu       sync.Mutex
}

type observer struct{ prometheus.Observer }

func (m *metrics) newRouteStats(listener, route string) *routeStats {
	rs := &routeStats{m: m, listener: listener, route: route}
	rs.counters.Store(&noCounters)
	return rs
}

// observe records a request's duration in seconds.
func (rs *routeStats) observe(seconds float64) {
	o := rs.duration.Load()
	if o == nil {
		// Two first requests at once store the same histogram.
		o = &observer{rs.m.duration.WithLabelValues(rs.listener)}
		rs.duration.Store(o)
	}
	o.Observe(seconds)
}

// noCounters is the counters of every routeStats that has counted no
// request yet: inc never writes to a map it loads, only to its copy, so
// they share it rather than hold an empty map each.
var noCounters map[uint32]prometheus.Counter

// methods is an array so that its length, the index of every other method,
// is a constant.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

func methodIndex(m string) uint32 {
	for i, x := range methods {
		if x == m {
			return uint32(i)
		}
	}
	return uint32(len(methods))
}

func (rs *routeStats) inc(method string, status int) {
	mi := methodIndex(method)
	key := mi<<16 | uint32(status&0xffff)
	if c, ok := (*rs.counters.Load())[key]; ok {
		c.Inc()
		return
	}
	rs.mu.Lock()
	cur := *rs.counters.Load()
	c, ok := cur[key]
	if !ok {
		ml := "OTHER"
		if int(mi) < len(methods) {
			ml = methods[mi]
		}
		c = rs.m.requests.WithLabelValues(rs.listener, rs.route, ml, strconv.Itoa(status))
		next := make(map[uint32]prometheus.Counter, len(cur)+1)
		for k, v := range cur {
			next[k] = v
		}
		next[key] = c
		rs.counters.Store(&next)
	}
	rs.mu.Unlock()
	c.Inc()
}
