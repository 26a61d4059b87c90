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
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Envtest is one envtest control plane (kube-apiserver and etcd, with
// Coxswain's and the Gateway API standard CRDs) shared by a test binary and
// started on first use, so the tests of a package that need none do not
// pay for it. Declare one per package and stop it from TestMain:
//
//	var api testkit.Envtest
//
//	func TestMain(m *testing.M) { os.Exit(api.Run(m)) }
//
// A package whose every test needs it and keeps its clients in package
// variables starts it before the tests with RunStarted; a Ginkgo suite
// calls Start in BeforeSuite and Stop in AfterSuite; a test that must not
// share one (it runs controllers owning cluster-wide state) takes its own
// with StartEnvtest.
type Envtest struct {
	// Scheme is the scheme of Client; nil is client-go's (the built-in
	// kinds).
	Scheme *runtime.Scheme
	// Adjust, if set, changes the environment before it starts: a package
	// that needs other CRDs than Coxswain's and the Gateway API's sets them
	// here.
	Adjust func(env *envtest.Environment) error

	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error

	mu        sync.Mutex
	client    client.Client
	clientset kubernetes.Interface
}

// Start starts the control plane if needed and returns an admin config for
// it. Tests call Config; Start is for where there is no testing.TB (a
// Ginkgo BeforeSuite).
func (e *Envtest) Start() (*rest.Config, error) {
	e.once.Do(func() { e.err = e.start() })
	if e.err != nil {
		return nil, e.err
	}
	return rest.CopyConfig(e.cfg), nil
}

func (e *Envtest) start() error {
	env, err := newEnvironment()
	if err != nil {
		return err
	}
	if e.Adjust != nil {
		if err := e.Adjust(env); err != nil {
			return fmt.Errorf("adjusting the envtest environment: %w", err)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting envtest: %w", err)
	}
	e.env, e.cfg = env, cfg
	return nil
}

// Config starts the control plane if needed and returns an admin config
// for it; the test fails if it cannot start.
func (e *Envtest) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Client is an admin controller-runtime client (of Scheme) for the control
// plane, made once; it starts the control plane if needed.
func (e *Envtest) Client(t testing.TB) client.Client {
	t.Helper()
	cfg := e.Config(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
		if err != nil {
			t.Fatalf("envtest client: %v", err)
		}
		e.client = c
	}
	return e.client
}

// Clientset is an admin client-go clientset for the control plane (for the
// subresources a controller-runtime client does not reach, such as
// TokenRequest), made once; it starts the control plane if needed.
func (e *Envtest) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cfg := e.Config(t)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.clientset == nil {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatalf("envtest clientset: %v", err)
		}
		e.clientset = cs
	}
	return e.clientset
}

// Environment is the running control plane (after Start or Config), for
// tests that add users or read its directories.
func (e *Envtest) Environment() *envtest.Environment { return e.env }

// Stop stops the control plane if it was started.
func (e *Envtest) Stop() error {
	if e.env == nil {
		return nil
	}
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stopping envtest: %w", err)
	}
	return nil
}

// Run runs the tests and stops the control plane after them; use it as
// TestMain's body: os.Exit(api.Run(m)). A control plane that does not stop
// fails a run that passed.
func (e *Envtest) Run(m *testing.M) int {
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// RunStarted is Run with the control plane started before the tests and
// setup given its admin config (package clients, objects every test relies
// on). If it cannot start or setup fails, no test runs and the binary fails
// with the reason.
func (e *Envtest) RunStarted(m *testing.M, setup func(cfg *rest.Config) error) int {
	cfg, err := e.Start()
	if err == nil {
		err = setup(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, errors.Join(err, e.Stop()))
		return 1
	}
	return e.Run(m)
}

// StartEnvtest starts a control plane of the test's own, stopped when the
// test ends, for a test that must not share one: it runs controllers that
// own cluster-wide state (leases, the CA Secret) or asserts on a fresh
// cluster.
func StartEnvtest(t testing.TB) *Envtest {
	t.Helper()
	e := &Envtest{}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	e.Config(t)
	return e
}
