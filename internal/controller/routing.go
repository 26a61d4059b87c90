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

package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/coxswain-go/coxswain/internal/provider"
	"github.com/coxswain-go/coxswain/internal/status/writer"
)

// RoutingOptions wire the routing pipeline into a manager.
type RoutingOptions struct {
	// InstallNamespace holds the shared proxy and VIP Services.
	InstallNamespace string
	// Leader re-checks the Lease before every status patch; nil skips the
	// check (only for a manager without leader election).
	Leader writer.LeaderCheck
	// DataPlane gates Programmed; nil: Programmed follows the snapshot.
	DataPlane writer.DataPlane
	// Sinks receive every Result after the status writer (e.g. discovery).
	Sinks []provider.Sink
	// ManageSharedPool makes the leader apply the shared proxy Deployment,
	// ServiceAccount and Services too (VIP Services are always applied).
	ManageSharedPool    bool
	ProxyImage          string
	SharedProxyReplicas int32
}

// SetupRouting adds the pipeline watch → gather → translate → sinks, and the
// one status writer, to mgr. Every replica translates; only the leader
// writes status.
func SetupRouting(mgr ctrl.Manager, o RoutingOptions) (*provider.Provider, *writer.Writer, error) {
	w := &writer.Writer{
		Client:    mgr.GetClient(),
		Leader:    o.Leader,
		Recorder:  mgr.GetEventRecorderFor("coxswain-controller"), //nolint:staticcheck // the writer records core/v1 Events
		DataPlane: o.DataPlane,
		Log:       ctrl.Log.WithName("status"),
	}
	pool := &SharedPoolApplier{
		Client:           mgr.GetClient(),
		InstallNamespace: o.InstallNamespace,
		ManagePool:       o.ManageSharedPool,
		Image:            o.ProxyImage,
		Replicas:         o.SharedProxyReplicas,
		Log:              ctrl.Log.WithName("shared-pool"),
	}
	if err := mgr.Add(pool); err != nil {
		return nil, nil, fmt.Errorf("adding shared pool applier: %w", err)
	}
	p := provider.New(provider.Options{
		Cache:            mgr.GetCache(),
		InstallNamespace: o.InstallNamespace,
		Sinks:            append([]provider.Sink{w, pool}, o.Sinks...),
		Log:              ctrl.Log.WithName("provider"),
	})
	if err := mgr.Add(p); err != nil {
		return nil, nil, fmt.Errorf("adding provider: %w", err)
	}
	if err := mgr.Add(w); err != nil {
		return nil, nil, fmt.Errorf("adding status writer: %w", err)
	}
	return p, w, nil
}
