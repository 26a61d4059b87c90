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
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// h2cClient speaks HTTP/2 with prior knowledge.
func h2cClient() *http.Client {
	var pr http.Protocols
	pr.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &pr}, Timeout: 10 * time.Second}
}

// directH2CConns counts the connections the port's HTTP/2 servers serve
// without an HTTP/1 connection around them (given keep, only those keep
// says yes to).
func directH2CConns(t *testing.T, p *testPlane, port int32, keep ...func(*coalescingConn) bool) int {
	t.Helper()
	hs := portServers(t, p, port)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	n := 0
	for _, ss := range hs.servers {
		ss.h2c.mu.Lock()
		for c := range ss.h2c.conns {
			if len(keep) == 0 || keep[0](c) {
				n++
			}
		}
		ss.h2c.mu.Unlock()
	}
	return n
}

// portServers is the net/http side of the listener bound to port.
func portServers(t *testing.T, p *testPlane, port int32) *httpServers {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, bl := range p.bound {
		if addr.port == port {
			return bl.srv
		}
	}
	t.Fatalf("port %d is not bound", port)
	return nil
}

// TestH2CServedDirectly: an h2c connection whose preface the fast path
// read is served by net/http's HTTP/2 server without an HTTP/1 connection
// around it: requests are answered, the connection is counted while open
// and released when it closes, and `OPTIONS *` is answered as net/http
// answers it, without reaching a route.
func TestH2CServedDirectly(t *testing.T) {
	backend := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", backend)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}})
	c := h2cClient()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	r := fetch(t, c, base+"/x")
	if r.code != 200 || r.echo.Path != "/x" {
		t.Fatalf("GET /x over h2c: %d %+v", r.code, r.echo)
	}
	if n := directH2CConns(t, p, port); n != 1 {
		t.Fatalf("%d connections served directly by the HTTP/2 server, want 1", n)
	}
	if got := metricValue(t, p, "coxswain_proxy_active_connections"); got != 1 {
		t.Errorf("active connections %v while the h2c connection is open, want 1", got)
	}

	req, _ := http.NewRequest(http.MethodOptions, base, nil)
	req.URL.Opaque = "*"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != "0" || len(body) != 0 || resp.Proto != "HTTP/2.0" {
		t.Errorf("OPTIONS * over h2c: %d %q Content-Length %q, want net/http's empty 200", resp.StatusCode, body, resp.Header.Get("Content-Length"))
	}
	if hits := backend.hits.Load(); hits != 1 {
		t.Errorf("the backend saw %d requests, want 1 (OPTIONS * is the server's)", hits)
	}
	if strings.Contains(p.log.String(), `"method":"OPTIONS"`) {
		t.Errorf("OPTIONS * reached the proxy's handler (it logged it); net/http answers it itself:\n%s", p.log.String())
	}

	c.CloseIdleConnections()
	testkit.EventuallyWithin(t, waitFor, "the closed connection released", func() bool {
		return directH2CConns(t, p, port) == 0 && metricValue(t, p, "coxswain_proxy_active_connections") == 0
	})
}

// TestH2CPrefaceInTwoParts: a client whose preface arrives in two writes
// is given to net/http as before, which serves it.
func TestH2CPrefaceInTwoParts(t *testing.T) {
	backend := startBackend(t, "b", false, nil)
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", backend)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}})
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	h := &h2Conn{c: c, br: bufio.NewReader(c)}
	if _, err := io.WriteString(c, h2cPreface[:18]); err != nil { // "PRI * HTTP/2.0\r\n\r\n"
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := io.WriteString(c, h2cPreface[18:]); err != nil {
		t.Fatal(err)
	}
	h.writeFrame(t, 0x4, 0, 0, nil) // SETTINGS
	if status, _ := h.get(t, 1); status != 0x88 {
		t.Fatalf("status byte %#x, want 0x88 (200)", status)
	}
	if n := directH2CConns(t, p, port); n != 0 {
		t.Errorf("%d connections served directly, want 0 (net/http read this preface)", n)
	}
}

// TestH2CDrainWaitsForStreams: a drain sends GOAWAY to a directly served
// h2c connection and waits for its stream in flight, which completes.
func TestH2CDrainWaitsForStreams(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	backend := startBackend(t, "b", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(started) })
			<-release
			_, _ = io.WriteString(w, "finished")
		}
	})
	p := newTestPlane(t)
	port := testkit.FreePortInt32(t)
	p.mustApply(t, &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", backend)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}})
	c := h2cClient()
	inflight := make(chan string, 1)
	go func() {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/slow", port))
		if err != nil {
			inflight <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		inflight <- fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Proto, body)
	}()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("the slow request did not reach the backend")
	}
	if n := directH2CConns(t, p, port); n != 1 {
		t.Fatalf("%d connections served directly, want 1", n)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- p.Shutdown(ctx)
	}()
	select {
	case err := <-shut:
		t.Fatalf("the drain ended (%v) while an HTTP/2 stream was in flight", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	if got := <-inflight; got != "200 HTTP/2.0 finished" {
		t.Errorf("in-flight h2c request = %q, want it to finish with 200", got)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown = %v, want nil", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the drain did not end after the stream and its connection did")
	}
}

// TestH2CServerBeforeServe: a listener's net/http servers can take an h2c
// connection straight away, before any connection was handed over to
// them: the first connections after a bind are served directly too (they
// went through an HTTP/1 connection before, and TestH2CServedDirectly
// failed when its request came first).
func TestH2CServerBeforeServe(t *testing.T) {
	p := newTestPlane(t)
	hs := p.newHTTPServers(testkit.FreePortInt32(t), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil, false,
		func(serverSettings) *http.Server {
			var pr http.Protocols
			pr.SetHTTP1(true)
			pr.SetUnencryptedHTTP2(true)
			return &http.Server{Protocols: &pr, Handler: http.NotFoundHandler()}
		})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	if hs.directH2C() == nil {
		t.Fatal("no HTTP/2 server for an h2c connection until serve runs")
	}
}
