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

package discovery

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

type serverMetrics struct {
	s             *Server
	sent          *prometheus.CounterVec
	acks          prometheus.Counter
	staleAcks     prometheus.Counter
	nacks         *prometheus.CounterVec
	rejections    *prometheus.CounterVec
	publishes     prometheus.Counter
	publishErrors prometheus.Counter
	oversize      prometheus.Counter

	streamsDesc  *prometheus.Desc
	gatewaysDesc *prometheus.Desc
}

func newServerMetrics(s *Server) *serverMetrics {
	return &serverMetrics{
		s: s,
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_discovery_snapshots_sent_total",
			Help: "Snapshot messages sent to proxies, by type (full or delta).",
		}, []string{"type"}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_discovery_acks_total",
			Help: "Snapshot messages proxies acknowledged as applied.",
		}),
		staleAcks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_discovery_stale_acks_total",
			Help: "Acks or Nacks that did not match the message in flight and were ignored.",
		}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_discovery_nacks_total",
			Help: "Snapshot messages proxies rejected (they keep their last good snapshot), by scope.",
		}, []string{"scope"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_discovery_stream_rejections_total",
			Help: "Streams refused or ended by the server, by gRPC status code.",
		}, []string{"code"}),
		publishes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_discovery_publishes_total",
			Help: "Snapshot sets published by the controller's rebuild loop.",
		}),
		publishErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_discovery_publish_errors_total",
			Help: "Published snapshots rejected as invalid (the scope keeps its previous snapshot).",
		}),
		oversize: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_discovery_oversize_snapshots_total",
			Help: "Snapshot messages not sent because they exceed the server→proxy size cap.",
		}),
		streamsDesc: prometheus.NewDesc("coxswain_discovery_streams",
			"Open proxy streams, by scope kind.", []string{"scope_kind"}, nil),
		gatewaysDesc: prometheus.NewDesc("coxswain_gateway_dataplane_proxies",
			"Connected proxies whose scope serves the Gateway.", []string{"namespace", "name"}, nil),
	}
}

func (m *serverMetrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.sent, m.acks, m.staleAcks, m.nacks, m.rejections, m.publishes, m.publishErrors, m.oversize, m} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Describe and Collect make the live gauges (streams, proxies per Gateway).
func (m *serverMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.streamsDesc
	ch <- m.gatewaysDesc
}

func (m *serverMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	s.mu.Lock()
	defer s.mu.Unlock()
	byKind := map[string]int{"SharedPool": 0, "Gateway": 0}
	byScope := map[string]int{}
	for c := range s.conns {
		byKind[string(c.scope.Kind)]++
		byScope[c.scope.String()]++
	}
	for k, n := range byKind {
		ch <- prometheus.MustNewConstMetric(m.streamsDesc, prometheus.GaugeValue, float64(n), k)
	}
	seen := map[[2]string]bool{}
	for _, g := range s.gatewaysLocked() {
		key := [2]string{g.Namespace, g.Name}
		if seen[key] {
			continue
		}
		seen[key] = true
		sc, ok := s.scopeOfLocked(g.Namespace, g.Name)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.gatewaysDesc, prometheus.GaugeValue, float64(byScope[sc.String()]), g.Namespace, g.Name)
	}
}

func (s *Server) gatewaysLocked() []gatewayInScope {
	var out []gatewayInScope
	for sc, p := range s.scopes {
		for _, g := range p.gateways {
			out = append(out, gatewayInScope{Scope: sc, Namespace: g.Namespace, Name: g.Name})
		}
	}
	return out
}

// gatewayInScope names a Gateway served by a scope.
type gatewayInScope struct {
	Scope     snapshot.Scope
	Namespace string
	Name      string
}
