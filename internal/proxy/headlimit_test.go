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
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// newPlaneWith is newTestPlane with options adjusted by set.
func newPlaneWith(t testing.TB, set func(*Options)) *testPlane {
	t.Helper()
	reg := prometheus.NewRegistry()
	buf := &testkit.SyncBuffer{}
	opts := Options{BindHost: "127.0.0.1", AccessLog: buf, Registry: reg, DrainTimeout: 2 * time.Second}
	set(&opts)
	dp := NewDataPlane(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = dp.Shutdown(ctx)
	})
	return &testPlane{DataPlane: dp, reg: reg, log: buf}
}

// rawUpstream accepts connections on loopback and lets respond write raw
// bytes to each after its request was read, body and all.
func rawUpstream(t testing.TB, respond func(net.Conn)) int32 {
	t.Helper()
	return rawUpstreamHead(t, func(conn net.Conn, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		respond(conn)
	})
}

// rawUpstreamHead is rawUpstream with respond called once the request
// head was read, its body left to respond.
func rawUpstreamHead(t testing.TB, respond func(net.Conn, *http.Request)) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				respond(conn, req)
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// bigHead writes a 200 response whose head carries at least size bytes
// of header lines, as one line or as 1000-byte X-Line headers, then a
// two-byte body. It stops at the first write error (the proxy hung up).
func bigHead(size int, oneLine bool) func(net.Conn) {
	return func(conn net.Conn) {
		if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"); err != nil {
			return
		}
		line := []byte("X-Line: " + strings.Repeat("b", 990) + "\r\n")
		chunk := bytes.Repeat(line, 16)
		if oneLine {
			if _, err := io.WriteString(conn, "X-Big: "); err != nil {
				return
			}
			chunk = bytes.Repeat([]byte("a"), 64<<10)
		}
		sent := 0
		for ; sent+len(chunk) <= size; sent += len(chunk) {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
		if oneLine {
			_, _ = io.WriteString(conn, "\r\n")
		} else {
			for ; sent < size; sent += len(line) {
				if _, err := conn.Write(line); err != nil {
					return
				}
			}
		}
		_, _ = io.WriteString(conn, "\r\nok")
	}
}

func headCapSnapshot(port, upstream int32) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(),
		EndpointSets: []*snapshot.EndpointSet{{Name: "ns/raw:80", Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: upstream}}}},
		Listeners:    []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/raw:80")}}})}}
	snapshot.Normalize(s)
	return s
}

// leanAndTransport are a bodiless GET and a POST with a small body of
// known length (the lean client's paths), and a chunked POST
// (http.Transport's path) to url.
func leanAndTransport(t *testing.T, url string) map[string]func() *http.Request {
	t.Helper()
	mk := func(method, body string, chunked bool) func() *http.Request {
		return func() *http.Request {
			var rd io.Reader = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // a reader of unknown length
			}
			req, err := http.NewRequest(method, url, rd)
			if err != nil {
				t.Fatal(err)
			}
			return req
		}
	}
	return map[string]func() *http.Request{
		"lean GET":       mk(http.MethodGet, "", false),
		"lean POST":      mk(http.MethodPost, "body", false),
		"transport POST": mk(http.MethodPost, "body", true),
	}
}

// viaLeanAndTransport sends both kinds of request and returns the results.
func viaLeanAndTransport(t *testing.T, c *http.Client, url string) map[string]result {
	t.Helper()
	out := map[string]result{}
	for path, req := range leanAndTransport(t, url) {
		out[path] = do(t, c, req())
	}
	return out
}

// TestResponseHeadCap: an upstream head over the cap is answered 502 on
// both upstream clients, one within it is relayed, and a 40 MB head
// costs the proxy about the cap in allocations, not the head's size.
func TestResponseHeadCap(t *testing.T) {
	t.Run("the configured cap decides", func(t *testing.T) {
		const limit = 64 << 10
		p := newPlaneWith(t, func(o *Options) { o.MaxResponseHeaderBytes = limit })
		port := testkit.FreePortInt32(t)
		under := rawUpstream(t, bigHead(limit-8<<10, false))
		over := rawUpstream(t, bigHead(limit+8<<10, false))
		c := client()
		p.mustApply(t, headCapSnapshot(port, under))
		for path, r := range viaLeanAndTransport(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
			if r.code != http.StatusOK || r.body != "ok" || len(r.header.Values("X-Line")) != (limit-8<<10+999)/1000 {
				t.Errorf("%s, head under the cap: %d %q with %d X-Line headers", path, r.code, r.body, len(r.header.Values("X-Line")))
			}
		}
		p.mustApply(t, headCapSnapshot(port, over))
		for path, r := range viaLeanAndTransport(t, c, fmt.Sprintf("http://127.0.0.1:%d/", port)) {
			if r.code != http.StatusBadGateway {
				t.Errorf("%s, head over the cap: %d %q, want 502", path, r.code, r.body)
			}
		}
	})
	for _, oneLine := range []bool{true, false} {
		t.Run(fmt.Sprintf("40 MB head, one line %v", oneLine), func(t *testing.T) {
			p := newTestPlane(t)
			port := testkit.FreePortInt32(t)
			p.mustApply(t, headCapSnapshot(port, rawUpstream(t, bigHead(40<<20, oneLine))))
			c := client()
			url := fmt.Sprintf("http://127.0.0.1:%d/", port)
			for path, req := range leanAndTransport(t, url) {
				_ = do(t, c, req()) // warm up: connections, pools, buffers
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				r := do(t, c, req())
				runtime.ReadMemStats(&after)
				if r.code != http.StatusBadGateway {
					t.Errorf("%s: %d, want 502", path, r.code)
				}
				// Everything allocated meanwhile, garbage included: growing one
				// header line to the 1 MiB cap costs about 8 MiB in all; without
				// the cap one request allocates more than the head's 40 MB.
				grew := after.TotalAlloc - before.TotalAlloc
				t.Logf("%s: allocated %d KiB", path, grew>>10)
				if grew > 16<<20 {
					t.Errorf("%s: answering a 40 MB head allocated %d MiB, want < 16 MiB", path, grew>>20)
				}
			}
		})
	}
}
