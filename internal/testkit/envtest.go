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
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/coxswain-go/coxswain/internal/testenv"
)

// Envtest is one envtest control plane (kube-apiserver and etcd, with
// Coxswain's and the Gateway API standard CRDs) shared by a test binary and
// started on first use, so the tests of a package that need none do not
// pay for it. Declare one per package and stop it from TestMain:
//
//	var api testkit.Envtest
//
//	func TestMain(m *testing.M) { os.Exit(api.Run(m)) }
type Envtest struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
}

// Config starts the control plane if needed and returns an admin config
// for it; the test fails if it cannot start.
func (e *Envtest) Config(t testing.TB) *rest.Config {
	t.Helper()
	e.once.Do(func() {
		e.env, e.err = testenv.Environment()
		if e.err != nil {
			return
		}
		e.cfg, e.err = e.env.Start()
		if e.err != nil {
			e.env = nil
		}
	})
	if e.err != nil {
		t.Fatalf("starting envtest: %v", e.err)
	}
	return rest.CopyConfig(e.cfg)
}

// Environment is the running control plane (after Config), for tests that
// add users or read its directories.
func (e *Envtest) Environment() *envtest.Environment { return e.env }

// Stop stops the control plane if it was started.
func (e *Envtest) Stop() {
	if e.env != nil {
		_ = e.env.Stop()
	}
}

// Run runs the tests and stops the control plane after them; use it as
// TestMain's body: os.Exit(api.Run(m)).
func (e *Envtest) Run(m *testing.M) int {
	code := m.Run()
	e.Stop()
	return code
}
