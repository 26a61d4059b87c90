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
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/promreg"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// programmedMetric is coxswain_gateway_programmed: for every Gateway of the
// writer's last round, 1 while the Programmed condition it wrote is True for
// the Gateway's current generation, else 0. Gateways the last complete
// round did not see (deleted, or no longer ours) are dropped.
type programmedMetric struct {
	gauge *prometheus.GaugeVec
	mu    sync.Mutex
	set   map[types.NamespacedName]bool
	// pruned is the Gateways of the last prune, in order; added says a
	// series was added since.
	pruned []types.NamespacedName
	added  bool
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
	if !m.set[key] {
		m.set[key], m.added = true, true
	}
}

// prune drops the series of the Gateways a complete round did not have
// (gateways, the Result's). A round with the very Gateways of the last
// prune, and no series added since, has none to drop and looks at none:
// at 1,000 Gateways a map of them and a walk of every series at every
// route change was a sixth of the status writer's CPU.
func (m *programmedMetric) prune(gateways []translator.GatewayStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.added && slices.EqualFunc(m.pruned, gateways, func(k types.NamespacedName, g translator.GatewayStatus) bool { return k == g.NamespacedName }) {
		return
	}
	keep := make(map[types.NamespacedName]bool, len(gateways))
	m.pruned = m.pruned[:0]
	for i := range gateways {
		keep[gateways[i].NamespacedName] = true
		m.pruned = append(m.pruned, gateways[i].NamespacedName)
	}
	for key := range m.set {
		if !keep[key] {
			m.gauge.DeleteLabelValues(key.Namespace, key.Name)
			delete(m.set, key)
		}
	}
	m.added = false
}
