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
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/internal/tracing"
)

// otlpReceiver is an OTLP/gRPC trace receiver on loopback, as a collector
// would be: it keeps every span exported to it, with its resource's
// attributes.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string

	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{addr: ln.Addr().String(), resource: map[string]string{}}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			r.resource[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// exported are the spans received so far.
func (r *otlpReceiver) exported() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// spanAttrs are a span's attributes, each as a string.
func spanAttrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.GetAttributes() {
		out[kv.GetKey()] = anyValueString(kv.GetValue())
	}
	return out
}

func anyValueString(v *commonpb.AnyValue) string {
	if iv, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
		return fmt.Sprint(iv.IntValue)
	}
	return v.GetStringValue()
}

// newTracedPlane is a test data plane whose requests are traced through
// tracing.New's provider, exporting to rcv; flush sends what the batcher
// holds and stops it.
func newTracedPlane(t *testing.T, rcv *otlpReceiver, ratio float64) (p *testPlane, flush func()) {
	t.Helper()
	tp, shutdown, err := tracing.New(context.Background(), tracing.Options{Endpoint: rcv.addr, Insecure: true, SamplingRatio: ratio}, tracing.ServiceProxy)
	if err != nil {
		t.Fatal(err)
	}
	flush = func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("flushing the tracer provider: %v", err)
		}
	}
	reg := prometheus.NewRegistry()
	buf := &testkit.SyncBuffer{}
	dp := NewDataPlane(Options{BindHost: "127.0.0.1", AccessLog: buf, Registry: reg, DrainTimeout: 2 * time.Second, TracerProvider: tp})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dp.Shutdown(ctx)
		_ = shutdown(ctx)
	})
	return &testPlane{DataPlane: dp, reg: reg, log: buf}, flush
}

// accessLogByRequestID is the access log line of the request with id.
func accessLogByRequestID(t *testing.T, p *testPlane, id string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		if m["request_id"] == id {
			return m
		}
	}
	t.Fatalf("no access log line with request_id %q in:\n%s", id, p.log.String())
	return nil
}

// tracedSnapshot routes /svc to backend b (endpoint set ns/b:80, route
// httproute/ns/web:0) and /empty to a set without endpoints.
func tracedSnapshot(port int32, b *testBackend) *snapshot.Snapshot {
	return retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/b:80", b), {Name: "ns/empty:80"}},
		snapshot.Route{ID: "httproute/ns/web:0", Match: prefix("/svc"), Backends: to("ns/b:80")},
		snapshot.Route{ID: "httproute/ns/empty:0", Match: prefix("/empty"), Backends: to("ns/empty:80")})
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestTracingExportsServerSpans: with tracing on, a request carrying the
// client's traceparent is exported (over OTLP/gRPC, to a real receiver) as
// one server span of the client's trace, its parent the client's span,
// with the route, upstream and status; the backend gets a traceparent
// whose parent is the proxy's span, and the access log the trace id. A
// request without one starts a trace of its own, and a 5xx is an error
// span. The fast path (GET) and net/http's (a POST with a body) alike.
func TestTracingExportsServerSpans(t *testing.T) {
	rcv := startOTLPReceiver(t)
	b := startBackend(t, "b", false, nil)
	p, flush := newTracedPlane(t, rcv, 1)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, tracedSnapshot(port, b))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	c := client()

	clientTP := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	get := fetch(t, c, base+"/svc/get", "Host", "app.example:8080", "X-Request-Id", "get-1", "Traceparent", clientTP, "Tracestate", "vendor=x")
	if p.fastServed(port) != 1 {
		t.Fatalf("the fast path served %d requests, want the GET", p.fastServed(port))
	}
	req, err := http.NewRequest(http.MethodPost, base+"/svc/post", strings.NewReader("a body"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Request-Id", "post-1")
	post := do(t, c, req)
	empty := fetch(t, c, base+"/empty", "X-Request-Id", "empty-1", "Traceparent", clientTP)
	if get.code != 200 || post.code != 200 || empty.code != http.StatusServiceUnavailable {
		t.Fatalf("statuses %d %d %d, want 200 200 503", get.code, post.code, empty.code)
	}
	flush()

	spans := map[string]*tracepb.Span{}
	for _, s := range rcv.exported() {
		spans[spanAttrs(s)["coxswain.request_id"]] = s
	}
	if len(spans) != 3 {
		t.Fatalf("exported %d spans (%v), want 3", len(rcv.exported()), rcv.exported())
	}
	if got := rcv.resource["service.name"]; got != tracing.ServiceProxy {
		t.Errorf("resource service.name = %q, want %q", got, tracing.ServiceProxy)
	}

	// The GET: a child of the client's span.
	s := spans["get-1"]
	if got := hex.EncodeToString(s.GetTraceId()); got != clientTraceID {
		t.Errorf("GET span trace id %s, want the client's %s", got, clientTraceID)
	}
	if got := hex.EncodeToString(s.GetParentSpanId()); got != clientSpanID {
		t.Errorf("GET span parent %s, want the client's span %s", got, clientSpanID)
	}
	if s.GetKind() != tracepb.Span_SPAN_KIND_SERVER || s.GetName() != "GET httproute/ns/web:0" {
		t.Errorf("GET span kind %v name %q, want a server span named GET httproute/ns/web:0", s.GetKind(), s.GetName())
	}
	wantAttrs := map[string]string{
		"http.request.method": "GET", "url.path": "/svc/get", "url.scheme": "http", "server.address": "app.example",
		"coxswain.route_id": "httproute/ns/web:0", "coxswain.upstream": "ns/b:80", "coxswain.upstream.address": b.addr,
		"http.response.status_code": "200", "client.address": "127.0.0.1",
	}
	attrs := spanAttrs(s)
	for k, want := range wantAttrs {
		if attrs[k] != want {
			t.Errorf("GET span %s = %q, want %q", k, attrs[k], want)
		}
	}
	if _, ok := attrs["error.type"]; ok || s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("GET span has error.type %q, status %v; want neither", attrs["error.type"], s.GetStatus())
	}
	spanID := hex.EncodeToString(s.GetSpanId())
	if got, want := get.echo.Header.Get("Traceparent"), "00-"+clientTraceID+"-"+spanID+"-01"; got != want {
		t.Errorf("backend's traceparent %q, want %q (the proxy's span as parent)", got, want)
	}
	if got := get.echo.Header.Get("Tracestate"); got != "vendor=x" {
		t.Errorf("backend's tracestate %q, want the client's vendor=x", got)
	}
	if got := accessLogByRequestID(t, p, "get-1")["trace_id"]; got != clientTraceID {
		t.Errorf("access log trace_id %v, want %s", got, clientTraceID)
	}

	// The POST (net/http's path): a trace of its own.
	s = spans["post-1"]
	traceID := hex.EncodeToString(s.GetTraceId())
	if len(s.GetParentSpanId()) != 0 || traceID == clientTraceID || spanAttrs(s)["http.request.method"] != "POST" {
		t.Errorf("POST span: trace %s parent %x method %q, want a new root POST span", traceID, s.GetParentSpanId(), spanAttrs(s)["http.request.method"])
	}
	if got, want := post.echo.Header.Get("Traceparent"), "00-"+traceID+"-"+hex.EncodeToString(s.GetSpanId())+"-01"; got != want {
		t.Errorf("POST: backend's traceparent %q, want %q", got, want)
	}
	if got := accessLogByRequestID(t, p, "post-1")["trace_id"]; got != traceID {
		t.Errorf("POST: access log trace_id %v, want %s", got, traceID)
	}

	// No endpoints: a 503, an error span.
	s = spans["empty-1"]
	attrs = spanAttrs(s)
	if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || attrs["error.type"] != "no_endpoints" || attrs["http.response.status_code"] != "503" {
		t.Errorf("503 span: status %v, error.type %q, status code %q; want Error, no_endpoints, 503", s.GetStatus(), attrs["error.type"], attrs["http.response.status_code"])
	}
}

// TestTracingUnsampled: at sampling ratio 0 a request without traceparent
// exports no span and sends none upstream, and its access log trace_id is
// empty; one whose client's traceparent is not sampled leaves it as it
// came; one whose client's traceparent is sampled is traced all the same
// (the parent decides).
func TestTracingUnsampled(t *testing.T) {
	rcv := startOTLPReceiver(t)
	b := startBackend(t, "b", false, nil)
	p, flush := newTracedPlane(t, rcv, 0)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, tracedSnapshot(port, b))
	url := fmt.Sprintf("http://127.0.0.1:%d/svc", port)
	c := client()

	none := fetch(t, c, url, "X-Request-Id", "none")
	unsampledTP := "00-" + clientTraceID + "-" + clientSpanID + "-00"
	unsampled := fetch(t, c, url, "X-Request-Id", "unsampled", "Traceparent", unsampledTP)
	sampled := fetch(t, c, url, "X-Request-Id", "sampled", "Traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01")
	flush()

	if got := none.echo.Header["Traceparent"]; got != nil {
		t.Errorf("without a traceparent, unsampled: the backend got traceparent %q, want none", got)
	}
	if got := accessLogByRequestID(t, p, "none")["trace_id"]; got != "" {
		t.Errorf("without a traceparent, unsampled: access log trace_id %v, want empty", got)
	}
	if got := unsampled.echo.Header.Get("Traceparent"); got != unsampledTP {
		t.Errorf("an unsampled traceparent reached the backend as %q, want it as it came, %q", got, unsampledTP)
	}
	if got := accessLogByRequestID(t, p, "unsampled")["trace_id"]; got != clientTraceID {
		t.Errorf("an unsampled traceparent: access log trace_id %v, want the client's %s", got, clientTraceID)
	}
	spans := rcv.exported()
	if len(spans) != 1 || spanAttrs(spans[0])["coxswain.request_id"] != "sampled" {
		t.Fatalf("exported %v, want the one span of the request with a sampled traceparent", spans)
	}
	if got, want := sampled.echo.Header.Get("Traceparent"), "00-"+clientTraceID+"-"+hex.EncodeToString(spans[0].GetSpanId())+"-01"; got != want {
		t.Errorf("a sampled traceparent: the backend got %q, want %q", got, want)
	}
}

// TestTracingOffPassesTraceparent: with tracing off the client's
// traceparent and tracestate reach the backend untouched, and the access
// log's trace_id is the trace id of a valid one, else empty.
func TestTracingOffPassesTraceparent(t *testing.T) {
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, tracedSnapshot(port, b))
	url := fmt.Sprintf("http://127.0.0.1:%d/svc", port)
	c := client()
	valid := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	for _, tc := range []struct{ id, tp, logged string }{
		{"valid", valid, clientTraceID},
		{"invalid", "00-" + strings.ToUpper(clientTraceID) + "-" + clientSpanID + "-01", ""},
		{"none", "", ""},
	} {
		hdr := []string{"X-Request-Id", tc.id, "Tracestate", "vendor=x"}
		if tc.tp != "" {
			hdr = append(hdr, "Traceparent", tc.tp)
		}
		res := fetch(t, c, url, hdr...)
		if got := res.echo.Header.Get("Traceparent"); got != tc.tp {
			t.Errorf("%s: the backend got traceparent %q, want %q", tc.id, got, tc.tp)
		}
		if got := res.echo.Header.Get("Tracestate"); got != "vendor=x" {
			t.Errorf("%s: the backend got tracestate %q, want vendor=x", tc.id, got)
		}
		if got := accessLogByRequestID(t, p, tc.id)["trace_id"]; got != tc.logged {
			t.Errorf("%s: access log trace_id %v, want %q", tc.id, got, tc.logged)
		}
	}
}

func TestTraceparentTraceID(t *testing.T) {
	id, span := clientTraceID, clientSpanID
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"00-" + id + "-" + span + "-01", id},
		{"00-" + id + "-" + span + "-00", id},
		{"01-" + id + "-" + span + "-01-later", id}, // a later version may add fields
		{"00-" + id + "-" + span + "-01-later", ""}, // version 00 may not
		{"01-" + id + "-" + span + "-01later", ""},
		{"ff-" + id + "-" + span + "-01", ""},
		{"00-" + strings.Repeat("0", 32) + "-" + span + "-01", ""},
		{"00-" + id + "-" + strings.Repeat("0", 16) + "-01", ""},
		{"00-" + strings.ToUpper(id) + "-" + span + "-01", ""},
		{"00-" + id + "-" + span + "-0g", ""},
		{"00-" + id + "_" + span + "-01", ""},
		{"00-" + id + "-" + span, ""},
		{"", ""},
	} {
		got, ok := traceparentTraceID(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("traceparentTraceID(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}
