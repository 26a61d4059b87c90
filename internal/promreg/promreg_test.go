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

package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesTheFirstCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "coxswain_test_total", Help: "test"}
	first := Register(reg, prometheus.NewCounter(opts))
	second := Register(reg, prometheus.NewCounter(opts))
	if first != second {
		t.Fatal("a second registration did not return the first collector")
	}
	second.Inc()
	if got := testCount(t, reg); got != 1 {
		t.Errorf("the registry counts %v, want 1", got)
	}
	if private := Register(nil, prometheus.NewCounter(opts)); private == nil {
		t.Error("a nil registerer must return the collector itself")
	}
}

func testCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetCounter().GetValue()
}
