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

package writer

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/promreg"
	"github.com/coxswain-go/coxswain/internal/status"
)

// programmedMetric is coxswain_gateway_programmed: for every Gateway of the
// writer's last round, 1 while the Programmed condition it wrote is True for
// the Gateway's current generation, else 0. Gateways the last complete
// round did not see (deleted, or no longer ours) are dropped.
type programmedMetric struct {
	gauge *prometheus.GaugeVec
	mu    sync.Mutex
	set   map[types.NamespacedName]bool
}

func newProgrammedMetric(reg prometheus.Registerer) *programmedMetric {
	return &programmedMetric{
		gauge: promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "coxswain_gateway_programmed",
			Help: "1 while the Gateway's Programmed condition, as the status writer last wrote it, is True for its current generation, else 0.",
		}, []string{"namespace", "name"})),
		set: map[types.NamespacedName]bool{},
	}
}

// observe records the conditions written for the Gateway key at generation.
func (m *programmedMetric) observe(key types.NamespacedName, conds []metav1.Condition, generation int64) {
	c := meta.FindStatusCondition(conds, status.TypeProgrammed)
	v := 0.0
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation {
		v = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauge.WithLabelValues(key.Namespace, key.Name).Set(v)
	m.set[key] = true
}

// prune drops the Gateways a complete round did not keep.
func (m *programmedMetric) prune(keep map[types.NamespacedName]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.set {
		if !keep[key] {
			m.gauge.DeleteLabelValues(key.Namespace, key.Name)
			delete(m.set, key)
		}
	}
}
