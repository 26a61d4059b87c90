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
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func certSerial(t testing.TB, c snapshot.Certificate) string {
	t.Helper()
	blk, _ := pem.Decode([]byte(c.CertPEM))
	crt, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return crt.SerialNumber.String()
}

func tlsSnapshot(port int32, set *snapshot.EndpointSet, certs []snapshot.Certificate, sni []snapshot.SNICertificate) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Scope:        snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{set},
		Certificates: certs,
		Listeners: []snapshot.Listener{{Name: "tls", Port: port, Protocol: snapshot.ProtocolHTTPS, TLS: &snapshot.ListenerTLS{Certificates: sni},
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{{ID: "tls-route", Backends: to(set.Name)}}}}}},
	}
	snapshot.Normalize(s)
	return s
}

// TestTLSSNIRotationAndALPN: the certificate follows SNI (exact, wildcard,
// default); after a rotation an open connection keeps its certificate and
// a new connection gets the new one; ALPN offers h2 and http/1.1.
func TestTLSSNIRotationAndALPN(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	exact, wild, def := testCert(t, "a.example.com"), testCert(t, "*.wild.example.com"), testCert(t, "default.example")
	sni := func(e snapshot.Certificate) []snapshot.SNICertificate {
		return []snapshot.SNICertificate{{Hostname: "a.example.com", Certificate: e.Name}, {Hostname: "*.wild.example.com", Certificate: wild.Name}, {Certificate: def.Name}}
	}
	p.mustApply(t, tlsSnapshot(port, epSet("ns/a:80", a), []snapshot.Certificate{exact, wild, def}, sni(exact)))
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	handshake := func(serverName string, protos ...string) (string, string) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: serverName, InsecureSkipVerify: true, NextProtos: protos})
		if err != nil {
			t.Fatalf("handshake for %q: %v", serverName, err)
		}
		defer func() { _ = conn.Close() }()
		cs := conn.ConnectionState()
		return cs.PeerCertificates[0].SerialNumber.String(), cs.NegotiatedProtocol
	}
	for name, want := range map[string]snapshot.Certificate{"a.example.com": exact, "x.wild.example.com": wild, "x.y.wild.example.com": wild, "other.example": def, "": def} {
		if got, _ := handshake(name); got != certSerial(t, want) {
			t.Errorf("SNI %q got certificate %s, want %s", name, got, want.Name)
		}
	}
	if _, proto := handshake("a.example.com", "h2", "http/1.1"); proto != "h2" {
		t.Errorf("ALPN with h2 offered negotiated %q", proto)
	}
	if _, proto := handshake("a.example.com", "http/1.1"); proto != "http/1.1" {
		t.Errorf("ALPN with http/1.1 offered negotiated %q", proto)
	}

	// One HTTP/2 client keeps its connection across the rotation.
	pool := x509.NewCertPool()
	for _, c := range []snapshot.Certificate{exact, wild, def} {
		pool.AppendCertsFromPEM([]byte(c.CertPEM))
	}
	rotated := testCert(t, "a.example.com")
	pool.AppendCertsFromPEM([]byte(rotated.CertPEM))
	var p2 http.Protocols
	p2.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.example.com"}, Protocols: &p2}
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	url := "https://" + addr + "/"
	serialOf := func(c *http.Client) (string, string) {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.String(), resp.Proto
	}
	before, proto := serialOf(c)
	if before != certSerial(t, exact) || proto != "HTTP/2.0" {
		t.Fatalf("before rotation: cert %s over %s", before, proto)
	}
	p.mustApply(t, tlsSnapshot(port, epSet("ns/a:80", a), []snapshot.Certificate{rotated, wild, def}, sni(rotated)))
	if kept, _ := serialOf(c); kept != before {
		t.Errorf("open connection changed certificate after rotation: %s → %s", before, kept)
	}
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.example.com"}, Protocols: &p2}, Timeout: 10 * time.Second}
	if got, _ := serialOf(fresh); got != certSerial(t, rotated) {
		t.Errorf("new connection after rotation got certificate %s, want the rotated one", got)
	}
	if got, _ := handshake("other.example"); got != certSerial(t, def) {
		t.Errorf("default certificate changed by an unrelated rotation")
	}
}

// TestH2CBothSides: a cleartext HTTP/2 client reaches an h2c upstream over
// HTTP/2, and an HTTP/1.1 upstream over HTTP/1.1.
func TestH2CBothSides(t *testing.T) {
	up2 := startBackend(t, "h2c", true, nil)
	up1 := startBackend(t, "h1", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/h1:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: up1.port}}},
			{Name: "ns/h2c:80", AppProtocol: snapshot.AppProtocolH2C, Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: up2.port}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "h2c", Match: prefix("/h2c"), Backends: to("ns/h2c:80")},
			{ID: "h1", Backends: to("ns/h1:80")},
		}})}})
	var pr http.Protocols
	pr.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &pr}, Timeout: 10 * time.Second}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for _, tc := range []struct{ path, upstreamProto string }{{"/h2c/x", "HTTP/2.0"}, {"/plain", "HTTP/1.1"}} {
		req, _ := http.NewRequest(http.MethodPost, base+tc.path, strings.NewReader("body"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("%s: client side spoke %s, want HTTP/2.0 (h2c)", tc.path, resp.Proto)
		}
		if !strings.Contains(string(body), `"proto":"`+tc.upstreamProto+`"`) || !strings.Contains(string(body), `"bodyLen":4`) {
			t.Errorf("%s: upstream saw %s, want %s", tc.path, body, tc.upstreamProto)
		}
	}
	// Plain HTTP/1.1 still works on the same port.
	if r := fetch(t, client(), base+"/plain"); r.code != 200 || r.echo.Proto != "HTTP/1.1" {
		t.Errorf("HTTP/1.1 client: %d %+v", r.code, r.echo)
	}
}

// TestGRPCThroughProxy: unary and server-streaming gRPC calls, with their
// status in trailers, through TLS h2 and cleartext h2c to an h2c upstream.
func TestGRPCThroughProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("coxswain.test", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	upPort := int32(ln.Addr().(*net.TCPAddr).Port)

	p := newTestPlane(t)
	plain, secure := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cert := testCert(t, "grpc.example.com")
	set := &snapshot.EndpointSet{Name: "ns/grpc:50051", AppProtocol: snapshot.AppProtocolH2C, Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: upPort}}}
	vh := snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "grpcroute/ns/health:0", Backends: to(set.Name)}}}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{set}, Certificates: []snapshot.Certificate{cert},
		Listeners: []snapshot.Listener{httpListener(plain, vh),
			{Name: "tls", Port: secure, Protocol: snapshot.ProtocolHTTPS, TLS: &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: cert.Name}}}, VirtualHosts: []*snapshot.VirtualHost{&vh}}}}
	snapshot.Normalize(s)
	p.mustApply(t, s)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(cert.CertPEM))
	for name, conn := range map[string]struct {
		port  int32
		creds credentials.TransportCredentials
	}{
		"h2c": {plain, insecure.NewCredentials()},
		"tls": {secure, credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "grpc.example.com"})},
	} {
		t.Run(name, func(t *testing.T) {
			cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", conn.port), grpc.WithTransportCredentials(conn.creds))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cc.Close() }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			hc := healthpb.NewHealthClient(cc)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "coxswain.test"})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("Check = %v, %v", resp, err)
			}
			// The status of a failed call travels in trailers.
			_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "unknown"})
			if status.Code(err) != codes.NotFound {
				t.Errorf("Check(unknown) = %v, want NotFound", err)
			}
			// Server streaming: each update arrives while the stream stays open.
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			stream, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{Service: "coxswain.test"})
			if err != nil {
				t.Fatal(err)
			}
			if m, err := stream.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("first Watch message = %v, %v", m, err)
			}
			hs.SetServingStatus("coxswain.test", healthpb.HealthCheckResponse_NOT_SERVING)
			if m, err := stream.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Fatalf("streamed Watch update = %v, %v", m, err)
			}
			hs.SetServingStatus("coxswain.test", healthpb.HealthCheckResponse_SERVING)
		})
	}
}

// TestLargeBodiesStreamWithBoundedMemory sends 100 MiB up and 100 MiB down
// through the proxy and checks the heap never grows by more than a small
// fraction of that.
func TestLargeBodiesStreamWithBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 200 MiB")
	}
	const size = 100 << 20
	up := startBackend(t, "bulk", false, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			_, _ = fmt.Fprintf(w, "%d", n)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		_, _ = io.CopyN(w, zeroReader{}, size)
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/bulk:80", up)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "bulk", Backends: to("ns/bulk:80")}}})}})

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for i := 0; i < 6000; i++ { // at most 60 s
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/bulk", port)
	req, _ := http.NewRequest(http.MethodPost, url, io.LimitReader(zeroReader{}, size))
	req.ContentLength = -1 // chunked: nothing may rely on knowing the length
	if r := do(t, c, req); r.code != 200 || r.body != fmt.Sprint(size) {
		t.Errorf("upload: %d %q", r.code, r.body)
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || n != size {
		t.Errorf("download: %d bytes, %v", n, err)
	}
	close(stop)
	wg.Wait()
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap in use grew by at most %.1f MiB while streaming 2 × 100 MiB", float64(growth)/(1<<20))
	if growth > 24<<20 {
		t.Errorf("heap grew by %d MiB: the body is being buffered", growth>>20)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestSwapUnderLoad: 1000 snapshot swaps while clients send requests
// without pause; not one request may fail.
func TestSwapUnderLoad(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	b := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	mk := func(i int) *snapshot.Snapshot {
		set := epSet("ns/app:80", a)
		if i%2 == 1 {
			set = epSet("ns/app:80", b)
		}
		routes := []snapshot.Route{}
		if i%3 == 0 {
			routes = append(routes, snapshot.Route{ID: fmt.Sprintf("extra-%d", i), Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathExact, Value: "/other"}}, Backends: to("ns/app:80")})
		}
		routes = append(routes, snapshot.Route{ID: "main", Match: prefix("/"), Backends: to("ns/app:80"),
			RequestHeaders: &snapshot.HeaderModifier{Set: []snapshot.Header{{Name: "X-Generation", Value: fmt.Sprint(i)}}}})
		return &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{set},
			Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: routes})}}
	}
	p.mustApply(t, mk(0))
	url := fmt.Sprintf("http://127.0.0.1:%d/load", port)
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := client()
			if w == 3 { // one client opens a new connection every time
				c.Transport = &http.Transport{DisableKeepAlives: true}
			}
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}(w)
	}
	testkit.EventuallyWithin(t, waitFor, "the first requests", func() bool { return ok.Load() > 10 })
	for i := 1; i <= 1000; i++ {
		p.mustApply(t, mk(i))
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let requests interleave on a loaded machine
		}
		if i%100 == 1 || i%100 == 2 {
			// Traffic follows the swaps: the set just put in gets a request
			// (on a loaded machine 1,000 swaps may otherwise all come
			// before the clients' next requests).
			put := map[bool]*testBackend{true: b, false: a}[i%2 == 1]
			hits := put.hits.Load()
			testkit.EventuallyWithin(t, waitFor, "a request to the set of swap "+fmt.Sprint(i), func() bool { return put.hits.Load() > hits })
		}
	}
	before := ok.Load()
	testkit.EventuallyWithin(t, waitFor, "requests after the last swap", func() bool { return ok.Load() > before+10 })
	close(stop)
	wg.Wait()
	t.Logf("%d requests during 1000 swaps, %d failed", ok.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed during swaps; first: %v", failed.Load(), firstErr.Load())
	}
	if a.hits.Load() == 0 || b.hits.Load() == 0 {
		t.Errorf("swaps did not move traffic between endpoint sets: a=%d b=%d", a.hits.Load(), b.hits.Load())
	}
}

// TestStreamingResponsesAreNotBuffered: each chunk of a response of
// unknown length (server-sent events) reaches the client while the upstream
// is still writing, over the fast path (HTTP/1.1) and net/http (h2c).
func TestStreamingResponsesAreNotBuffered(t *testing.T) {
	step := make(chan struct{})
	up := startBackend(t, "sse", false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 3; i++ {
			_, _ = fmt.Fprintf(w, "data: event %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-step: // the client saw this event
			case <-time.After(10 * time.Second):
				return
			}
		}
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/sse:80", up)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "sse", Backends: to("ns/sse:80")}}})}})
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	for name, c := range map[string]*http.Client{
		"http1": client(),
		"h2c":   {Transport: &http.Transport{Protocols: &h2c}, Timeout: 20 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/events", port))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			br := bufio.NewReader(resp.Body)
			for i := 0; i < 3; i++ {
				line, err := br.ReadString('\n')
				if err != nil || line != fmt.Sprintf("data: event %d\n", i) {
					t.Fatalf("event %d: %q, %v", i, line, err)
				}
				_, _ = br.ReadString('\n') // the blank line ending the event
				step <- struct{}{}         // only now may the upstream send the next one
			}
		})
	}
}

// TestGRPCWithoutRouteIsUnimplemented: a gRPC call that matches no route
// gets HTTP 404, which gRPC clients read as Unimplemented (conformance
// GRPCRouteListenerHostnameMatching), over h2c and TLS, also on a
// connection that already carried calls.
func TestGRPCWithoutRouteIsUnimplemented(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	set := &snapshot.EndpointSet{Name: "ns/grpc:50051", AppProtocol: snapshot.AppProtocolH2C, Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: int32(ln.Addr().(*net.TCPAddr).Port)}}}
	p := newTestPlane(t)
	plain := testkit.FreePortInt32(t)
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{set},
		Listeners: []snapshot.Listener{httpListener(plain, snapshot.VirtualHost{Hostname: "grpc.example.com", Routes: []snapshot.Route{{ID: "g", Backends: to(set.Name)}}})}}
	snapshot.Normalize(s)
	p.mustApply(t, s)
	for _, authority := range []string{"grpc.example.com", "other.example.com", "grpc.example.com", "other.example.com"} {
		cc, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", plain), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(authority))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		_ = cc.Close()
		want := codes.OK
		if authority != "grpc.example.com" {
			want = codes.Unimplemented
		}
		if status.Code(err) != want {
			t.Errorf("%s: Check = %v, want %v", authority, err, want)
		}
	}
}
