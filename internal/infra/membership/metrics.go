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

package membership

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the membership client's Prometheus metrics.
type Metrics struct {
	Ignored      *prometheus.CounterVec
	TrustRefused *prometheus.CounterVec
	ListErrors   prometheus.Counter
	WatchErrors  prometheus.Counter
	Members      prometheus.Gauge
	Ready        prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coxswain_infra_membership_ignored_projects_total",
			Help: "Projects ignored by the membership client, by reason (shard_mismatch)."}, []string{"reason"}),
		TrustRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "coxswain_infra_membership_trust_refused_total",
			Help: "Changes of signed Project fields refused, by reason."}, []string{"reason"}),
		ListErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "coxswain_infra_membership_list_errors_total",
			Help: "Failed Project lists."}),
		WatchErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "coxswain_infra_membership_watch_errors_total",
			Help: "Project watches that failed or ended with an error."}),
		Members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "coxswain_infra_membership_projects",
			Help: "Projects in the membership."}),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "coxswain_infra_membership_ready",
			Help: "1 once the first Project list succeeded."}),
	}
	if reg != nil {
		reg.MustRegister(m.Ignored, m.TrustRefused, m.ListErrors, m.WatchErrors, m.Members, m.Ready)
	}
	return m
}
