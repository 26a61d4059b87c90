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

package tracing

import (
	"context"
	"math"
	"net"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coxswain-go/coxswain/internal/version"
)

func TestFlags(t *testing.T) {
	var o Options
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(f)
	if o.Enabled() || o.SamplingRatio != DefaultSamplingRatio {
		t.Fatalf("defaults %+v: want off, ratio %v", o, DefaultSamplingRatio)
	}
	if err := f.Parse([]string{"--tracing-otlp-endpoint=otel-collector:4317", "--tracing-otlp-insecure", "--tracing-sampling-ratio=0.25"}); err != nil {
		t.Fatal(err)
	}
	if want := (Options{Endpoint: "otel-collector:4317", Insecure: true, SamplingRatio: 0.25}); o != want || !o.Enabled() {
		t.Fatalf("parsed %+v, want %+v", o, want)
	}
}

func TestValidate(t *testing.T) {
	for _, r := range []float64{0, 0.01, 1} {
		if err := (Options{SamplingRatio: r}).Validate(); err != nil {
			t.Errorf("ratio %v: %v", r, err)
		}
	}
	for _, r := range []float64{-0.1, 1.5, math.NaN()} {
		if err := (Options{SamplingRatio: r}).Validate(); err == nil {
			t.Errorf("ratio %v accepted", r)
		}
	}
	if _, _, err := New(context.Background(), Options{Endpoint: "127.0.0.1:4317", SamplingRatio: 2}, ServiceProxy); err == nil {
		t.Error("New accepted a sampling ratio of 2")
	}
}

// Off: no provider at all, and a shutdown that does nothing.
func TestNewOff(t *testing.T) {
	tp, shutdown, err := New(context.Background(), Options{SamplingRatio: 1}, ServiceProxy)
	if err != nil || tp != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	Install(nil, testr.New(t)) // installs nothing, and does not panic
}

// On: the spans carry the service's resource, and the sampler is
// ParentBased(TraceIDRatioBased): at ratio 0 a root is not sampled, a
// child of a sampled remote parent is.
func TestNewSamplerAndResource(t *testing.T) {
	// A port nothing listens on: the exporter connects lazily, and the
	// spans here are never ended, so nothing is sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	tp, shutdown, err := New(context.Background(), Options{Endpoint: addr, Insecure: true, SamplingRatio: 0}, ServiceController)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = shutdown(ctx)
	})
	tr := tp.Tracer("test")
	_, root := tr.Start(context.Background(), "root")
	if root.SpanContext().IsSampled() {
		t.Error("at ratio 0 a root span was sampled")
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	_, child := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "child")
	if !child.SpanContext().IsSampled() || child.SpanContext().TraceID() != parent.TraceID() {
		t.Fatalf("the child of a sampled remote parent: %v, want sampled in trace %v", child.SpanContext(), parent.TraceID())
	}
	ro, ok := child.(sdktrace.ReadOnlySpan)
	if !ok {
		t.Fatalf("span %T is not the SDK's", child)
	}
	got := map[string]string{}
	for _, kv := range ro.Resource().Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	if got["service.name"] != ServiceController || got["service.version"] != version.Version {
		t.Errorf("resource %v, want service.name %s and service.version %s", got, ServiceController, version.Version)
	}
}
