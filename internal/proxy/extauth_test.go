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
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// authSeen is what an HTTP authorization server saw of one request.
type authSeen struct {
	method, path, query, host string
	header                    http.Header
	contentLength             int64
	tls                       bool
}

// httpAuthServer is a real HTTP authorization server on loopback that
// records what it saw and decides by the client's credentials:
// "Bearer good" admits with X-Auth-User: alice (and X-Not-Listed, which
// no route copies), "Bearer anon" admits with no user, "Bearer slow"
// answers only when the call is abandoned, "Bearer boom" answers 500,
// "Bearer big" denies with a 100 KiB body, X-Api-Key: k admits, a path
// under /app/login redirects to a login page, anything else gets 401.
type httpAuthServer struct {
	*testBackend
	mu   sync.Mutex
	seen []authSeen
}

func startHTTPAuth(t testing.TB, start func(http.HandlerFunc) *testBackend) *httpAuthServer {
	t.Helper()
	a := &httpAuthServer{}
	a.testBackend = start(a.serve)
	return a
}

func (a *httpAuthServer) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, authSeen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, host: r.Host,
		header: r.Header.Clone(), contentLength: r.ContentLength, tls: r.TLS != nil})
	a.mu.Unlock()
	h := w.Header()
	switch auth := r.Header.Get("Authorization"); {
	case auth == "Bearer good" || r.Header.Get("X-Api-Key") == "k":
		h.Set("X-Auth-User", "alice")
		h.Set("X-Forwarded-User", "alice")
		h.Set("X-Not-Listed", "leak")
		w.WriteHeader(http.StatusOK)
	case auth == "Bearer anon":
		w.WriteHeader(http.StatusNoContent)
	case auth == "Bearer slow":
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	case auth == "Bearer boom":
		http.Error(w, "internal trouble", http.StatusInternalServerError)
	case auth == "Bearer big":
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, strings.Repeat("x", 100<<10))
	case strings.Contains(r.URL.Path, "/app/login"):
		h.Set("Location", "https://login.example/?rd="+r.Header.Get("X-Forwarded-Uri"))
		w.WriteHeader(http.StatusFound)
	default:
		h.Set("WWW-Authenticate", `Bearer realm="test"`)
		h.Set("X-Deny-Reason", "no-token")
		h.Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"denied"}`)
	}
}

func (a *httpAuthServer) last(t testing.TB) authSeen {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		t.Fatal("the authorization server saw no request")
	}
	return a.seen[len(a.seen)-1]
}

// extAuthRoute is a route to ns/app:80 under path with ea.
func extAuthRoute(id, path string, ea snapshot.ExtAuth) snapshot.Route {
	return snapshot.Route{ID: id, Match: prefix(path), ExtAuth: &ea, Backends: to("ns/app:80")}
}

// request builds a request to the proxy's port with headers in pairs
// ("Host" sets the host) and body (nil: none).
func extAuthRequest(t testing.TB, method string, port int32, path string, body io.Reader, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return req
}

// TestExtAuthHTTPAdmit: an admitting answer lets the request through
// (over the fast path and over net/http with a body) with the server's
// UpstreamHeaders replacing the client's spoofed ones and no other
// header of the answer; a 2xx without the header removes the client's.
// The server gets the method, PathPrefix and the path with its query, no
// body, the listed headers only and the X-Forwarded-* of the request.
func TestExtAuthHTTPAdmit(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	auth := startHTTPAuth(t, func(h http.HandlerFunc) *testBackend { return startBackend(t, "auth", false, h) })
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app), epSet("ns/auth:80", auth.testBackend)},
		extAuthRoute("app", "/app", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/auth:80", PathPrefix: "/check", UpstreamHeaders: []string{"x-auth-user", "x-forwarded-user"}}),
		extAuthRoute("keys", "/keys", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/auth:80", RequestHeaders: []string{"x-api-key"}}),
	))
	c := client()

	res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/app/x?y=1", nil, "Host", "app.example",
		"Authorization", "Bearer good", "Cookie", "s=1", "X-Auth-User", "mallory", "X-Other", "o", "X-Forwarded-For", "6.6.6.6",
		"X-Forwarded-User", "mallory"))
	if res.code != http.StatusOK || res.echo.Backend != "app" {
		t.Fatalf("admitted GET: %d %q, want 200 from app", res.code, res.body)
	}
	if got := res.echo.Header["X-Auth-User"]; !slices.Equal(got, []string{"alice"}) {
		t.Errorf("backend's X-Auth-User = %q, want only the server's [alice]", got)
	}
	// A forwarding header the server sets (oauth2-proxy's X-Forwarded-User)
	// reaches the backend, the client's own never.
	if got := res.echo.Header["X-Forwarded-User"]; !slices.Equal(got, []string{"alice"}) {
		t.Errorf("backend's X-Forwarded-User = %q, want only the server's [alice]", got)
	}
	if got := res.echo.Header.Get("X-Not-Listed"); got != "" {
		t.Errorf("backend got X-Not-Listed %q, a header of the answer not in UpstreamHeaders", got)
	}
	if res.echo.Header.Get("X-Other") != "o" || res.echo.Header.Get("Authorization") != "Bearer good" {
		t.Errorf("backend lost client headers: %v", res.echo.Header)
	}
	seen := auth.last(t)
	if seen.method != http.MethodGet || seen.path != "/check/app/x" || seen.query != "y=1" || seen.host != auth.addr {
		t.Errorf("server saw %s %s?%s Host %s, want GET /check/app/x?y=1 Host %s", seen.method, seen.path, seen.query, seen.host, auth.addr)
	}
	want := map[string]string{
		"Authorization": "Bearer good", "Cookie": "s=1",
		"X-Forwarded-Host": "app.example", "X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/app/x?y=1",
		"X-Forwarded-Proto": "http", "X-Forwarded-For": "127.0.0.1",
	}
	for k, v := range want {
		if got := seen.header[k]; !slices.Equal(got, []string{v}) {
			t.Errorf("server's %s = %q, want [%q]", k, got, v)
		}
	}
	for _, k := range []string{"X-Other", "X-Auth-User", "X-Forwarded-User", "User-Agent", "Accept-Encoding"} {
		if v, ok := seen.header[k]; ok {
			t.Errorf("server got %s %q, not a header it is sent", k, v)
		}
	}

	res = do(t, c, extAuthRequest(t, http.MethodPost, port, "/app/form", strings.NewReader("payload"), "Authorization", "Bearer good"))
	if res.code != http.StatusOK || res.echo.BodyLen != 7 || res.echo.Method != http.MethodPost {
		t.Errorf("admitted POST: %d, backend saw %s with %d body bytes, want 200 and POST with 7", res.code, res.echo.Method, res.echo.BodyLen)
	}
	if seen := auth.last(t); seen.method != http.MethodPost || seen.contentLength != 0 {
		t.Errorf("server saw %s with Content-Length %d, want POST without a body", seen.method, seen.contentLength)
	}

	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/app/anon", nil, "Authorization", "Bearer anon", "X-Auth-User", "mallory"))
	if res.code != http.StatusOK || res.echo.Header["X-Auth-User"] != nil {
		t.Errorf("admitted without a user: %d, backend's X-Auth-User %q, want 200 and none", res.code, res.echo.Header["X-Auth-User"])
	}

	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/keys", nil, "X-Api-Key", "k", "Authorization", "Bearer nope"))
	if res.code != http.StatusOK {
		t.Errorf("admitted by X-Api-Key: %d, want 200", res.code)
	}
	if seen := auth.last(t); seen.header.Get("X-Api-Key") != "k" || seen.header.Get("Authorization") != "" || seen.path != "/keys" {
		t.Errorf("server of RequestHeaders [x-api-key] saw path %s, X-Api-Key %q, Authorization %q", seen.path, seen.header.Get("X-Api-Key"), seen.header.Get("Authorization"))
	}
	if p.fastServed(port) == 0 {
		t.Error("the fast path served none of the GETs")
	}
}

// TestExtAuthHTTPDeny: a denial reaches the client with its status,
// headers and body, never the backend; ClientHeaders restricts the
// headers; a redirect keeps its Location; a large body is cut at
// extAuthMaxBody.
func TestExtAuthHTTPDeny(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	auth := startHTTPAuth(t, func(h http.HandlerFunc) *testBackend { return startBackend(t, "auth", false, h) })
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app), epSet("ns/auth:80", auth.testBackend)},
		extAuthRoute("app", "/app", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/auth:80"}),
		extAuthRoute("some", "/some", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/auth:80", ClientHeaders: []string{"www-authenticate"}}),
	))
	c := client()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		res := do(t, c, extAuthRequest(t, method, port, "/app/x", strings.NewReader("b")))
		if res.code != http.StatusUnauthorized || res.body != `{"error":"denied"}` {
			t.Errorf("%s denied: %d %q, want 401 with the server's body", method, res.code, res.body)
		}
		if res.header.Get("WWW-Authenticate") != `Bearer realm="test"` || res.header.Get("X-Deny-Reason") != "no-token" || res.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s denied: headers %v, want the server's WWW-Authenticate, X-Deny-Reason and Content-Type", method, res.header)
		}
	}
	res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/some", nil))
	if res.code != http.StatusUnauthorized || res.header.Get("WWW-Authenticate") == "" || res.header.Get("X-Deny-Reason") != "" {
		t.Errorf("ClientHeaders [www-authenticate]: %d, headers %v, want 401 with WWW-Authenticate only", res.code, res.header)
	}
	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/app/login?next=1", nil))
	if res.code != http.StatusFound || res.header.Get("Location") != "https://login.example/?rd=/app/login?next=1" {
		t.Errorf("redirect: %d Location %q, want 302 to the login page", res.code, res.header.Get("Location"))
	}
	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/app/x", nil, "Authorization", "Bearer big"))
	if res.code != http.StatusForbidden || len(res.body) != extAuthMaxBody {
		t.Errorf("denial with a 100 KiB body: %d with %d bytes, want 403 with %d", res.code, len(res.body), extAuthMaxBody)
	}
	if n := app.hits.Load(); n != 0 {
		t.Errorf("the backend got %d denied requests", n)
	}
}

// TestExtAuthHTTPFailures: a server down, too slow, answering 5xx or
// without endpoints fails the request with 503, or with FailOpen lets it
// through without the client's UpstreamHeaders; failures are counted.
func TestExtAuthHTTPFailures(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	auth := startHTTPAuth(t, func(h http.HandlerFunc) *testBackend { return startBackend(t, "auth", false, h) })
	dead := testkit.FreePortInt32(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	ea := func(set string, failOpen bool) snapshot.ExtAuth {
		return snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: set, FailOpen: failOpen, Timeout: snapshot.Duration(300 * time.Millisecond), UpstreamHeaders: []string{"x-auth-user"}}
	}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{
		epSet("ns/app:80", app), epSet("ns/auth:80", auth.testBackend),
		{Name: "ns/down:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: dead}}},
		{Name: "ns/empty:80"},
	},
		extAuthRoute("down", "/down", ea("ns/down:80", false)),
		extAuthRoute("down-open", "/open/down", ea("ns/down:80", true)),
		extAuthRoute("empty", "/empty", ea("ns/empty:80", false)),
		extAuthRoute("auth", "/auth", ea("ns/auth:80", false)),
		extAuthRoute("auth-open", "/open/auth", ea("ns/auth:80", true)),
	))
	c := client()
	cases := []struct {
		path, auth string
		want       int
	}{
		{"/down", "Bearer good", http.StatusServiceUnavailable},
		{"/open/down", "Bearer good", http.StatusOK},
		{"/empty", "Bearer good", http.StatusServiceUnavailable},
		{"/auth/slow", "Bearer slow", http.StatusServiceUnavailable},
		{"/open/auth/slow", "Bearer slow", http.StatusOK},
		{"/auth/boom", "Bearer boom", http.StatusServiceUnavailable},
		{"/open/auth/boom", "Bearer boom", http.StatusOK},
		// A denial is never failed open.
		{"/open/auth/deny", "Bearer bad", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		res := do(t, c, extAuthRequest(t, http.MethodGet, port, tc.path, nil, "Authorization", tc.auth, "X-Auth-User", "mallory"))
		if res.code != tc.want {
			t.Errorf("%s with %s: %d %q, want %d", tc.path, tc.auth, res.code, res.body, tc.want)
		}
		if res.code == http.StatusOK && res.echo.Header["X-Auth-User"] != nil {
			t.Errorf("%s failed open with the client's X-Auth-User %q", tc.path, res.echo.Header["X-Auth-User"])
		}
		if res.code == http.StatusServiceUnavailable && strings.Contains(res.body, "internal trouble") {
			t.Errorf("%s relayed the server's 5xx body %q", tc.path, res.body)
		}
	}
	for route, n := range map[string]float64{"down": 1, "down-open": 1, "empty": 1, "auth": 2, "auth-open": 2} {
		if got := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", route, "kind", "ext_auth"); got != n {
			t.Errorf("ext_auth failures of %s: %v, want %v", route, got, n)
		}
	}
}

// TestExtAuthHTTPOverTLS: a server in a set with upstream TLS is asked
// over TLS, verified against the set's CA; one whose certificate does not
// verify fails the request with 503.
func TestExtAuthHTTPOverTLS(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	ca := newTestCA(t, "auth CA")
	cert := ca.issue(t, "ns/auth-cert", "auth", []string{"auth.test"})
	auth := startHTTPAuth(t, func(h http.HandlerFunc) *testBackend {
		return startHTTPSBackend(t, "auth", cert, nil, false, h)
	})
	other := newTestCA(t, "other CA")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{
		epSet("ns/app:80", app),
		tlsSet("ns/auth:443", &snapshot.UpstreamTLS{ServerName: "auth.test", CAPEM: ca.pem}, auth.testBackend),
		tlsSet("ns/wrong:443", &snapshot.UpstreamTLS{ServerName: "auth.test", CAPEM: other.pem}, auth.testBackend),
	},
		extAuthRoute("tls", "/tls", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/auth:443", UpstreamHeaders: []string{"x-auth-user"}}),
		extAuthRoute("wrong", "/wrong", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/wrong:443"}),
	))
	c := client()
	for range 3 {
		res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/tls", nil, "Authorization", "Bearer good"))
		if res.code != http.StatusOK || res.echo.Header.Get("X-Auth-User") != "alice" {
			t.Fatalf("over TLS: %d, backend's X-Auth-User %q, want 200 and alice", res.code, res.echo.Header.Get("X-Auth-User"))
		}
	}
	if !auth.last(t).tls {
		t.Error("the server was not asked over TLS")
	}
	if res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/wrong", nil, "Authorization", "Bearer good")); res.code != http.StatusServiceUnavailable {
		t.Errorf("server failing verification: %d, want 503", res.code)
	}
}

// TestExtAuthCompileErrors: a snapshot whose external authorization names
// an unknown endpoint set or mode, or has a malformed setting, is
// refused.
func TestExtAuthCompileErrors(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	good := snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/app:80"}
	cases := []struct {
		name string
		edit func(*snapshot.ExtAuth)
		want string
	}{
		{"unknown set", func(e *snapshot.ExtAuth) { e.EndpointSet = "ns/missing:80" }, `unknown endpoint set "ns/missing:80"`},
		{"unknown mode", func(e *snapshot.ExtAuth) { e.Mode = "SOAP" }, `unknown mode "SOAP"`},
		{"negative timeout", func(e *snapshot.ExtAuth) { e.Timeout = -1 }, "negative timeout"},
		{"negative body", func(e *snapshot.ExtAuth) { e.MaxRequestBytes = -1 }, "negative maxRequestBytes"},
		{"relative prefix", func(e *snapshot.ExtAuth) { e.PathPrefix = "check" }, "does not start with /"},
		{"escaped prefix", func(e *snapshot.ExtAuth) { e.PathPrefix = "/a%2Fb" }, "not an unescaped path character"},
		{"bad header", func(e *snapshot.ExtAuth) { e.UpstreamHeaders = []string{"bad header"} }, "invalid header name"},
	}
	for _, tc := range cases {
		ea := good
		tc.edit(&ea)
		err := p.Apply(retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app)}, extAuthRoute("r", "/", ea)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app)}, extAuthRoute("r", "/", good)))
}

// TestExtAuthWithoutConnections: a state compiled without the data
// plane's policy environment has no connections, so its authorization
// fails: 503, or admitted with FailOpen.
func TestExtAuthWithoutConnections(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	for _, failOpen := range []bool{false, true} {
		s := retrySnapshot(80, []*snapshot.EndpointSet{epSet("ns/app:80", app)},
			extAuthRoute("r", "/", snapshot.ExtAuth{Mode: snapshot.ExtAuthHTTP, EndpointSet: "ns/app:80", FailOpen: failOpen}))
		st, err := compile(s, nil, newMetrics(nil))
		if err != nil {
			t.Fatal(err)
		}
		rt := st.router.ports[80].any.routes[0]
		rec := httptest.NewRecorder()
		ex := &exchange{w: rec}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		admitted := rt.policies.extAuth.admit(ex, req, rt)
		if admitted != failOpen || (!failOpen && rec.Code != http.StatusServiceUnavailable) {
			t.Errorf("failOpen %v: admitted %v with %d, want %v", failOpen, admitted, rec.Code, failOpen)
		}
	}
}

// authzServer is a real envoy.service.auth.v3.Authorization server on
// loopback that records the CheckRequests it gets and decides by what the
// path holds:
//
//	/allow: OK, with upstream headers x-auth-user (no append flag:
//	  overwrite), x-append (append), x-if-absent (ADD_IF_ABSENT),
//	  x-remove-me removed and x-authz-checked added to the response;
//	/deny: PERMISSION_DENIED with 401, www-authenticate, x-reason, body;
//	/forbid: PERMISSION_DENIED with no DeniedResponse;
//	/error: a gRPC INTERNAL error;
//	/error-response: UNAVAILABLE with an ErrorResponse body;
//	/slow: no answer until the call is abandoned;
//	anything else: OK, with nothing to change.
type authzServer struct {
	addr string
	port int32
	mu   sync.Mutex
	reqs []*authv3.CheckRequest
}

func startAuthz(t testing.TB, opts ...grpc.ServerOption) *authzServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &authzServer{addr: ln.Addr().String(), port: int32(ln.Addr().(*net.TCPAddr).Port)}
	s := grpc.NewServer(opts...)
	authv3.RegisterAuthorizationServer(s, a)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return a
}

func hv(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, Value: v}}
}

// Check implements authv3.AuthorizationServer.
func (a *authzServer) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	path := req.GetAttributes().GetRequest().GetHttp().GetPath()
	denied := &rpcstatus.Status{Code: int32(codes.PermissionDenied)}
	switch {
	case strings.Contains(path, "/allow"):
		return &authv3.CheckResponse{Status: &rpcstatus.Status{}, HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers: []*corev3.HeaderValueOption{
				hv("x-auth-user", "alice"),
				{Header: &corev3.HeaderValue{Key: "x-append", Value: "server"}, Append: wrapperspb.Bool(true)},
				{Header: &corev3.HeaderValue{Key: "x-if-absent", Value: "server"}, AppendAction: corev3.HeaderValueOption_ADD_IF_ABSENT},
				hv("x-new", "fresh"),
				hv(":path", "/hijacked"),
			},
			HeadersToRemove:      []string{"x-remove-me", "host"},
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{hv("x-authz-checked", "yes")},
		}}}, nil
	case strings.Contains(path, "/deny"):
		return &authv3.CheckResponse{Status: denied, HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized},
			Headers: []*corev3.HeaderValueOption{hv("www-authenticate", `Bearer realm="grpc"`), hv("x-reason", "policy")},
			Body:    "denied by policy",
		}}}, nil
	case strings.Contains(path, "/forbid"):
		return &authv3.CheckResponse{Status: denied}, nil
	case strings.Contains(path, "/error-response"):
		return &authv3.CheckResponse{Status: &rpcstatus.Status{Code: int32(codes.Unavailable)}, HttpResponse: &authv3.CheckResponse_ErrorResponse{
			ErrorResponse: &authv3.DeniedHttpResponse{Body: "policy engine down"},
		}}, nil
	case strings.Contains(path, "/error"):
		return nil, status.Error(codes.Internal, "boom")
	case strings.Contains(path, "/slow"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &authv3.CheckResponse{Status: &rpcstatus.Status{}}, nil
}

func (a *authzServer) last(t testing.TB) *authv3.AttributeContext {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.reqs) == 0 {
		t.Fatal("the authorization server got no CheckRequest")
	}
	return a.reqs[len(a.reqs)-1].GetAttributes()
}

func grpcAuthRoute(id, path, set string, mutate ...func(*snapshot.ExtAuth)) snapshot.Route {
	ea := snapshot.ExtAuth{Mode: snapshot.ExtAuthGRPC, EndpointSet: set, Timeout: snapshot.Duration(500 * time.Millisecond)}
	for _, m := range mutate {
		m(&ea)
	}
	return extAuthRoute(id, path, ea)
}

func failOpen(e *snapshot.ExtAuth) { e.FailOpen = true }

// TestExtAuthGRPCAdmit: an OK answer admits with the server's header
// mutations applied to what the backend sees and its response headers on
// the client's answer; the server gets the method, path, headers, host,
// scheme, protocol and the source and destination addresses.
func TestExtAuthGRPCAdmit(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	authz := startAuthz(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	sets := []*snapshot.EndpointSet{epSet("ns/app:80", app), {Name: "ns/authz:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}}}
	p.mustApply(t, retrySnapshot(port, sets,
		grpcAuthRoute("allow", "/allow", "ns/authz:9000", func(e *snapshot.ExtAuth) { e.UpstreamHeaders = []string{"x-spoofable"} }),
		grpcAuthRoute("plain", "/plain", "ns/authz:9000"),
	))
	c := client()
	req := extAuthRequest(t, http.MethodGet, port, "/allow/x?q=1", nil, "Host", "app.example", "X-Request-Id", "req-42",
		"X-Auth-User", "mallory", "X-Append", "client", "X-If-Absent", "client", "X-Remove-Me", "1", "X-Spoofable", "client",
		"X-Custom", "a", "X-Custom", "b", "Cookie", "a=1", "Cookie", "b=2", "X-Forwarded-For", "6.6.6.6")
	res := do(t, c, req)
	if res.code != http.StatusOK || res.echo.Backend != "app" {
		t.Fatalf("admitted: %d %q, want 200 from app", res.code, res.body)
	}
	bh := res.echo.Header
	for k, want := range map[string][]string{
		"X-Auth-User": {"alice"}, "X-Append": {"client", "server"}, "X-If-Absent": {"client"}, "X-New": {"fresh"},
		"X-Remove-Me": nil, "X-Spoofable": nil,
	} {
		if got := bh[k]; !slices.Equal(got, want) {
			t.Errorf("backend's %s = %q, want %q", k, got, want)
		}
	}
	if res.echo.Path != "/allow/x" || res.echo.Host != "app.example" {
		t.Errorf("backend saw %s on %s: the server's :path or host mutations were applied", res.echo.Path, res.echo.Host)
	}
	if res.header.Get("X-Authz-Checked") != "yes" {
		t.Errorf("client's answer lacks the server's X-Authz-Checked: %v", res.header)
	}

	attrs := authz.last(t)
	hr := attrs.GetRequest().GetHttp()
	if hr.GetMethod() != "GET" || hr.GetPath() != "/allow/x?q=1" || hr.GetHost() != "app.example" || hr.GetScheme() != "http" ||
		hr.GetProtocol() != "HTTP/1.1" || hr.GetId() != "req-42" || hr.GetSize() != 0 {
		t.Errorf("server saw method %q path %q host %q scheme %q protocol %q id %q size %d", hr.GetMethod(), hr.GetPath(), hr.GetHost(), hr.GetScheme(), hr.GetProtocol(), hr.GetId(), hr.GetSize())
	}
	for k, want := range map[string]string{
		"x-custom": "a,b", "cookie": "a=1; b=2", "x-auth-user": "mallory", ":authority": "app.example", ":method": "GET",
		":path": "/allow/x?q=1", "x-forwarded-for": "127.0.0.1", "x-forwarded-proto": "http",
	} {
		if got := hr.GetHeaders()[k]; got != want {
			t.Errorf("server's header %s = %q, want %q", k, got, want)
		}
	}
	for k := range hr.GetHeaders() {
		if k != strings.ToLower(k) {
			t.Errorf("server's header %q is not lower case", k)
		}
	}
	src := attrs.GetSource().GetAddress().GetSocketAddress()
	if src.GetAddress() != "127.0.0.1" || src.GetPortValue() == 0 {
		t.Errorf("server's source %s:%d, want 127.0.0.1 with the client's port", src.GetAddress(), src.GetPortValue())
	}
	if dst := attrs.GetDestination().GetAddress().GetSocketAddress(); dst.GetPortValue() != uint32(port) {
		t.Errorf("server's destination port %d, want the listener's %d", dst.GetPortValue(), port)
	}
	if attrs.GetRequest().GetTime() == nil {
		t.Error("server's request has no time")
	}

	// An OK without mutations, over net/http with a body.
	res = do(t, c, extAuthRequest(t, http.MethodPut, port, "/plain", strings.NewReader("abc"), "X-Auth-User", "mallory"))
	if res.code != http.StatusOK || res.echo.BodyLen != 3 || res.echo.Header.Get("X-Auth-User") != "mallory" {
		t.Errorf("plain OK: %d, body %d, X-Auth-User %q, want 200, 3 and the client's", res.code, res.echo.BodyLen, res.echo.Header.Get("X-Auth-User"))
	}
	if hr := authz.last(t).GetRequest().GetHttp(); hr.GetMethod() != "PUT" || hr.GetSize() != 3 || hr.GetBody() != "" {
		t.Errorf("server saw %s, size %d, body %q, want PUT of size 3 without the body", hr.GetMethod(), hr.GetSize(), hr.GetBody())
	}

	// One connection per endpoint, kept across snapshots.
	p.env.extAuth.mu.Lock()
	before := len(p.env.extAuth.conns)
	p.env.extAuth.mu.Unlock()
	p.mustApply(t, retrySnapshot(port, sets, grpcAuthRoute("plain2", "/plain", "ns/authz:9000")))
	if res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/plain", nil)); res.code != http.StatusOK {
		t.Errorf("after a new snapshot: %d, want 200", res.code)
	}
	p.env.extAuth.mu.Lock()
	after := len(p.env.extAuth.conns)
	p.env.extAuth.mu.Unlock()
	if before != 1 || after != 1 {
		t.Errorf("gRPC connections: %d, then %d after a new snapshot, want 1 kept", before, after)
	}
}

// TestExtAuthGRPCDeny: a denial reaches the client with the server's
// status (403 when it sets none), headers and body; an error answer gets
// 503 with its body, or with FailOpen is admitted.
func TestExtAuthGRPCDeny(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	authz := startAuthz(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app), {Name: "ns/authz:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}}},
		grpcAuthRoute("deny", "/deny", "ns/authz:9000"),
		grpcAuthRoute("forbid", "/forbid", "ns/authz:9000"),
		grpcAuthRoute("some", "/deny-some", "ns/authz:9000", func(e *snapshot.ExtAuth) { e.ClientHeaders = []string{"www-authenticate"} }),
		grpcAuthRoute("error-response", "/error-response", "ns/authz:9000"),
		grpcAuthRoute("error-response-open", "/error-response-open", "ns/authz:9000", failOpen),
	))
	c := client()
	res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/deny", nil))
	if res.code != http.StatusUnauthorized || res.body != "denied by policy" ||
		res.header.Get("WWW-Authenticate") != `Bearer realm="grpc"` || res.header.Get("X-Reason") != "policy" {
		t.Errorf("denied: %d %q %v, want 401 with the server's body, WWW-Authenticate and X-Reason", res.code, res.body, res.header)
	}
	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/deny-some", nil))
	if res.code != http.StatusUnauthorized || res.header.Get("WWW-Authenticate") == "" || res.header.Get("X-Reason") != "" {
		t.Errorf("ClientHeaders [www-authenticate]: %d %v, want 401 with WWW-Authenticate only", res.code, res.header)
	}
	if res = do(t, c, extAuthRequest(t, http.MethodPost, port, "/forbid", strings.NewReader("x"))); res.code != http.StatusForbidden {
		t.Errorf("denied without a response: %d, want 403", res.code)
	}
	res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/error-response", nil))
	if res.code != http.StatusServiceUnavailable || res.body != "policy engine down" {
		t.Errorf("error response: %d %q, want 503 with its body", res.code, res.body)
	}
	if res = do(t, c, extAuthRequest(t, http.MethodGet, port, "/error-response-open", nil)); res.code != http.StatusOK {
		t.Errorf("error response, FailOpen: %d, want 200", res.code)
	}
	if n := app.hits.Load(); n != 1 {
		t.Errorf("the backend got %d requests, want only the failed-open one", n)
	}
}

// TestExtAuthGRPCBody: with MaxRequestBytes the server gets the start of
// the body (partial or whole, as text or raw bytes) and the backend still
// receives all of it, declared or chunked.
func TestExtAuthGRPCBody(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	authz := startAuthz(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app), {Name: "ns/authz:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}}},
		grpcAuthRoute("body", "/body", "ns/authz:9000", func(e *snapshot.ExtAuth) { e.MaxRequestBytes = 8 }),
	))
	c := client()
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB
	cases := []struct {
		name, body string
		chunked    bool
		text       string
		raw        []byte
		partial    string
	}{
		{"longer", "0123456789abcdef", false, "01234567", nil, "true"},
		{"shorter", "hi", false, "hi", nil, "false"},
		{"exact", "12345678", false, "12345678", nil, "false"},
		{"chunked", big, true, "01234567", nil, "true"},
		// Declared past the read-ahead cap: streamed (streamedbody.go),
		// the prefix the server saw put back in front of the rest.
		{"streamed", big, false, "01234567", nil, "true"},
		{"binary", "\xff\xfe\xfd", false, "", []byte("\xff\xfe\xfd"), "false"},
	}
	for _, tc := range cases {
		var rd io.Reader = strings.NewReader(tc.body)
		if tc.chunked {
			rd = io.MultiReader(rd)
		}
		res := do(t, c, extAuthRequest(t, http.MethodPost, port, "/body", rd))
		if res.code != http.StatusOK || res.echo.BodyLen != int64(len(tc.body)) {
			t.Errorf("%s: %d, backend got %d body bytes, want 200 and %d", tc.name, res.code, res.echo.BodyLen, len(tc.body))
		}
		hr := authz.last(t).GetRequest().GetHttp()
		if hr.GetBody() != tc.text || !slices.Equal(hr.GetRawBody(), tc.raw) || hr.GetHeaders()["x-envoy-auth-partial-body"] != tc.partial {
			t.Errorf("%s: server got body %q raw %q partial %q, want %q %q %q", tc.name, hr.GetBody(), hr.GetRawBody(), hr.GetHeaders()["x-envoy-auth-partial-body"], tc.text, tc.raw, tc.partial)
		}
	}
	if res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/body", nil)); res.code != http.StatusOK {
		t.Errorf("no body: %d, want 200", res.code)
	}
	if hr := authz.last(t).GetRequest().GetHttp(); hr.GetBody() != "" || hr.GetHeaders()["x-envoy-auth-partial-body"] != "" {
		t.Errorf("no body: server got body %q, partial %q", hr.GetBody(), hr.GetHeaders()["x-envoy-auth-partial-body"])
	}
}

// TestExtAuthGRPCBodyStalls: a streamed body whose start the server read
// and that then stalls is the client's fault (408), as without the
// server: the prefix put back leaves the body the request's own.
func TestExtAuthGRPCBodyStalls(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	authz := startAuthz(t)
	p, port := newEdgePlane(t, Options{RequestBodyTimeout: 300 * time.Millisecond})
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{epSet("ns/app:80", app), {Name: "ns/authz:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}}},
		grpcAuthRoute("body", "/body", "ns/authz:9000", func(e *snapshot.ExtAuth) { e.MaxRequestBytes = 8 }),
	))
	c := dialPlane(t, port)
	start := time.Now()
	_, _ = fmt.Fprintf(c, "POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 200000\r\n\r\n%s", strings.Repeat("x", 100000))
	_, got := closedWithin(t, c, start, 5*time.Second)
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Errorf("stalled body after the server's look answered %q, want 408", got)
	}
	if hr := authz.last(t).GetRequest().GetHttp(); hr.GetBody() != "xxxxxxxx" {
		t.Errorf("server got body %q, want the first 8 bytes", hr.GetBody())
	}
}

// TestExtAuthGRPCFailures: a gRPC error, a server down or too slow fails
// the request with 503, or with FailOpen lets it through.
func TestExtAuthGRPCFailures(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	authz := startAuthz(t)
	dead := testkit.FreePortInt32(t)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{
		epSet("ns/app:80", app),
		{Name: "ns/authz:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}},
		{Name: "ns/down:9000", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: dead}}},
	},
		grpcAuthRoute("error", "/error", "ns/authz:9000"),
		grpcAuthRoute("error-open", "/open/error", "ns/authz:9000", failOpen),
		grpcAuthRoute("slow", "/slow", "ns/authz:9000"),
		grpcAuthRoute("slow-open", "/open/slow", "ns/authz:9000", failOpen),
		grpcAuthRoute("down", "/down", "ns/down:9000"),
		grpcAuthRoute("down-open", "/open/down", "ns/down:9000", failOpen),
	))
	c := client()
	for path, want := range map[string]int{
		"/error": 503, "/open/error": 200, "/slow": 503, "/open/slow": 200, "/down": 503, "/open/down": 200,
	} {
		if res := do(t, c, extAuthRequest(t, http.MethodGet, port, path, nil)); res.code != want {
			t.Errorf("%s: %d %q, want %d", path, res.code, res.body, want)
		}
	}
	for _, route := range []string{"error", "error-open", "slow", "slow-open", "down", "down-open"} {
		if got := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", route, "kind", "ext_auth"); got != 1 {
			t.Errorf("ext_auth failures of %s: %v, want 1", route, got)
		}
	}
}

// TestExtAuthGRPCOverTLS: a gRPC server in a set with upstream TLS is
// called over TLS (h2), verified against the set's CA.
func TestExtAuthGRPCOverTLS(t *testing.T) {
	app := startBackend(t, "app", false, nil)
	ca := newTestCA(t, "authz CA")
	cert := ca.issue(t, "ns/authz-cert", "authz", []string{"authz.test"})
	kp := keyPair(t, cert)
	authz := startAuthz(t, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12})))
	other := newTestCA(t, "other CA")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	ep := []snapshot.Endpoint{{Address: "127.0.0.1", Port: authz.port}}
	p.mustApply(t, retrySnapshot(port, []*snapshot.EndpointSet{
		epSet("ns/app:80", app),
		{Name: "ns/authz:9443", Endpoints: ep, TLS: &snapshot.UpstreamTLS{ServerName: "authz.test", CAPEM: ca.pem}},
		{Name: "ns/wrong:9443", Endpoints: ep, TLS: &snapshot.UpstreamTLS{ServerName: "authz.test", CAPEM: other.pem}},
	},
		grpcAuthRoute("tls", "/allow", "ns/authz:9443"),
		grpcAuthRoute("wrong", "/wrong", "ns/wrong:9443"),
	))
	c := client()
	res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/allow", nil))
	if res.code != http.StatusOK || res.echo.Header.Get("X-Auth-User") != "alice" {
		t.Errorf("over TLS: %d, backend's X-Auth-User %q, want 200 and alice", res.code, res.echo.Header.Get("X-Auth-User"))
	}
	if res := do(t, c, extAuthRequest(t, http.MethodGet, port, "/wrong", nil)); res.code != http.StatusServiceUnavailable {
		t.Errorf("server failing verification: %d, want 503", res.code)
	}
}
