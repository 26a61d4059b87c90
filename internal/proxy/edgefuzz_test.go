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
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// countingServer is net/http's server on loopback counting the requests
// its handler receives; it reads every body, as a proxy does.
type countingServer struct {
	addr string
	n    atomic.Int64
}

func startCountingServer(t testing.TB) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingServer{addr: ln.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return cs
}

// exchangeRaw writes raw on one connection, half-closes it and reads until
// the server closes, bounded.
func exchangeRaw(addr string, raw []byte) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = c.Write(raw)
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = io.Copy(io.Discard, c)
}

var (
	corpusOnce  sync.Once
	corpusSeeds []string
)

// edgeCorpusSeeds are the raw vectors of test/edge's corpus.
func edgeCorpusSeeds() []string {
	corpusOnce.Do(func() {
		data, err := os.ReadFile("../../test/edge/testdata/corpus.yaml")
		if err != nil {
			return
		}
		var vs []struct {
			Raw string `json:"raw"`
		}
		if yaml.Unmarshal(data, &vs) == nil {
			for _, v := range vs {
				corpusSeeds = append(corpusSeeds, v.Raw)
			}
		}
	})
	return corpusSeeds
}

// FuzzOneRequestInAtMostOneOut: whatever bytes a client sends on one
// connection, the backend behind the proxy receives no more requests than
// net/http's own server parses out of the same bytes — the proxy never
// turns one request into two (smuggling) nor tunnels requests past its
// routes.
func FuzzOneRequestInAtMostOneOut(f *testing.F) {
	for _, s := range edgeCorpusSeeds() {
		f.Add([]byte(s))
	}
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nX: y\nContent-Length: 40\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: a\r\n\r\n"))

	ref := startCountingServer(f)
	backend := startCountingServer(f)
	_, portStr, _ := net.SplitHostPort(backend.addr)
	bport, _ := strconv.Atoi(portStr)
	p := newTestPlane(f)
	port := testkit.FreePortInt32(f)
	p.mustApply(f, &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/b:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: int32(bport)}}}},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{
			{ID: "deny", Match: prefix("/admin"), DirectResponse: &snapshot.DirectResponse{StatusCode: 403}},
			{ID: "rest", Backends: to("ns/b:80")},
		}})}})
	proxyAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))

	f.Fuzz(func(t *testing.T, raw []byte) {
		ref.n.Store(0)
		backend.n.Store(0)
		exchangeRaw(ref.addr, raw)
		exchangeRaw(proxyAddr, raw)
		// A request the proxy forwarded may reach the backend a moment
		// after the client's connection closed.
		time.Sleep(20 * time.Millisecond)
		if out, in := backend.n.Load(), ref.n.Load(); out > in {
			t.Fatalf("%q: net/http parses %d request(s), the backend received %d through the proxy", raw, in, out)
		}
	})
}
