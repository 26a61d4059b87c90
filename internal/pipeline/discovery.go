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

package pipeline

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// publisher hands every rebuild's snapshots to the discovery server.
type publisher struct{ srv *discovery.Server }

// Accept publishes res's snapshots, under a "publish" span of the
// rebuild's trace.
func (p publisher) Accept(ctx context.Context, res *translator.Result) {
	_, span := otel.Tracer("coxswain/controller").Start(ctx, "publish", trace.WithAttributes(attribute.Int("coxswain.snapshots", len(res.Snapshots))))
	defer span.End()
	if err := p.srv.Publish(res.Snapshots); err != nil {
		span.SetStatus(codes.Error, err.Error())
		// An invalid snapshot keeps its scope's previous one; say why.
		ctrl.Log.WithName("discovery").Error(err, "publishing snapshots")
	}
}

// discoveryDataPlane adapts the discovery server's report on a Gateway to
// the status writer's, field by field.
type discoveryDataPlane struct{ srv *discovery.Server }

var _ writer.DataPlaneEpoch = discoveryDataPlane{}

// Epoch is the discovery server's count of data-plane changes
// (writer.DataPlaneEpoch).
func (d discoveryDataPlane) Epoch() uint64 { return d.srv.DataPlaneEpoch() }

// Gateway reports what the proxies of the Gateway's scope did with
// generation.
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

// dataPlaneNotifier makes the status writer re-evaluate Programmed after
// every bind or ack report of the discovery server. Like the writer, it
// runs on the leader only (it does not opt out of leader election).
type dataPlaneNotifier struct {
	srv *discovery.Server
	w   *writer.Writer
}

// Start forwards the server's data plane changes until ctx ends.
func (n dataPlaneNotifier) Start(ctx context.Context) error {
	changes := n.srv.DataPlaneChanges()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			n.w.Notify()
		}
	}
}
