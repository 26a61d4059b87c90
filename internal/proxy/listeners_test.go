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
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// listenerSwitchRig serves one backend on listeners whose protocols a
// test chooses per port, with clients for both protocols.
type listenerSwitchRig struct {
	t         *testing.T
	p         *testPlane
	backend   *testBackend
	cert      snapshot.Certificate
	plain     *http.Client
	tlsClient *http.Client
}

func newListenerSwitchRig(t *testing.T, set func(*Options)) *listenerSwitchRig {
	r := &listenerSwitchRig{t: t, p: newPlaneWith(t, set), backend: startBackend(t, "a", false, nil), cert: testCert(t, "a.example.com")}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(r.cert.CertPEM))
	r.plain = client()
	r.tlsClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.example.com"}}}
	t.Cleanup(r.plain.CloseIdleConnections)
	t.Cleanup(r.tlsClient.CloseIdleConnections)
	return r
}

// snapshot has an HTTPS listener on each port marked true, HTTP on the
// others.
func (r *listenerSwitchRig) snapshot(ports map[int32]bool) *snapshot.Snapshot {
	vh := snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/a:80")}}}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", r.backend)}, Certificates: []snapshot.Certificate{r.cert}}
	for port, isTLS := range ports {
		l := httpListener(port, vh)
		if isTLS {
			l.Protocol = snapshot.ProtocolHTTPS
			l.TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: r.cert.Name}}}
		}
		s.Listeners = append(s.Listeners, l)
	}
	snapshot.Normalize(s)
	return s
}

// get fetches / on port with the protocol's client and reports the
// status and whether the connection was reused; 0 when the request failed.
func (r *listenerSwitchRig) get(port int32, isTLS bool) (code int, reused bool) {
	c, scheme := r.plain, "http"
	if isTLS {
		c, scheme = r.tlsClient, "https"
	}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s://127.0.0.1:%d/", scheme, port), nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
	resp, err := c.Do(req)
	if err != nil {
		return 0, false
	}
	_, _ = io.Copy(io.Discard, resp.Body) // a drained body lets the connection be reused
	_ = resp.Body.Close()
	return resp.StatusCode, reused
}

// serves fails the test unless port answers 200 over its protocol and
// refuses the other one.
func (r *listenerSwitchRig) serves(port int32, isTLS bool, when string) {
	r.t.Helper()
	if code, _ := r.get(port, isTLS); code != http.StatusOK {
		r.t.Errorf("%s: port %d over TLS=%v answered %d, want 200", when, port, isTLS, code)
	}
	if code, _ := r.get(port, !isTLS); code == http.StatusOK {
		r.t.Errorf("%s: port %d also serves TLS=%v", when, port, !isTLS)
	}
}

// TestProtocolSwitchBindsFirst: a snapshot that switches a port from
// HTTP to HTTPS and adds a port that cannot be bound fails without
// touching the old listener, whose keep-alive connections go on; the
// switch alone works, in both directions.
func TestProtocolSwitchBindsFirst(t *testing.T) {
	r := newListenerSwitchRig(t, func(*Options) {})
	a := testkit.FreePortInt32(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	b := int32(taken.Addr().(*net.TCPAddr).Port)

	r.p.mustApply(t, r.snapshot(map[int32]bool{a: false}))
	if code, _ := r.get(a, false); code != http.StatusOK {
		t.Fatalf("HTTP on port %d answered %d", a, code)
	}
	err = r.p.Apply(r.snapshot(map[int32]bool{a: true, b: false}))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d", b)) {
		t.Fatalf("Apply with port %d taken: %v, want its bind error", b, err)
	}
	if code, reused := r.get(a, false); code != http.StatusOK || !reused {
		t.Errorf("after the failed Apply: HTTP on port %d answered %d (connection reused %v), want 200 on the old connection", a, code, reused)
	}
	r.serves(a, false, "after the failed Apply")
	if got := r.p.BoundPorts(); len(got) != 1 || got[0] != a {
		t.Errorf("BoundPorts = %v, want [%d]", got, a)
	}

	r.p.mustApply(t, r.snapshot(map[int32]bool{a: true}))
	r.serves(a, true, "after switching to HTTPS")
	r.p.mustApply(t, r.snapshot(map[int32]bool{a: false}))
	r.serves(a, false, "after switching back to HTTP")
}

// TestProtocolSwitchRestoresOnFailure: when binding the new protocol on a
// switched port fails, every port switched so far serves its old
// protocol again and the Apply fails.
func TestProtocolSwitchRestoresOnFailure(t *testing.T) {
	var mu sync.Mutex
	failOnce := map[string]bool{}
	r := newListenerSwitchRig(t, func(o *Options) {
		o.listen = func(network, address string, keepAlive bool) (net.Listener, error) {
			mu.Lock()
			fail := failOnce[address]
			delete(failOnce, address)
			mu.Unlock()
			if fail {
				return nil, &net.OpError{Op: "listen", Net: network, Err: syscall.EADDRINUSE}
			}
			return listenTCP(network, address, keepAlive)
		}
	})
	a, c := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	if c < a {
		a, c = c, a // ports switch in order: a first, then c fails
	}
	r.p.mustApply(t, r.snapshot(map[int32]bool{a: false, c: false}))
	mu.Lock()
	failOnce[fmt.Sprintf("127.0.0.1:%d", c)] = true
	mu.Unlock()
	if err := r.p.Apply(r.snapshot(map[int32]bool{a: true, c: true})); err == nil {
		t.Fatal("Apply succeeded although the bind of the switched port failed")
	}
	r.serves(a, false, "after the failed switch, the port switched first")
	r.serves(c, false, "after the failed switch, the port that failed")
	if got := r.p.BoundPorts(); len(got) != 2 {
		t.Errorf("BoundPorts = %v, want both ports", got)
	}
	r.p.mustApply(t, r.snapshot(map[int32]bool{a: true, c: true}))
	r.serves(a, true, "after a retried switch")
	r.serves(c, true, "after a retried switch")
}

// TestHTTPListenerOneGoroutine: an HTTP listener that the fast path
// serves costs one goroutine, its socket's accept loop (a shared pool of
// 1,000 Gateways binds 1,000 ports, and each took three), and no request
// duration histogram until its first request. Every port still answers,
// on the fast path and on net/http after a hand-over (an HTTP/1.0
// request).
func TestHTTPListenerOneGoroutine(t *testing.T) {
	const n = 40
	p := newTestPlane(t)
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool()}
	ports := make([]int32, n)
	taken := map[int32]bool{}
	for i := range ports {
		for ports[i] == 0 || taken[ports[i]] { // free ports may repeat
			ports[i] = testkit.FreePortInt32(t)
		}
		taken[ports[i]] = true
		s.Listeners = append(s.Listeners, snapshot.Listener{Name: fmt.Sprintf("gateway/default/gw%d/80", i), Port: ports[i], ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "app.example.com", Routes: []snapshot.Route{
				{ID: "direct", Match: prefix("/"), DirectResponse: &snapshot.DirectResponse{StatusCode: 200, Body: "ok"}}}}}})
	}
	before := runtime.NumGoroutine()
	p.mustApply(t, s)
	if grew := runtime.NumGoroutine() - before; grew > n+5 {
		t.Errorf("%d HTTP listeners started %d goroutines, want at most %d", n, grew, n+5)
	}
	// A listener's request duration histogram appears at its first
	// request: 40 idle listeners, none.
	if m := scrape(t, p); strings.Contains(m, "coxswain_proxy_request_duration_seconds") {
		t.Errorf("idle listeners have request duration series:\n%s", m)
	}
	c := client()
	for i, port := range ports {
		if i == n/2 {
			m := scrape(t, p)
			for j := range ports {
				series := fmt.Sprintf(`coxswain_proxy_request_duration_seconds_count{listener="gateway/default/gw%d/80"}`, j)
				if has := strings.Contains(m, series); has != (j < i) {
					t.Errorf("after requests to the first %d listeners, listener %d has its duration series: %v", i, j, has)
				}
			}
		}
		if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port), "Host", "app.example.com"); r.code != 200 || strings.TrimSpace(r.body) != "ok" {
			t.Fatalf("port %d: %d %q", port, r.code, r.body)
		}
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(waitFor))
		if _, err := io.WriteString(conn, "GET / HTTP/1.0\r\nHost: app.example.com\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(conn)
		_ = conn.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.") || !strings.Contains(string(b), " 200 ") || !strings.HasSuffix(strings.TrimSpace(string(b)), "ok") {
			t.Fatalf("port %d: HTTP/1.0 answered %q", port, b)
		}
	}
	if served := p.fastServed(ports[0]); served != 1 {
		t.Errorf("the fast path served %d requests on port %d, want 1 (the HTTP/1.0 one is net/http's)", served, ports[0])
	}
}

// TestSameListenersKeepTheirSockets: a snapshot whose listeners are at
// the addresses, of the kinds, of the last one's (a route change) binds
// and unbinds nothing, and reports no port change, and its routes serve;
// a listener lost since (a failed restore) is bound again.
func TestSameListenersKeepTheirSockets(t *testing.T) {
	a := startBackend(t, "a", false, nil)
	p := newTestPlane(t)
	p1, p2 := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	changes := 0
	p.OnBoundPortsChange(func([]int32) { changes++ })
	mk := func(path string) *snapshot.Snapshot {
		vh := snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r" + path,
			Match: snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: path}}, Backends: to("ns/a:80")}}}
		s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/a:80", a)},
			Listeners: []snapshot.Listener{httpListener(p1, vh), httpListener(p2, vh)}}
		snapshot.Normalize(s)
		return s
	}
	p.mustApply(t, mk("/one"))
	bound := maps.Clone(p.bound)
	ports := p.BoundPorts()
	p.mustApply(t, mk("/two"))
	if !p.state.Load().sameListeners {
		t.Fatal("the state does not know its listeners are the last one's")
	}
	if changes != 1 {
		t.Errorf("%d port change callbacks, want the first apply's only", changes)
	}
	for addr, bl := range p.bound {
		if bound[addr] != bl {
			t.Errorf("listener %s was bound again", addr)
		}
	}
	if got := p.BoundPorts(); !slices.Equal(got, ports) {
		t.Errorf("BoundPorts = %v, want %v", got, ports)
	}
	c := client()
	for _, port := range []int32{p1, p2} {
		if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/two", port)); r.code != 200 {
			t.Errorf("port %d: the new route = %d", port, r.code)
		}
		if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/one", port)); r.code != 404 {
			t.Errorf("port %d: the old route = %d, want 404", port, r.code)
		}
	}

	// A listener lost: the next apply of the same listeners binds it.
	p.mu.Lock()
	p.unbind(p.bound[listenerAddr{port: p2}])
	p.mu.Unlock()
	p.mustApply(t, mk("/three"))
	if r := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/three", p2)); r.code != 200 {
		t.Errorf("the lost listener, bound again: %d", r.code)
	}
}
