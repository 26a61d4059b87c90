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

// Package pipeline wires the routing pipeline into a controller-runtime
// manager: provider (watch, pace, gather) → translator (pure) → the
// sinks of every Result: when discovery runs, the snapshot publisher
// (discovery.go, which also adapts discovery's bind and ack reports for
// the writer's Programmed gate), then the one status writer and the shared
// pool applier (sharedpool.go). Reconcilers live in internal/controller;
// the command that calls AddToManager lives in internal/cmd.
package pipeline

import (
	"context"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/memrelease"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provider"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// Options wire the routing pipeline into a manager.
type Options struct {
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
	// SharedProxyRateLimitRedis is the shared proxies' --rate-limit-redis.
	SharedProxyRateLimitRedis string
	// SharedProxyTracing holds the shared proxies' tracing flags (only its
	// Tracing* fields are used).
	SharedProxyTracing provision.SharedPoolOptions
	// Discovery, when set, receives every snapshot and gates Programmed on
	// the data plane's binds and acks.
	Discovery *discovery.Server
	// IngressProxyProtocol are the sources the Ingress listeners take
	// PROXY protocol headers from (nil: PROXY protocol off).
	IngressProxyProtocol []string
}

// releaseAfter is the last sink, and with the status writer's rounds
// arms idle: once rebuilds and status rounds stop, the memory they left
// free goes back to the operating system (memrelease).
func releaseAfter(idle *memrelease.Releaser) provider.Sink {
	return provider.SinkFunc(func(context.Context, *translator.Result) { idle.Busy() })
}

// AddToManager adds the pipeline watch → gather → translate → sinks, and
// the one status writer, to mgr. Every replica translates; only the leader
// writes status and applies the shared pool.
func AddToManager(mgr ctrl.Manager, o Options) (*provider.Provider, *writer.Writer, error) {
	dataPlane := o.DataPlane
	sinks := o.Sinks
	if o.Discovery != nil {
		if dataPlane == nil {
			dataPlane = discoveryDataPlane{o.Discovery}
		}
		sinks = append([]provider.Sink{publisher{o.Discovery}}, sinks...)
	}
	idle := &memrelease.Releaser{}
	w := &writer.Writer{
		Client:     mgr.GetClient(),
		Leader:     o.Leader,
		Recorder:   mgr.GetEventRecorderFor(names.EventSource), //nolint:staticcheck // the writer records core/v1 Events
		DataPlane:  dataPlane,
		Log:        ctrl.Log.WithName("status"),
		Registerer: ctrlmetrics.Registry,
		Informers:  mgr.GetCache(),
		AfterRound: idle.Busy,
	}
	pool := &SharedPoolApplier{
		Client:           mgr.GetClient(),
		Informers:        mgr.GetCache(),
		InstallNamespace: o.InstallNamespace,
		ManagePool:       o.ManageSharedPool,
		Image:            o.ProxyImage,
		Replicas:         o.SharedProxyReplicas,
		RateLimitRedis:   o.SharedProxyRateLimitRedis,
		Tracing:          o.SharedProxyTracing,
		Log:              ctrl.Log.WithName("shared-pool"),
	}
	if err := mgr.Add(pool); err != nil {
		return nil, nil, fmt.Errorf("adding shared pool applier: %w", err)
	}
	p := provider.New(provider.Options{
		Cache:            mgr.GetCache(),
		InstallNamespace: o.InstallNamespace,
		// Publishing first: the proxies start compiling the change while
		// the writer's round and the applier's run (both on CPU the
		// publish would otherwise share), and the writer's first round
		// already sees the snapshot published (Programmed is gated on it).
		Sinks:                slices.Concat(sinks, []provider.Sink{w, pool, releaseAfter(idle)}),
		Log:                  ctrl.Log.WithName("provider"),
		Registerer:           ctrlmetrics.Registry,
		APIReader:            mgr.GetAPIReader(),
		IngressProxyProtocol: o.IngressProxyProtocol,
	})
	if err := mgr.Add(p); err != nil {
		return nil, nil, fmt.Errorf("adding provider: %w", err)
	}
	if err := mgr.Add(w); err != nil {
		return nil, nil, fmt.Errorf("adding status writer: %w", err)
	}
	if o.Discovery != nil {
		if err := mgr.Add(dataPlaneNotifier{o.Discovery, w}); err != nil {
			return nil, nil, fmt.Errorf("adding data plane notifier: %w", err)
		}
	}
	return p, w, nil
}
