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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provider"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
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
	// Discovery, when set, receives every snapshot and gates Programmed on
	// the data plane's binds and acks.
	Discovery *discovery.Server
}

// SetupRouting adds the pipeline watch → gather → translate → sinks, and the
// one status writer, to mgr. Every replica translates; only the leader
// writes status.
func SetupRouting(mgr ctrl.Manager, o RoutingOptions) (*provider.Provider, *writer.Writer, error) {
	dataPlane := o.DataPlane
	sinks := o.Sinks
	if o.Discovery != nil {
		if dataPlane == nil {
			dataPlane = discoveryDataPlane{o.Discovery}
		}
		sinks = append([]provider.Sink{publisher{o.Discovery}}, sinks...)
	}
	w := &writer.Writer{
		Client:     mgr.GetClient(),
		Leader:     o.Leader,
		Recorder:   mgr.GetEventRecorderFor("coxswain-controller"), //nolint:staticcheck // the writer records core/v1 Events
		DataPlane:  dataPlane,
		Log:        ctrl.Log.WithName("status"),
		Registerer: ctrlmetrics.Registry,
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
		Sinks:            append([]provider.Sink{w, pool}, sinks...),
		Log:              ctrl.Log.WithName("provider"),
	})
	if err := mgr.Add(p); err != nil {
		return nil, nil, fmt.Errorf("adding provider: %w", err)
	}
	if err := mgr.Add(w); err != nil {
		return nil, nil, fmt.Errorf("adding status writer: %w", err)
	}
	if o.Discovery != nil {
		// Every bind or ack report re-evaluates Programmed.
		changes := o.Discovery.DataPlaneChanges()
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-changes:
					w.Notify()
				}
			}
		})); err != nil {
			return nil, nil, err
		}
	}
	return p, w, nil
}

// publisher hands every rebuild's snapshots to the discovery server.
type publisher struct{ srv *discovery.Server }

func (p publisher) Accept(_ context.Context, res *translator.Result) {
	if err := p.srv.Publish(res.Snapshots); err != nil {
		// An invalid snapshot keeps its scope's previous one; say why.
		ctrl.Log.WithName("discovery").Error(err, "publishing snapshots")
	}
}

// discoveryDataPlane adapts the discovery server to the status writer.
type discoveryDataPlane struct{ srv *discovery.Server }

func (d discoveryDataPlane) Gateway(ns, name string, generation int64) writer.GatewayDataPlane {
	st := d.srv.GatewayState(ns, name, generation)
	out := writer.GatewayDataPlane{Published: st.Published, Proxies: st.Proxies, Ready: st.Ready}
	if st.Published {
		out.Scope = st.Scope.String()
	}
	for _, r := range st.Rejections {
		out.Rejections = append(out.Rejections, writer.Rejection{NodeID: r.NodeID, Version: r.Version, Generation: r.Generation, Detail: r.Detail})
	}
	return out
}

// DedicatedServiceAccountLookup returns the ServiceAccount a dedicated
// Gateway's proxies must present ({gateway}-{gatewayclass}), read from the
// cache; ok is false for unknown Gateways and for Gateways refused because
// an older Gateway has that name, so one ServiceAccount is never authorised
// for two Gateways' scopes.
func DedicatedServiceAccountLookup(c client.Reader) func(ns, name string) (string, bool) {
	return func(ns, name string) (string, bool) {
		ctx := context.Background()
		gw := &gwv1.Gateway{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
			return "", false
		}
		class := &gwv1.GatewayClass{}
		if err := c.Get(ctx, types.NamespacedName{Name: string(gw.Spec.GatewayClassName)}, class); err != nil {
			return "", false
		}
		params := &gatewayv1alpha1.CoxswainGatewayParametersList{}
		if err := c.List(ctx, params); err != nil {
			return "", false
		}
		if _, dedicated, err := provision.Resolve(gw, class, params.Items); err != nil || !dedicated {
			return "", false
		}
		if conflict, err := dedicatedNameConflict(ctx, c, gw); err != nil || conflict != nil {
			return "", false
		}
		return names.DedicatedName(gw.Name, class.Name), true
	}
}
