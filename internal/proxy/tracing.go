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

package proxy

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing (Options.TracerProvider). Every HTTP request, on the fast path
// and net/http's alike, gets one server span, started in DataPlane.serve
// before step 1 and ended after the access log line: its parent is the
// client's W3C trace context (traceparent, tracestate) when a valid one
// came, and the provider's sampler decides (ParentBased: a client's
// sampled flag is followed). A sampled span replaces the request's
// traceparent with its own, so the upstream (and an external
// authorization server, and mirrors) sees the proxy's span as its parent,
// and gives the access log its trace_id. A span that is not sampled is
// dropped at once and leaves the headers as they came, as with tracing
// off, when the only cost is the nil check of DataPlane.tracer.

// tracerName is the instrumentation scope of the proxy's spans.
const tracerName = "coxswain/proxy"

// traceContext is the propagation format: W3C trace context.
var traceContext propagation.TraceContext

// The span attributes of coxswain's own (the route and upstream of the
// access log).
const (
	attrListener     = attribute.Key("coxswain.listener")
	attrRouteID      = attribute.Key("coxswain.route_id")
	attrUpstream     = attribute.Key("coxswain.upstream")
	attrUpstreamAddr = attribute.Key("coxswain.upstream.address")
	attrRequestID    = attribute.Key("coxswain.request_id")
	attrRetries      = attribute.Key("coxswain.retries")
)

// startSpan starts r's server span and, when it is sampled, sends its
// trace context upstream in r's header and records its trace id in ex;
// nil when it is not sampled.
func (d *DataPlane) startSpan(start time.Time, r *http.Request, ex *exchange) trace.Span {
	ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := d.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
	sc := span.SpanContext()
	if !sc.IsSampled() {
		span.End()
		return nil
	}
	if sc.TraceState().Len() == 0 {
		delete(r.Header, "Tracestate") // it belonged to a traceparent that was not valid
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(r.Header))
	ex.traceID = sc.TraceID()
	return span
}

// endSpan sets what the access log says on the span, and ends it: route,
// upstream, status; its status is Error for a 5xx, with the access log's
// error kind as error.type, else the status code.
func endSpan(span trace.Span, r *http.Request, ex *exchange, lr *listenerRouter, rt *route, port int32, isTLS bool) {
	listener := ""
	if rt != nil {
		listener = rt.listener
	} else if lr != nil {
		listener = lr.name
	}
	scheme := "http"
	if isTLS {
		scheme = "https"
	}
	client := ""
	if ex.clientIP.IsValid() {
		client = ex.clientIP.WithZone("").String()
	} else {
		client = clientIP(r.RemoteAddr)
	}
	attrs := make([]attribute.KeyValue, 0, 20)
	attrs = append(attrs,
		semconv.HTTPRequestMethodKey.String(r.Method),
		semconv.URLPath(r.URL.Path),
		semconv.URLScheme(scheme),
		semconv.ServerAddress(hostOnly(r.Host)),
		semconv.ServerPort(int(port)),
		semconv.ClientAddress(client),
		semconv.NetworkProtocolVersion(protocolVersion(r)),
		semconv.HTTPResponseStatusCode(ex.status),
		semconv.HTTPResponseBodySize(int(ex.bytes)),
		attrListener.String(listener),
		attrRequestID.String(ex.requestID),
	)
	if ua := r.Header.Get("User-Agent"); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	if rt != nil && rt.id != "" {
		attrs = append(attrs, attrRouteID.String(rt.id))
		span.SetName(r.Method + " " + rt.id)
	}
	if ex.upstreamName != "" {
		attrs = append(attrs, attrUpstream.String(ex.upstreamName))
	}
	if ex.upstream != "" {
		attrs = append(attrs, attrUpstreamAddr.String(ex.upstream))
	}
	if ex.retries > 0 {
		attrs = append(attrs, attrRetries.Int(int(ex.retries)))
	}
	errType := ex.errKind
	if errType == "" && ex.status >= 500 {
		errType = strconv.Itoa(ex.status)
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	span.SetAttributes(attrs...)
	if ex.status >= 500 {
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// hostOnly is the host of a Host header, without its port.
func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// protocolVersion is network.protocol.version: "1.1", "2".
func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	default:
		return "1.1"
	}
}

// appendTraceID appends the access log's trace_id: the sampled span's
// trace id, else the trace id of the client's traceparent if it sent one
// valid one, else an empty string.
func appendTraceID(b []byte, r *http.Request, ex *exchange) []byte {
	if ex.traceID.IsValid() {
		b = append(b, '"')
		for _, c := range ex.traceID {
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		}
		return append(b, '"')
	}
	if v := r.Header["Traceparent"]; len(v) == 1 {
		if id, ok := traceparentTraceID(v[0]); ok {
			b = append(b, '"')
			b = append(b, id...)
			return append(b, '"')
		}
	}
	return append(b, `""`...)
}

// traceparentTraceID is the trace id of a W3C traceparent
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), if it is
// valid: lowercase hex, neither id all zeros, version not ff, and for
// version 00 nothing after the flags.
func traceparentTraceID(v string) (string, bool) {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return "", false
	}
	if !lowerHex(v[:2]) || v[:2] == "ff" || !lowerHex(v[53:55]) {
		return "", false
	}
	if len(v) > 55 && (v[:2] == "00" || v[55] != '-') {
		return "", false
	}
	id, parent := v[3:35], v[36:52]
	if !lowerHex(id) || !lowerHex(parent) || allZeros(id) || allZeros(parent) {
		return "", false
	}
	return id, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
