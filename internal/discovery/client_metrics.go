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
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// clientMetrics are the coxswain_proxy_discovery_* metrics of one client.
type clientMetrics struct {
	connected         prometheus.Gauge
	applied           prometheus.Counter
	nacks             prometheus.Counter
	reconnects        prometheus.Counter
	bootstrapFailures prometheus.Counter
	svidExpiry        prometheus.Gauge
	wireMismatch      prometheus.Gauge
}

func newClientMetrics() *clientMetrics {
	return &clientMetrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_discovery_connected",
			Help: "1 while the discovery stream is open and delivering snapshots.",
		}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_snapshots_applied_total",
			Help: "Routing snapshots applied.",
		}),
		nacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_nacks_total",
			Help: "Routing snapshots rejected (the last good one stays in force).",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_reconnects_total",
			Help: "Discovery streams that ended and were retried.",
		}),
		bootstrapFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_proxy_discovery_bootstrap_failures_total",
			Help: "Failed SVID bootstraps.",
		}),
		svidExpiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_discovery_svid_expiry_timestamp_seconds",
			Help: "Unix time at which the current SVID expires.",
		}),
		wireMismatch: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "coxswain_proxy_discovery_wire_version_mismatch",
			Help: "1 while the controller speaks another discovery wire version: the proxy serves its last good snapshot until one of them is upgraded or rolled back.",
		}),
	}
}

func (m *clientMetrics) register(r prometheus.Registerer) error {
	for _, col := range []prometheus.Collector{m.connected, m.applied, m.nacks, m.reconnects, m.bootstrapFailures, m.svidExpiry, m.wireMismatch} {
		if err := r.Register(col); err != nil {
			return fmt.Errorf("registering the discovery client metrics: %w", err)
		}
	}
	return nil
}
