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
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestProgrammedMetricPrune: a round drops the series of the Gateways it
// does not have, also after a round with the same Gateways that added a
// series without pruning (one cut short), and a round with the very
// Gateways of the last prune keeps every series.
func TestProgrammedMetricPrune(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newProgrammedMetric(reg)
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	round := []translator.GatewayStatus{{GatewayState: &translator.GatewayState{NamespacedName: a}}}
	series := func() int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
		}
		return n
	}
	m.observe(a, []metav1.Condition{}, 1)
	m.prune(round)
	m.prune(round)
	if n := series(); n != 1 {
		t.Fatalf("%d series after two rounds of one Gateway", n)
	}
	m.observe(b, nil, 1) // a round of b cut short: no prune
	m.prune(round)
	if n := series(); n != 1 {
		t.Errorf("%d series after a round without b; want a's alone", n)
	}
	m.prune(nil)
	if n := series(); n != 0 {
		t.Errorf("%d series after a round of no Gateway", n)
	}
}
