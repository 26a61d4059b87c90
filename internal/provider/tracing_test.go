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

package provider

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// A translation is a "translate" span of the global provider, a child of
// the rebuild's span, counting the snapshots it made.
func TestTranslateSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	p := New(Options{Translate: func(*translator.Resources) *translator.Result {
		return &translator.Result{Snapshots: []*snapshot.Snapshot{{Scope: snapshot.SharedPool()}, {Scope: snapshot.GatewayScope("ns", "gw")}}}
	}})
	ctx, parent := otel.Tracer("test").Start(context.Background(), "rebuild")
	if out := p.translate(ctx, &translator.Resources{}); len(out.Snapshots) != 2 {
		t.Fatalf("translate returned %d snapshots, want 2", len(out.Snapshots))
	}
	parent.End()
	ended := rec.Ended()
	if len(ended) != 2 || ended[0].Name() != "translate" {
		t.Fatalf("ended spans %v, want translate then rebuild", ended)
	}
	s := ended[0]
	if s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("translate's parent %v, want the rebuild's span %v", s.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	if got := s.Attributes(); len(got) != 1 || got[0] != attribute.Int("coxswain.snapshots", 2) {
		t.Errorf("translate's attributes %v, want coxswain.snapshots=2", got)
	}
}
