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
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// rawConn is an HTTP/1.1 client connection that never retries: what it
// sends and what comes back are exactly what the proxy did.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

// roundTrip sends head (a request head without the final CRLF) and reads
// the response.
func (rc *rawConn) roundTrip(head string) (*http.Response, string, error) {
	_ = rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(rc.c, head+"\r\n"); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(body), err
}

// closedByPeer reports whether the proxy closed the connection (EOF on the
// next read).
func (rc *rawConn) closedByPeer() bool {
	_ = rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := rc.br.ReadByte()
	return errors.Is(err, io.EOF)
}

const (
	fastHead    = "GET / HTTP/1.1\r\nHost: drain.example\r\n"
	netHTTPHead = "GET / HTTP/1.1\r\nHost: drain.example\r\nContent-Length: 0\r\n" // not simple: handed to net/http
)

// TestTerminationDrain runs the proxy's termination sequence: after ctx
// ends, /readyz answers 503 at once; for the drain window the listener
// still accepts and serves; keep-alive connections of both HTTP/1.1 paths
// get "Connection: close" on their next response and are then closed by
// the proxy, and an HTTP/2 connection gets GOAWAY; then the listener
// closes, an in-flight request still finishes, and Run returns.
func TestTerminationDrain(t *testing.T) {
	release := make(chan struct{})
	slowStarted := make(chan struct{})
	var once sync.Once
	backend := startBackend(t, "b", false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(slowStarted) })
			<-release
			_, _ = io.WriteString(w, "finished")
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	port, healthPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	health := fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	snap := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", backend)},
		Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}}
	const window = 3 * time.Second
	cfg := Config{
		Mode: ModeShared, HealthAddr: fmt.Sprintf("127.0.0.1:%d", healthPort), MetricsAddr: "127.0.0.1:0",
		DataPlane: Options{BindHost: "127.0.0.1"}, DrainWindow: window, ShutdownTimeout: 10 * time.Second,
		Source: func(ctx context.Context, dp *DataPlane, _ prometheus.Registerer) error {
			if err := dp.Apply(snap); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	readiness := NewReadiness("no routing snapshot applied yet")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runDone := make(chan error, 1)
	go func() { runDone <- Run(ctx, cfg, readiness) }()
	testkit.EventuallyWithin(t, waitFor, "the proxy to turn ready", func() bool { return readiness.Reason() == "" })

	// Keep-alive connections on both HTTP/1.1 paths and on HTTP/2.
	fast, slowPath := dialRaw(t, addr), dialRaw(t, addr)
	for name, rc := range map[string]*rawConn{"fast path": fast, "net/http": slowPath} {
		head := fastHead
		if rc == slowPath {
			head = netHTTPHead
		}
		resp, body, err := rc.roundTrip(head)
		if err != nil || resp.StatusCode != 200 || body != "ok" || resp.Close {
			t.Fatalf("%s before the drain: %v %v %q close=%v", name, err, resp, body, resp != nil && resp.Close)
		}
	}
	h2 := dialH2(t, addr)
	if status, goAway := h2.get(t, 1); status != 0x88 || goAway {
		t.Fatalf("HTTP/2 before the drain: status byte %#x, GOAWAY %v; want 200 and no GOAWAY", status, goAway)
	}
	// An in-flight request that outlives the drain window.
	inflight := make(chan string, 1)
	go func() {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			inflight <- err.Error()
			return
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: drain.example\r\n\r\n"); err != nil {
			inflight <- err.Error()
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			inflight <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		inflight <- fmt.Sprintf("%d %s", resp.StatusCode, body)
	}()
	<-slowStarted

	cancel() // SIGTERM
	drainStart := time.Now()
	testkit.EventuallyWithin(t, waitFor, "/readyz to answer 503", func() bool {
		resp, err := http.Get(health)
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "shutting down")
	})
	// Wait for the data plane to have begun the drain (Run calls
	// BeginDrain right after ctx ends).
	time.Sleep(50 * time.Millisecond)

	for name, rc := range map[string]*rawConn{"fast path": fast, "net/http": slowPath} {
		head := fastHead
		if rc == slowPath {
			head = netHTTPHead
		}
		resp, body, err := rc.roundTrip(head)
		if err != nil || resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("%s keep-alive request during the drain: %v %v %q", name, err, resp, body)
		}
		if !resp.Close || resp.Header.Get("Connection") != "" && !strings.EqualFold(resp.Header.Get("Connection"), "close") {
			t.Errorf("%s response during the drain lacks Connection: close (header %q)", name, resp.Header.Get("Connection"))
		}
		if !rc.closedByPeer() {
			t.Errorf("%s connection still open after a Connection: close response", name)
		}
	}
	if status, _ := h2.get(t, 3); status != 0x88 {
		t.Errorf("HTTP/2 during the drain: status byte %#x, want 0x88 (200)", status)
	}
	if !h2.awaitGoAway(t) {
		t.Error("HTTP/2 connection got no GOAWAY during the drain")
	}
	fresh := dialRaw(t, addr)
	resp, body, err := fresh.roundTrip(fastHead)
	if err != nil || resp.StatusCode != 200 || body != "ok" || !resp.Close {
		t.Fatalf("a new connection during the drain window: %v %v %q close=%v; want 200 ok with Connection: close", err, resp, body, resp != nil && resp.Close)
	}
	if since := time.Since(drainStart); since >= window {
		t.Fatalf("the drain checks took %s, longer than the %s window: the machine is too slow for this test", since, window)
	}

	// After the window the listener closes while the slow request runs.
	testkit.EventuallyWithin(t, window+5*time.Second, "the listener to stop accepting after the drain window", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
	if closedAfter := time.Since(drainStart); closedAfter < window {
		t.Errorf("the listener closed %s after SIGTERM, before the %s drain window ended", closedAfter, window)
	}
	select {
	case err := <-runDone:
		t.Fatalf("Run returned (%v) while a request was in flight", err)
	default:
	}
	close(release)
	if got := <-inflight; got != "200 finished" {
		t.Errorf("in-flight request = %q, want it to finish with 200", got)
	}
	select {
	case err := <-runDone:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the in-flight request finished")
	}
}

// TestReadinessShuttingDownIsFinal: once shutting down, a snapshot source
// reporting ready again does not make the proxy ready.
func TestReadinessShuttingDownIsFinal(t *testing.T) {
	r := NewReadiness("starting")
	r.Ready()
	r.ShuttingDown()
	r.Ready()
	if got := r.Reason(); got != "shutting down" {
		t.Fatalf("Reason() after ShuttingDown and Ready = %q, want %q", got, "shutting down")
	}
}

// awaitGoAway reads frames (bounded) until a GOAWAY arrives.
func (h *h2Conn) awaitGoAway(t *testing.T) bool {
	t.Helper()
	_ = h.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	for !h.goAway {
		hdr := make([]byte, 9)
		if _, err := io.ReadFull(h.br, hdr); err != nil {
			return false
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		if _, err := h.br.Discard(n); err != nil {
			return false
		}
		h.goAway = hdr[3] == 0x7
	}
	return true
}

// h2Conn is a minimal HTTP/2 prior-knowledge client: enough to send GETs
// and see whether the server sent GOAWAY.
type h2Conn struct {
	c      net.Conn
	br     *bufio.Reader
	goAway bool
}

func dialH2(t *testing.T, addr string) *h2Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h := &h2Conn{c: c, br: bufio.NewReader(c)}
	if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	h.writeFrame(t, 0x4, 0, 0, nil) // SETTINGS
	return h
}

func (h *h2Conn) writeFrame(t *testing.T, typ, flags byte, stream uint32, payload []byte) {
	t.Helper()
	hdr := make([]byte, 9)
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream)
	if _, err := h.c.Write(append(hdr, payload...)); err != nil {
		t.Fatalf("writing an HTTP/2 frame: %v", err)
	}
}

// firstField is the first byte of block's first field, past any dynamic
// table size updates (001xxxxx, an integer of a 5-bit prefix), which a
// server sends first when it encodes with a smaller table than the
// client's (net/http, set to encode responses without one).
func firstField(block []byte) byte {
	for len(block) > 0 && block[0]&0xe0 == 0x20 {
		more := block[0]&0x1f == 0x1f
		block = block[1:]
		for more && len(block) > 0 {
			more = block[0]&0x80 != 0
			block = block[1:]
		}
	}
	if len(block) == 0 {
		return 0
	}
	return block[0]
}

// get sends GET / on stream and reads frames until that stream ends. It
// returns the first byte of the response's first header field (0x88 is
// the HPACK static entry ":status: 200") and whether a GOAWAY arrived by
// then.
func (h *h2Conn) get(t *testing.T, stream uint32) (byte, bool) {
	t.Helper()
	// :method GET, :scheme http, :path /, then :authority as a literal
	// without indexing (name index 1).
	block := []byte{0x82, 0x86, 0x84, 0x01, byte(len("drain.example"))}
	block = append(block, "drain.example"...)
	h.writeFrame(t, 0x1, 0x1|0x4, stream, block) // HEADERS, END_STREAM|END_HEADERS
	_ = h.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var status byte
	for {
		hdr := make([]byte, 9)
		if _, err := io.ReadFull(h.br, hdr); err != nil {
			t.Fatalf("reading HTTP/2 frames of stream %d: %v", stream, err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags, sid := hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(h.br, payload); err != nil {
			t.Fatal(err)
		}
		switch {
		case typ == 0x4 && flags&0x1 == 0: // SETTINGS: acknowledge
			h.writeFrame(t, 0x4, 0x1, 0, nil)
		case typ == 0x7: // GOAWAY
			h.goAway = true
		case typ == 0x3 && sid == stream: // RST_STREAM
			t.Fatalf("stream %d reset by the proxy", stream)
		case typ == 0x1 && sid == stream && n > 0:
			status = firstField(payload)
		}
		if sid == stream && (typ == 0x0 || typ == 0x1) && flags&0x1 != 0 {
			return status, h.goAway
		}
	}
}
