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

// Package tracing builds the OpenTelemetry tracer provider of a coxswain
// process (the proxy, the controller): spans exported over OTLP/gRPC to a
// collector, sampled at a ratio of the traces that start in the process,
// W3C trace context (traceparent, tracestate) as the propagation format.
// Without an endpoint tracing is off and New returns no provider at all, so
// that callers can tell with one nil check and pay nothing.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/coxswain-go/coxswain/internal/version"
)

// The service.name of each process.
const (
	ServiceProxy      = "coxswain-proxy"
	ServiceController = "coxswain-controller"
)

// DefaultSamplingRatio is the share of the traces starting in the process
// that are sampled once tracing is on: all of them, since setting an
// endpoint is opting in. A busy proxy lowers it.
const DefaultSamplingRatio = 1.0

// Propagator is the propagation format: W3C trace context alone.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Options are the tracing flags.
type Options struct {
	// Endpoint is the host:port of an OTLP/gRPC trace receiver (an
	// OpenTelemetry Collector); empty turns tracing off.
	Endpoint string
	// Insecure sends in plaintext (a collector on the node or in the
	// pod), else over TLS verified with the system roots.
	Insecure bool
	// SamplingRatio is the share, in [0, 1], of the traces that start in
	// this process (no sampled traceparent came in) that are sampled;
	// a request that carries a traceparent follows its sampled flag.
	SamplingRatio float64
}

// AddFlags registers --tracing-otlp-endpoint, --tracing-otlp-insecure and
// --tracing-sampling-ratio into o.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Endpoint, "tracing-otlp-endpoint", "",
		"host:port of an OTLP/gRPC trace receiver (an OpenTelemetry Collector) to export spans to; empty turns tracing off.")
	f.BoolVar(&o.Insecure, "tracing-otlp-insecure", false,
		"Export spans in plaintext (a collector on the node or in the pod) instead of TLS verified with the system roots.")
	f.Float64Var(&o.SamplingRatio, "tracing-sampling-ratio", DefaultSamplingRatio,
		"Share (0 to 1) of the traces starting here that are sampled; a request carrying a W3C traceparent follows its sampled flag.")
}

// Enabled reports whether o turns tracing on.
func (o Options) Enabled() bool { return o.Endpoint != "" }

// Validate reports a sampling ratio outside [0, 1].
func (o Options) Validate() error {
	if math.IsNaN(o.SamplingRatio) || o.SamplingRatio < 0 || o.SamplingRatio > 1 {
		return fmt.Errorf("--tracing-sampling-ratio %v is not between 0 and 1", o.SamplingRatio)
	}
	return nil
}

// New builds the tracer provider o describes for the process service
// (ServiceProxy, ServiceController): a batching OTLP/gRPC exporter, the
// sampler ParentBased(TraceIDRatioBased(SamplingRatio)), and a resource
// with service.name, service.version (internal/version) and what
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME add or override. The
// exporter connects lazily: a collector that is not up yet loses spans,
// not the start. shutdown flushes what is buffered and stops the exporter.
// With tracing off, New returns a nil provider and a shutdown that does
// nothing; an invalid sampling ratio is an error either way.
func New(ctx context.Context, o Options, service string) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if err := o.Validate(); err != nil {
		return nil, noop, err
	}
	if !o.Enabled() {
		return nil, noop, nil
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version.Version)),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, noop, fmt.Errorf("tracing resource: %w", err)
	}
	eo := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(o.Endpoint)}
	if o.Insecure {
		eo = append(eo, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(ctx, eo...)
	if err != nil {
		return nil, noop, fmt.Errorf("OTLP trace exporter for %s: %w", o.Endpoint, err)
	}
	p := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SamplingRatio))),
	)
	return p, p.Shutdown, nil
}

// Install makes tp the global tracer provider (what otel.Tracer returns
// tracers of), W3C trace context the global propagator, and log where the
// SDK reports its errors (a failed export). A nil tp installs nothing.
func Install(tp trace.TracerProvider, log logr.Logger) {
	if tp == nil {
		return
	}
	otel.SetLogger(log)
	otel.SetTextMapPropagator(Propagator)
	otel.SetTracerProvider(tp)
}

// Flush sends the spans still buffered, within a few seconds, and stops
// the exporter (shutdown, from New).
func Flush(shutdown func(context.Context) error, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		log.Error(err, "flushing traces")
	}
}
