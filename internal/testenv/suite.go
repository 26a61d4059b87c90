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

package testenv

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Suite is a started Environment with an admin config and a client, for
// the BeforeSuite of a Ginkgo envtest suite; Stop it in AfterSuite.
type Suite struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// StartSuite starts an Environment and a client for it that knows scheme.
func StartSuite(scheme *runtime.Scheme) (*Suite, error) {
	env, err := Environment()
	if err != nil {
		return nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("envtest client: %w", err), env.Stop())
	}
	return &Suite{Env: env, Config: cfg, Client: c}, nil
}

// Stop stops the control plane; a nil Suite (one that never started) is
// already stopped.
func (s *Suite) Stop() error {
	if s == nil {
		return nil
	}
	return s.Env.Stop()
}
