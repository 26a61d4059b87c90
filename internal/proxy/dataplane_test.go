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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func dur(d time.Duration) snapshot.Duration { return snapshot.Duration(d) }

// TestProxyFiltersAndAnswers drives every filter and every error answer
// through real sockets.
func TestProxyFiltersAndAnswers(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	b := startBackend(t, "b", false, nil)
	mirror := startBackend(t, "mirror", false, nil)
	slow := startBackend(t, "slow", false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	dead := testkit.FreePortInt32(t)
	port := testkit.FreePortInt32(t)
	p := newTestPlane(t)
	s := &snapshot.Snapshot{
		Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{
			epSet("ns/a:80", a), epSet("ns/ab:80", a, b), epSet("ns/b:80", b), {Name: "ns/dead:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: dead}}},
			{Name: "ns/empty:80"}, epSet("ns/mirror:80", mirror), epSet("ns/slow:80", slow),
		},
		Listeners: []snapshot.Listener{{
			Name: "gw/80", Port: port, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "app.example.com", Routes: []snapshot.Route{
				{ID: "headers", Match: prefix("/headers"),
					RequestHeaders:  &snapshot.HeaderModifier{Set: []snapshot.Header{{Name: "x-set", Value: "set"}}, Add: []snapshot.Header{{Name: "X-Add", Value: "added"}}, Remove: []string{"x-drop"}},
					ResponseHeaders: &snapshot.HeaderModifier{Set: []snapshot.Header{{Name: "X-Resp", Value: "r"}}, Remove: []string{"X-Remove-Me"}},
					Backends: []snapshot.Backend{{EndpointSet: "ns/a:80", Weight: 1,
						RequestHeaders:  &snapshot.HeaderModifier{Set: []snapshot.Header{{Name: "X-Backend-Req", Value: "a"}}},
						ResponseHeaders: &snapshot.HeaderModifier{Add: []snapshot.Header{{Name: "X-Backend-Resp", Value: "a"}}}}}},
				{ID: "prefix-rewrite", Match: prefix("/old"), Rewrite: &snapshot.URLRewrite{Path: &snapshot.PathModifier{Type: snapshot.ReplacePrefixMatch, Value: "/new"}}, Backends: to("ns/a:80")},
				{ID: "full-rewrite", Match: prefix("/full"), Rewrite: &snapshot.URLRewrite{Hostname: "rewritten.example", Path: &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: "/replaced"}}, Backends: to("ns/a:80")},
				{ID: "regex-rewrite", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: `/re/(\w+)/(\d+)`}},
					Rewrite: &snapshot.URLRewrite{Path: &snapshot.PathModifier{Type: snapshot.ReplaceRegex, Value: "/x/$2/$1"}}, Backends: to("ns/a:80")},
				{ID: "redirect", Match: prefix("/redirect"), Redirect: &snapshot.Redirect{Scheme: "https", Hostname: "secure.example.com", StatusCode: 301}},
				{ID: "redirect-port", Match: prefix("/moved"), Redirect: &snapshot.Redirect{Path: &snapshot.PathModifier{Type: snapshot.ReplacePrefixMatch, Value: "/here"}, StatusCode: 302}},
				{ID: "direct", Match: prefix("/direct"), DirectResponse: &snapshot.DirectResponse{StatusCode: 418, Body: "short and stout"}},
				{ID: "invalid", Match: prefix("/invalid"), Backends: []snapshot.Backend{{Invalid: true, Weight: 1}}},
				{ID: "no-backends", Match: prefix("/nobackends")},
				{ID: "empty", Match: prefix("/empty"), Backends: to("ns/empty:80")},
				{ID: "dead", Match: prefix("/dead"), Backends: to("ns/dead:80")},
				{ID: "timeout-request", Match: prefix("/slow/request"), Timeouts: &snapshot.Timeouts{Request: dur(100 * time.Millisecond)}, Backends: to("ns/slow:80")},
				{ID: "timeout-backend", Match: prefix("/slow/backend"), Timeouts: &snapshot.Timeouts{Backend: dur(100 * time.Millisecond)}, Backends: to("ns/slow:80")},
				{ID: "timeout-read", Match: prefix("/slow/read"), Timeouts: &snapshot.Timeouts{UpstreamRead: dur(100 * time.Millisecond)}, Backends: to("ns/slow:80")},
				{ID: "limited", Match: prefix("/limited"), MaxRequestBodyBytes: 10, Backends: to("ns/a:80")},
				{ID: "mirrored", Match: prefix("/mirrored"), Mirrors: []snapshot.Mirror{{EndpointSet: "ns/mirror:80"}}, Backends: to("ns/a:80")},
				{ID: "cors", Match: prefix("/cors"), CORS: &snapshot.CORS{AllowOrigins: []string{"https://ok.example", "https://*.wild.example"}, AllowMethods: []string{"GET", "PUT"},
					AllowHeaders: []string{"X-Token"}, ExposeHeaders: []string{"X-Backend"}, AllowCredentials: true, MaxAge: 600}, Backends: to("ns/a:80")},
				{ID: "weighted", Match: prefix("/weighted"), Backends: []snapshot.Backend{{EndpointSet: "ns/a:80", Weight: 3}, {EndpointSet: "ns/b:80", Weight: 1}}},
				{ID: "half-invalid", Match: prefix("/half-invalid"), Backends: []snapshot.Backend{{EndpointSet: "ns/a:80", Weight: 1}, {Invalid: true, Weight: 1}}},
				{ID: "round-robin", Match: prefix("/rr"), Backends: to("ns/ab:80")},
				{ID: "quiet", Match: prefix("/quiet"), AccessLogOff: true, Backends: to("ns/a:80")},
				{ID: "method-post", Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/m"}, Method: "POST"}, DirectResponse: &snapshot.DirectResponse{StatusCode: 201}},
				{ID: "root", Match: prefix("/"), Backends: to("ns/a:80")},
			}}},
		}},
	}
	p.mustApply(t, s)
	c := client()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	host := []string{"Host", "app.example.com"}
	hf := func(path string, extra ...string) result {
		return fetch(t, c, base+path, append(append([]string{}, host...), extra...)...)
	}

	t.Run("header modifiers and forwarding headers", func(t *testing.T) {
		r := hf("/headers", "X-Drop", "1", "X-Set", "client", "X-Add", "client",
			"Forwarded", "for=6.6.6.6", "X-Forwarded-For", "6.6.6.6", "X-Forwarded-Port", "1", "X-Real-IP", "6.6.6.6",
			"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https", "Connection", "X-Hop", "X-Hop", "secret")
		if r.code != 200 {
			t.Fatalf("status %d %q", r.code, r.body)
		}
		h := r.echo.Header
		for name, want := range map[string]string{"X-Set": "set", "X-Backend-Req": "a", "X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "app.example.com"} {
			if got := strings.Join(h.Values(name), ","); got != want {
				t.Errorf("upstream %s = %q, want %q", name, got, want)
			}
		}
		if got := h.Values("X-Add"); len(got) != 2 || got[0] != "client" || got[1] != "added" {
			t.Errorf("upstream X-Add = %q, want [client added]", got)
		}
		for _, gone := range []string{"X-Drop", "Forwarded", "X-Forwarded-Port", "X-Real-Ip", "X-Hop"} {
			if v := h.Values(gone); len(v) > 0 {
				t.Errorf("upstream saw %s = %q, want it stripped", gone, v)
			}
		}
		if r.header.Get("X-Resp") != "r" || r.header.Get("X-Backend-Resp") != "a" || r.header.Get("X-Remove-Me") != "" {
			t.Errorf("response headers %v: want X-Resp, X-Backend-Resp and no X-Remove-Me", r.header)
		}
	})
	t.Run("forwarding headers without filters", func(t *testing.T) {
		r := hf("/rr", "X-Forwarded-For", "6.6.6.6", "Forwarded", "for=6.6.6.6", "X-Real-IP", "6.6.6.6", "X-Forwarded-Proto", "https", "X-Custom", "kept", "Keep-Alive", "timeout=5")
		h := r.echo.Header
		for name, want := range map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "app.example.com", "X-Custom": "kept"} {
			if got := strings.Join(h.Values(name), ","); got != want {
				t.Errorf("upstream %s = %q, want %q", name, got, want)
			}
		}
		for _, gone := range []string{"Forwarded", "X-Real-Ip", "Keep-Alive"} {
			if v := h.Values(gone); len(v) > 0 {
				t.Errorf("upstream saw %s = %q, want it stripped", gone, v)
			}
		}
	})
	t.Run("rewrites", func(t *testing.T) {
		if r := hf("/old/page?q=1"); r.echo.Path != "/new/page" || r.echo.Query != "q=1" {
			t.Errorf("prefix rewrite: upstream path %q query %q", r.echo.Path, r.echo.Query)
		}
		if r := hf("/old"); r.echo.Path != "/new" {
			t.Errorf("prefix rewrite of the bare prefix: %q", r.echo.Path)
		}
		if r := hf("/full/a/b"); r.echo.Path != "/replaced" || r.echo.Host != "rewritten.example" {
			t.Errorf("full rewrite: path %q host %q", r.echo.Path, r.echo.Host)
		} else if r.echo.Header.Get("X-Forwarded-Host") != "app.example.com" {
			t.Errorf("X-Forwarded-Host after a hostname rewrite = %q, want the client's host", r.echo.Header.Get("X-Forwarded-Host"))
		}
		if r := hf("/re/users/42"); r.echo.Path != "/x/42/users" {
			t.Errorf("regex rewrite: %q", r.echo.Path)
		}
	})
	t.Run("redirects", func(t *testing.T) {
		if r := hf("/redirect/x?y=1"); r.code != 301 || r.header.Get("Location") != "https://secure.example.com/redirect/x?y=1" {
			t.Errorf("redirect = %d %q", r.code, r.header.Get("Location"))
		}
		if r := hf("/moved/x"); r.code != 302 || r.header.Get("Location") != "http://app.example.com/here/x" {
			t.Errorf("redirect = %d %q (external port 80 must be omitted)", r.code, r.header.Get("Location"))
		}
	})
	t.Run("answers", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
			body string
		}{
			{"/direct", 418, "short and stout"},
			{"/invalid", 500, "no valid backend"},
			{"/nobackends", 500, "no valid backend"},
			{"/empty", 503, "no healthy upstream"},
			{"/dead", 502, "upstream"},
			{"/slow/request", 504, "timed out"},
			{"/slow/backend", 504, "timed out"},
			{"/slow/read", 504, "timed out"},
		} {
			r := hf(tc.path)
			if r.code != tc.code || !strings.Contains(r.body, tc.body) || len(r.body) > 100 {
				t.Errorf("%s = %d %q, want %d with a short body containing %q", tc.path, r.code, r.body, tc.code, tc.body)
			}
		}
		if r := fetch(t, c, base+"/", "Host", "unknown.example.com"); r.code != 404 {
			t.Errorf("unknown host = %d, want 404", r.code)
		}
		if r := hf("/m"); r.code != 200 || r.echo.Backend != "a" {
			t.Errorf("GET /m should skip the POST-only route and reach root, got %d %+v", r.code, r.echo)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/m", nil)
		req.Host = "app.example.com"
		if r := do(t, c, req); r.code != 201 {
			t.Errorf("POST /m = %d, want 201", r.code)
		}
	})
	t.Run("max body", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/limited", strings.NewReader(strings.Repeat("x", 11)))
		req.Host = "app.example.com"
		if r := do(t, c, req); r.code != 413 {
			t.Errorf("11-byte body with Content-Length = %d, want 413", r.code)
		}
		req, _ = http.NewRequest(http.MethodPost, base+"/limited", io.MultiReader(strings.NewReader(strings.Repeat("x", 64<<10))))
		req.Host = "app.example.com"
		req.ContentLength = -1
		if r := do(t, c, req); r.code != 413 {
			t.Errorf("chunked 64KiB body = %d, want 413", r.code)
		}
		req, _ = http.NewRequest(http.MethodPost, base+"/limited", strings.NewReader("0123456789"))
		req.Host = "app.example.com"
		if r := do(t, c, req); r.code != 200 || r.echo.BodyLen != 10 {
			t.Errorf("10-byte body = %d (len %d), want 200", r.code, r.echo.BodyLen)
		}
	})
	t.Run("mirror", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, base+"/mirrored/x", strings.NewReader("mirror me"))
		req.Host = "app.example.com"
		if r := do(t, c, req); r.code != 200 || r.echo.Backend != "a" {
			t.Fatalf("mirrored request = %d %+v", r.code, r.echo)
		}
		testkit.EventuallyWithin(t, waitFor, "the mirror to receive the request", func() bool {
			e, ok := mirror.last()
			return ok && e.Path == "/mirrored/x" && e.BodyLen == int64(len("mirror me")) && e.Host == "app.example.com"
		})
	})
	t.Run("cors", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodOptions, base+"/cors", nil)
		req.Host = "app.example.com"
		req.Header.Set("Origin", "https://a.wild.example")
		req.Header.Set("Access-Control-Request-Method", "PUT")
		r := do(t, c, req)
		if r.code != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://a.wild.example" ||
			r.header.Get("Access-Control-Allow-Methods") != "GET, PUT" || r.header.Get("Access-Control-Allow-Headers") != "X-Token" ||
			r.header.Get("Access-Control-Max-Age") != "600" || r.header.Get("Access-Control-Allow-Credentials") != "true" ||
			r.header.Get("Access-Control-Expose-Headers") != "X-Backend" {
			t.Errorf("preflight = %d %v", r.code, r.header)
		}
		if a.hits.Load() == 0 {
			t.Fatal("backend a was never hit")
		}
		r = hf("/cors", "Origin", "https://ok.example")
		if r.code != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://ok.example" || r.header.Get("Access-Control-Expose-Headers") != "X-Backend" {
			t.Errorf("actual CORS request = %d %v", r.code, r.header)
		}
		r = hf("/cors", "Origin", "https://evil.example")
		if r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("disallowed origin got Access-Control-Allow-Origin %q", r.header.Get("Access-Control-Allow-Origin"))
		}
	})
	t.Run("weights and load balancing", func(t *testing.T) {
		counts := map[string]int{}
		for i := 0; i < 400; i++ {
			counts[hf("/weighted").echo.Backend]++
		}
		if counts["a"] < 240 || counts["a"] > 360 || counts["b"] < 40 || counts["a"]+counts["b"] != 400 {
			t.Errorf("weights 3:1 gave %v", counts)
		}
		counts = map[string]int{}
		for i := 0; i < 100; i++ {
			counts[hf("/rr").echo.Backend]++
		}
		if counts["a"] != 50 || counts["b"] != 50 {
			t.Errorf("round robin over two endpoints gave %v, want 50/50", counts)
		}
		codes := map[int]int{}
		for i := 0; i < 200; i++ {
			codes[hf("/half-invalid").code]++
		}
		if codes[500] < 50 || codes[200] < 50 || codes[500]+codes[200] != 200 {
			t.Errorf("one valid and one invalid backend of equal weight gave %v, want about half 500s", codes)
		}
	})
	t.Run("access log and metrics", func(t *testing.T) {
		hf("/quiet/x")
		hf("/direct")
		var found bool
		for _, line := range strings.Split(strings.TrimSpace(p.log.String()), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("access log line %q is not JSON: %v", line, err)
			}
			for _, k := range []string{"host", "method", "path", "status", "client_ip", "route_id", "upstream", "upstream_addr", "duration_ms", "bytes_sent", "error"} {
				if _, ok := m[k]; !ok {
					t.Errorf("access log line lacks %q: %s", k, line)
				}
			}
			if m["route_id"] == "quiet" {
				t.Errorf("route with accessLogOff was logged: %s", line)
			}
			if m["route_id"] == "direct" && m["status"] == float64(418) {
				found = true
			}
			if m["route_id"] == "dead" && m["status"] != float64(502) {
				t.Errorf("dead route logged %v", m["status"])
			}
			if m["route_id"] == "dead" && m["error"] == "" {
				t.Errorf("dead route logged no error: %s", line)
			}
			if m["route_id"] == "" && m["status"] == float64(404) && m["error"] != "no_route" {
				t.Errorf("an unrouted request logged error %v, want no_route", m["error"])
			}
			if m["upstream_addr"] != "" && !strings.Contains(fmt.Sprint(m["upstream"]), "/") {
				t.Errorf("a proxied request logged upstream %v, want its endpoint set (%s)", m["upstream"], line)
			}
		}
		if !found {
			t.Errorf("no access log line for the direct route")
		}
		for _, want := range []string{
			`coxswain_proxy_requests_total{listener="gw/80",method="GET",route="direct",status_code="418"}`,
			`coxswain_proxy_requests_total{listener="gw/80",method="GET",route="",status_code="404"}`,
			`coxswain_proxy_upstream_errors_total{kind="connect",route="dead"}`,
			`coxswain_proxy_upstream_errors_total{kind="timeout",route="timeout-request"}`,
			`coxswain_proxy_snapshot_info{version="` + p.Version() + `"} 1`,
			`coxswain_proxy_request_duration_seconds_count{listener="gw/80"}`,
			`coxswain_proxy_active_connections`,
		} {
			if !strings.Contains(scrape(t, p), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func scrape(t testing.TB, p *testPlane) string {
	t.Helper()
	mfs, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			val := 0.0
			switch {
			case m.Counter != nil:
				val = m.GetCounter().GetValue()
			case m.Gauge != nil:
				val = m.GetGauge().GetValue()
			case m.Histogram != nil:
				fmt.Fprintf(&sb, "%s_count{%s} %d\n", mf.GetName(), strings.Join(labels, ","), m.GetHistogram().GetSampleCount())
				continue
			}
			fmt.Fprintf(&sb, "%s{%s} %g\n", mf.GetName(), strings.Join(labels, ","), val)
		}
	}
	return sb.String()
}

// TestReadinessAndRejectedSnapshots: not ready until the first Apply; a bad
// snapshot or an unbindable port changes nothing.
func TestReadinessAndRejectedSnapshots(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	ready := NewReadiness("no routing snapshot applied yet")
	dp := NewDataPlane(Options{BindHost: "127.0.0.1", Readiness: ready})
	t.Cleanup(func() { _ = dp.Shutdown(context.Background()) })
	if ready.Reason() == "" {
		t.Fatal("ready before any snapshot")
	}
	port := testkit.FreePortInt32(t)
	good := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}})}}
	if err := dp.Apply(good); err != nil {
		t.Fatal(err)
	}
	if ready.Reason() != "" {
		t.Fatalf("not ready after Apply: %s", ready.Reason())
	}
	v := dp.Version()
	if want, _ := snapshot.Version(good); v != want {
		t.Fatalf("Version() = %q, want %q", v, want)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	busyPort := int32(busy.Addr().(*net.TCPAddr).Port)
	bad := []struct {
		name string
		s    *snapshot.Snapshot
		want string
	}{
		{"bad certificate", &snapshot.Snapshot{Scope: snapshot.SharedPool(), Certificates: []snapshot.Certificate{{Name: "ns/c", CertPEM: "nope", KeyPEM: "nope"}},
			Listeners: []snapshot.Listener{{Name: "tls", Port: testkit.FreePortInt32(t), Protocol: snapshot.ProtocolHTTPS, TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: "ns/c"}}}}}}, "certificate"},
		{"invalid reference", &snapshot.Snapshot{Scope: snapshot.SharedPool(),
			Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/missing:80")}}})}}, "unknown endpoint set"},
		{"port in use", &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{httpListener(port), httpListener(busyPort)}}, "bind"},
		{"nil", nil, "nil"},
	}
	for _, tc := range bad {
		if err := dp.Apply(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply = %v, want an error containing %q", tc.name, err, tc.want)
		}
		if dp.Version() != v {
			t.Errorf("%s: version changed after a rejected snapshot", tc.name)
		}
		if got := dp.BoundPorts(); len(got) != 1 || got[0] != port {
			t.Errorf("%s: bound ports %v, want [%d]", tc.name, got, port)
		}
		if r := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)); r.code != 200 || r.echo.Backend != "a" {
			t.Errorf("%s: the last good snapshot no longer serves: %d", tc.name, r.code)
		}
	}
}

// TestListenersBindAndUnbind: removing one listener leaves connections on
// the others open; a new listener serves at once.
func TestListenersBindAndUnbind(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	p1, p2, p3 := testkit.FreePortInt32(t), testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	var changes [][]int32
	p.OnBoundPortsChange(func(ports []int32) { changes = append(changes, ports) })
	vh := snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}}
	mk := func(ports ...int32) *snapshot.Snapshot {
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)}}
		for _, port := range ports {
			s.Listeners = append(s.Listeners, httpListener(port, vh))
		}
		snapshot.Normalize(s)
		return s
	}
	p.mustApply(t, mk(p1, p2))
	c := client()
	var conns []net.Conn
	reused := func(url string) bool {
		var got bool
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			got = i.Reused
			conns = append(conns, i.Conn)
		}}))
		if r := do(t, c, req); r.code != 200 {
			t.Fatalf("%s = %d", url, r.code)
		}
		return got
	}
	u1 := fmt.Sprintf("http://127.0.0.1:%d/", p1)
	reused(u1)
	p.mustApply(t, mk(p1, p3))
	if !reused(u1) {
		t.Error("the keep-alive connection on the untouched listener was not reused after the swap")
	}
	if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/", p3)); r.code != 200 {
		t.Errorf("new listener = %d", r.code)
	}
	testkit.EventuallyWithin(t, waitFor, "the removed listener to refuse connections", func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p2), time.Second)
		if err == nil {
			_ = conn.Close()
		}
		return err != nil
	})
	want := []int32{p1, p3}
	if p1 > p3 {
		want = []int32{p3, p1}
	}
	if got := p.BoundPorts(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("BoundPorts = %v, want %v", got, want)
	}
	if len(changes) != 2 || fmt.Sprint(changes[1]) != fmt.Sprint(want) {
		t.Errorf("port change callbacks = %v", changes)
	}
	p.mustApply(t, mk(p1, p3))
	if len(changes) != 2 {
		t.Errorf("re-applying the same ports called the callback: %v", changes)
	}
}

// TestShutdownDrains: an in-flight request finishes; new connections are
// refused.
func TestShutdownDrains(t *testing.T) {
	started := make(chan struct{})
	slow := startBackend(t, "slow", false, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, "finished")
	})
	dp := NewDataPlane(Options{BindHost: "127.0.0.1"})
	port := testkit.FreePortInt32(t)
	if err := dp.Apply(&snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/s:80", slow)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/s:80")}}})}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dp.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if r := <-done; r.code != 200 || r.body != "finished" {
		t.Errorf("in-flight request = %d %q, want it to finish", r.code, r.body)
	}
	if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		_ = conn.Close()
		t.Error("listener still accepts after Shutdown")
	}
	if err := dp.Apply(&snapshot.Snapshot{Scope: snapshot.SharedPool()}); err == nil {
		t.Error("Apply after Shutdown succeeded")
	}
}

// TestWebSocket: an Upgrade is spliced through both ways.
func TestWebSocket(t *testing.T) {
	ws := startBackend(t, "ws", false, func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n")
		_ = brw.Flush()
		// Echo each line upper-cased until the client closes.
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = brw.WriteString(strings.ToUpper(line))
			_ = brw.Flush()
		}
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{{Name: "ns/ws:80", AppProtocol: snapshot.AppProtocolWS, Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: ws.port}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "ws", Backends: to("ns/ws:80")}}})}})
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "GET /chat HTTP/1.1\r\nHost: ws.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("handshake = %d %v", resp.StatusCode, resp.Header)
	}
	for _, msg := range []string{"hello\n", "second message\n"} {
		_, _ = io.WriteString(conn, msg)
		got, err := br.ReadString('\n')
		if err != nil || got != strings.ToUpper(msg) {
			t.Fatalf("echo of %q = %q, %v", msg, got, err)
		}
	}
}

// TestPooledConnectionClosedByUpstream: an upstream that closes every
// connection after one response (without saying so) must not fail the
// next request that picks the dead pooled connection.
func TestPooledConnectionClosedByUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var served atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
					return
				}
				served.Add(1)
				_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				time.Sleep(20 * time.Millisecond) // let the proxy pool the connection, then drop it
			}()
		}
	}()
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/flaky:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: int32(ln.Addr().(*net.TCPAddr).Port)}}}},
		Listeners:    []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/flaky:80")}}})}})
	c := client()
	for i := 0; i < 5; i++ {
		if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port)); r.code != 200 || r.body != "ok" {
			t.Fatalf("request %d = %d %q", i, r.code, r.body)
		}
		time.Sleep(50 * time.Millisecond) // the upstream has closed the pooled connection by now
	}
	if served.Load() != 5 {
		t.Errorf("upstream served %d requests, want 5", served.Load())
	}
}

func (p *testPlane) fastServed(port int32) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bl := p.bound[listenerAddr{port: port}]; bl != nil && bl.fast != nil {
		return bl.fast.served.Load()
	}
	return 0
}

// TestFastPathAndHandoff: on one connection, pipelined GETs are answered
// in order by the fast path, and so is a small POST; a POST of a larger
// body hands the connection to net/http with its bytes intact; HEAD, HTTP/1.0, Connection: close and chunked
// responses with trailers keep their HTTP semantics.
func TestFastPathAndHandoff(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	chunky := startBackend(t, "chunky", false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		_, _ = io.WriteString(w, "part one;")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc")
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a), epSet("ns/chunky:80", chunky)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "chunky", Match: prefix("/chunky"), Backends: to("ns/chunky:80")},
			{ID: "r", Backends: to("ns/a:80")},
		}})}})
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	read := func(method string) (*http.Response, string) {
		t.Helper()
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	_, _ = io.WriteString(conn, "GET /one HTTP/1.1\r\nHost: a.example\r\n\r\nGET /two HTTP/1.1\r\nHost: a.example\r\n\r\n")
	for _, want := range []string{"/one", "/two"} {
		if resp, body := read("GET"); resp.StatusCode != 200 || !strings.Contains(body, `"path":"`+want+`"`) {
			t.Fatalf("pipelined %s = %d %s", want, resp.StatusCode, body)
		}
	}
	if n := p.fastServed(port); n != 2 {
		t.Errorf("fast path served %d requests, want 2", n)
	}
	// A head that arrives in pieces.
	_, _ = io.WriteString(conn, "GET /split HTTP/1.1\r\nHo")
	time.Sleep(20 * time.Millisecond)
	_, _ = io.WriteString(conn, "st: a.example\r\n\r\n")
	if resp, body := read("GET"); resp.StatusCode != 200 || !strings.Contains(body, `"path":"/split"`) {
		t.Fatalf("split head = %d %s", resp.StatusCode, body)
	}
	_, _ = io.WriteString(conn, "HEAD /head HTTP/1.1\r\nHost: a.example\r\n\r\n")
	if resp, body := read("HEAD"); resp.StatusCode != 200 || body != "" || resp.ContentLength <= 0 {
		t.Errorf("HEAD = %d, body %q, length %d", resp.StatusCode, body, resp.ContentLength)
	}
	_, _ = io.WriteString(conn, "GET /chunky HTTP/1.1\r\nHost: a.example\r\n\r\n")
	if resp, body := read("GET"); body != "part one;part two" || resp.Trailer.Get("X-Checksum") != "abc" {
		t.Errorf("chunked response = %q, trailers %v", body, resp.Trailer)
	}
	// A small body of known length, read by the fast path, then one too
	// large to read ahead, which it streams (streamedbody.go); then a
	// target with an escape, which hands the connection off.
	_, _ = io.WriteString(conn, "POST /post HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello")
	if resp, body := read("POST"); resp.StatusCode != 200 || !strings.Contains(body, `"bodyLen":5`) || !strings.Contains(body, `"path":"/post"`) {
		t.Fatalf("POST on the fast path = %d %s", resp.StatusCode, body)
	}
	_, _ = io.WriteString(conn, "POST /large HTTP/1.1\r\nHost: a.example\r\nContent-Length: 70000\r\n\r\n"+strings.Repeat("x", 70000))
	if resp, body := read("POST"); resp.StatusCode != 200 || !strings.Contains(body, `"bodyLen":70000`) || !strings.Contains(body, `"path":"/large"`) {
		t.Fatalf("large POST, streamed = %d %s", resp.StatusCode, body)
	}
	_, _ = io.WriteString(conn, "GET /esc%61ped HTTP/1.1\r\nHost: a.example\r\n\r\n")
	if resp, body := read("GET"); resp.StatusCode != 200 || !strings.Contains(body, `"path":"/escaped"`) || resp.Close {
		t.Fatalf("escaped GET, handed off = %d %s close=%v", resp.StatusCode, body, resp.Close)
	}
	_, _ = io.WriteString(conn, "GET /after HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n")
	if resp, body := read("GET"); resp.StatusCode != 200 || !strings.Contains(body, `"path":"/after"`) || !resp.Close {
		t.Errorf("GET on the handed-off connection = %d %s close=%v", resp.StatusCode, body, resp.Close)
	}
	if n := p.fastServed(port); n != 7 {
		t.Errorf("fast path served %d requests, want 7 (GET, GET, split GET, HEAD, chunked GET, POST, large POST)", n)
	}

	// HTTP/1.0 goes to net/http; Connection: close on the fast path closes.
	for _, req := range []string{"GET /old HTTP/1.0\r\nHost: a.example\r\n\r\n", "GET /close HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n"} {
		c2, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c2, req)
		all, err := io.ReadAll(c2) // returns only when the proxy closes
		_ = c2.Close()
		if err != nil || !strings.HasPrefix(string(all), "HTTP/1.") || !strings.Contains(string(all), " 200 OK") {
			t.Errorf("%q answered %q, %v", req, all, err)
		}
	}
}

// TestLeastRequest: with one request held on endpoint A, a LeastRequest
// set sends every further request to B; round robin would alternate.
func TestLeastRequest(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	var holdOnce atomic.Bool
	mkBackend := func(name string) *testBackend {
		return startBackend(t, name, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" && holdOnce.CompareAndSwap(false, true) {
				held <- struct{}{}
				<-release
			}
			w.Header().Set("X-Backend", name)
		})
	}
	a, b := mkBackend("a"), mkBackend("b")
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	set := epSet("ns/lr:80", a, b)
	set.LoadBalancer = snapshot.LeastRequest
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{set},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "lr", Backends: to("ns/lr:80")}}})}})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	done := make(chan string, 1)
	go func() { done <- fetch(t, client(), base+"/hold").header.Get("X-Backend") }()
	<-held
	counts := map[string]int{}
	for i := 0; i < 20; i++ {
		counts[fetch(t, client(), base+"/next").header.Get("X-Backend")]++
	}
	close(release)
	holder := <-done
	other := "b"
	if holder == "b" {
		other = "a"
	}
	if counts[other] != 20 {
		t.Errorf("with %s busy, LeastRequest spread %v; want all 20 on %s", holder, counts, other)
	}
}

// A snapshot discovery has validated and named is shown by that name (what
// the controller's fleet view and the proxy's discovery client say), and
// serves like any other.
func TestApplyVersionedNamesTheSnapshot(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	dp := NewDataPlane(Options{BindHost: "127.0.0.1"})
	t.Cleanup(func() { _ = dp.Shutdown(context.Background()) })
	port := testkit.FreePortInt32(t)
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}})}}
	snapshot.Normalize(s)
	if err := dp.ApplyVersioned(s, "from-discovery"); err != nil {
		t.Fatal(err)
	}
	if v := dp.Version(); v != "from-discovery" {
		t.Fatalf("Version() = %q, want the version discovery named", v)
	}
	if r := fetch(t, client(), fmt.Sprintf("http://127.0.0.1:%d/", port)); r.code != 200 || r.echo.Backend != "a" {
		t.Fatalf("GET = %d from %q", r.code, r.echo.Backend)
	}
	if err := dp.ApplyVersioned(s, ""); err != nil {
		t.Fatal(err)
	}
	if want, _ := snapshot.Version(s); dp.Version() != want {
		t.Fatalf("an unnamed snapshot is named %q, want its snapshot.Version %q", dp.Version(), want)
	}
}
