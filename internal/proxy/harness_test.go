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
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// waitFor bounds every wait of these tests.
const waitFor = 5 * time.Second

// startConnCountingServer serves h on a loopback port until the test ends and
// counts the connections it accepted.
func startConnCountingServer(t *testing.T, h http.HandlerFunc) (port int32, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: h,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return int32(ln.Addr().(*net.TCPAddr).Port), conns
}

type testPlane struct {
	*DataPlane
	reg *prometheus.Registry
	log *testkit.SyncBuffer
}

func newTestPlane(t testing.TB) *testPlane {
	t.Helper()
	reg := prometheus.NewRegistry()
	buf := &testkit.SyncBuffer{}
	dp := NewDataPlane(Options{BindHost: "127.0.0.1", AccessLog: buf, Registry: reg, DrainTimeout: 2 * time.Second})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dp.Shutdown(ctx)
	})
	return &testPlane{DataPlane: dp, reg: reg, log: buf}
}

func (p *testPlane) mustApply(t testing.TB, s *snapshot.Snapshot) {
	t.Helper()
	if err := p.Apply(s); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// echo is what the test backend reports about the request it saw.
type echo struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Proto   string      `json:"proto"`
	Header  http.Header `json:"header"`
	BodyLen int64       `json:"bodyLen"`
}

// backend is a real HTTP server on loopback that echoes requests as JSON.
type testBackend struct {
	name  string
	addr  string
	port  int32
	hits  atomic.Int64
	srv   *http.Server
	mu    sync.Mutex
	seen  []echo
	extra http.HandlerFunc
}

func startBackend(t testing.TB, name string, h2c bool, extra http.HandlerFunc) *testBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBackend{name: name, addr: ln.Addr().String(), port: int32(ln.Addr().(*net.TCPAddr).Port), extra: extra}
	var p http.Protocols
	p.SetHTTP1(true)
	if h2c {
		p.SetUnencryptedHTTP2(true)
	}
	b.srv = &http.Server{Handler: b, Protocols: &p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

func (b *testBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	if b.extra != nil {
		b.extra(w, r)
		return
	}
	n, _ := io.Copy(io.Discard, r.Body)
	e := echo{Backend: b.name, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Host: r.Host, Proto: r.Proto, Header: r.Header, BodyLen: n}
	b.mu.Lock()
	b.seen = append(b.seen, e)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Backend", b.name)
	w.Header().Set("X-Remove-Me", "1")
	_ = json.NewEncoder(w).Encode(e)
}

func (b *testBackend) last() (echo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seen) == 0 {
		return echo{}, false
	}
	return b.seen[len(b.seen)-1], true
}

func epSet(name string, bs ...*testBackend) *snapshot.EndpointSet {
	es := &snapshot.EndpointSet{Name: name}
	for _, b := range bs {
		es.Endpoints = append(es.Endpoints, snapshot.Endpoint{Address: "127.0.0.1", Port: b.port})
	}
	return es
}

func to(set string) []snapshot.Backend { return []snapshot.Backend{{EndpointSet: set, Weight: 1}} }

func prefix(p string) snapshot.Match {
	return snapshot.Match{Path: &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: p}}
}

func httpListener(port int32, vhs ...snapshot.VirtualHost) snapshot.Listener {
	hosts := make([]*snapshot.VirtualHost, len(vhs))
	for i := range vhs {
		hosts[i] = &vhs[i]
	}
	return snapshot.Listener{Name: "test/" + strconv.Itoa(int(port)), Port: port, Protocol: snapshot.ProtocolHTTP, VirtualHosts: hosts}
}

// client is an HTTP/1.1 client that never follows redirects.
func client() *http.Client {
	return &http.Client{
		Timeout:       20 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type result struct {
	code   int
	header http.Header
	body   string
	echo   echo
}

func do(t testing.TB, c *http.Client, req *http.Request) result {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	res := result{code: resp.StatusCode, header: resp.Header, body: string(body)}
	if resp.Header.Get("Content-Type") == "application/json" {
		_ = json.Unmarshal(body, &res.echo)
	}
	return res
}

func fetch(t testing.TB, c *http.Client, rawURL string, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
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
	return do(t, c, req)
}

// tcpPair is a connected pair of loopback TCP connections, closed when
// the test ends.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, client
}
