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

package testkit

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestEnvtestNeverStartedStopsCleanly(t *testing.T) {
	var e Envtest
	if err := e.Stop(); err != nil {
		t.Fatalf("Stop of a control plane never started = %v", err)
	}
	if e.Environment() != nil {
		t.Fatal("a control plane never started has an environment")
	}
}

// TestEnvtestStartFailureIsKeptAndReported: a failing Adjust stops the
// start before any process runs, every later Start returns the same
// error, and Config fails the test with it.
func TestEnvtestStartFailureIsKeptAndReported(t *testing.T) {
	if _, err := AssetsDir(); err != nil {
		t.Skipf("no envtest assets: %v", err)
	}
	boom := errors.New("boom")
	adjusted := 0
	e := &Envtest{Adjust: func(*envtest.Environment) error { adjusted++; return boom }}
	for range 2 {
		if _, err := e.Start(); !errors.Is(err, boom) {
			t.Fatalf("Start = %v, want the Adjust error", err)
		}
	}
	if adjusted != 1 {
		t.Fatalf("Adjust ran %d times, want once", adjusted)
	}
	if e.Environment() != nil || e.Stop() != nil {
		t.Fatal("a control plane that failed to start must hold nothing to stop")
	}
	r := record(t, func(tb testing.TB) { e.Config(tb) })
	if !r.failed || !strings.Contains(r.message(), "boom") {
		t.Fatalf("Config after a failed start = %s", r.message())
	}
}
