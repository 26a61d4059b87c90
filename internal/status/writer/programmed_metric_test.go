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

package writer_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// coxswain_gateway_programmed follows the Programmed condition the writer
// writes, and a Gateway that leaves the translator's result loses its
// series.
func TestProgrammedGauge(t *testing.T) {
	f := newFixture(t, "programmed-gauge")
	reg := prometheus.NewRegistry()
	f.w.Registerer = reg
	gauge := func() string {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, mf := range mfs {
			if mf.GetName() != "coxswain_gateway_programmed" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				out = append(out, fmt.Sprintf("{%s} %g", strings.Join(labels, ","), m.GetGauge().GetValue()))
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	f.dp.set(1, shared(2, 1))
	f.write()
	expect(t, "one of two proxies acked", gauge(), "{name=web,namespace=programmed-gauge} 0")
	f.dp.set(1, shared(2, 2))
	f.write()
	expect(t, "both acked", gauge(), "{name=web,namespace=programmed-gauge} 1")
	if err := f.w.Write(f.ctx, &translator.Result{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "the Gateway left the result", gauge(), "")
}
