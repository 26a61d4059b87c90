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
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// countedConn counts the writes that reach its connection.
type countedConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestCoalescingConnGathers: writes made while a write is in the socket
// wait, and go out together in one call after it, in order.
func TestCoalescingConnGathers(t *testing.T) {
	server, client := tcpPair(t)
	counted := &countedConn{Conn: server}
	c := newCoalescingConn(counted)

	c.wmu.Lock() // a write in the socket, as far as c knows
	var want bytes.Buffer
	for i := range 50 {
		frame := bytes.Repeat([]byte{byte('a' + i%26)}, 9+i)
		want.Write(frame)
		if n, err := c.Write(frame); n != len(frame) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	if n := counted.writes.Load(); n != 0 {
		t.Fatalf("%d writes reached the socket while one was in it", n)
	}
	c.wmu.Unlock()

	got := make([]byte, want.Len())
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the bytes arrived out of order")
	}
	if n := counted.writes.Load(); n != 1 {
		t.Errorf("50 waiting writes took %d calls, want 1", n)
	}
	c.mu.Lock()
	held := c.buf != nil
	c.mu.Unlock()
	if held {
		t.Error("an idle connection holds a buffer")
	}
}

// TestCoalescingConnKeepsOrder: small and large writes from one writer,
// read whole and in order on the other side.
func TestCoalescingConnKeepsOrder(t *testing.T) {
	server, client := tcpPair(t)
	c := newCoalescingConn(server)
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	var writes [][]byte
	for range 2000 {
		n := 1 + rng.IntN(64)
		switch rng.IntN(10) {
		case 0:
			n = coalesceMaxBytes - 16 + rng.IntN(32) // around the limit
		case 1:
			n = 40 << 10 // past it
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(want.Len() + i)
		}
		want.Write(b)
		writes = append(writes, b)
	}
	errc := make(chan error, 1)
	go func() {
		for _, b := range writes {
			if n, err := c.Write(b); err != nil || n != len(b) {
				errc <- errors.Join(err, io.ErrShortWrite)
				return
			}
		}
		errc <- c.Close()
	}()
	_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read %d bytes, want %d, in order", len(got), want.Len())
	}
}

// TestCoalescingConnCloseWritesWhatWaits: a frame written just before
// Close (a GOAWAY, a TLS close_notify) reaches the peer before the
// connection's end.
func TestCoalescingConnCloseWritesWhatWaits(t *testing.T) {
	server, client := tcpPair(t)
	c := newCoalescingConn(server)
	c.mu.Lock() // the flush cannot take the frame before Close does
	c.buf = coalesceBufs.Get().(*[]byte)
	*c.buf = append(*c.buf, "goaway"...)
	c.scheduled = true
	c.mu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "goaway" {
		t.Fatalf("read %q, %v; want goaway, then the end", got, err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("a write after Close: %v, want net.ErrClosed", err)
	}
}

// TestCoalescingConnCloseEndsAStuckWrite: a peer that reads nothing
// leaves a large write in the socket; Close ends it at once.
func TestCoalescingConnCloseEndsAStuckWrite(t *testing.T) {
	server, _ := tcpPair(t)
	c := newCoalescingConn(server)
	errc := make(chan error, 1)
	go func() {
		big := make([]byte, 1<<20)
		for {
			if _, err := c.Write(big); err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the socket's buffers fill
	began := time.Now()
	_ = c.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the stuck write succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck write did not end")
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("Close took %v to end a stuck write", d)
	}
}

// TestCoalescingConnFailedWrite: once a gathered write fails, the next
// write says so and the connection is closed.
func TestCoalescingConnFailedWrite(t *testing.T) {
	server, client := tcpPair(t)
	c := newCoalescingConn(server)
	_ = client.(*net.TCPConn).SetLinger(0)
	_ = client.Close() // a reset
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		_, err = c.Write([]byte("frame"))
		time.Sleep(time.Millisecond)
	}
	if err == nil {
		t.Fatal("writes to a reset connection kept succeeding")
	}
	if _, err2 := c.Write([]byte("frame")); err2 == nil {
		t.Error("a write after the failure succeeded")
	}
	if _, err := server.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("after a failed write the connection reads %v, want it closed", err)
	}
}

// TestCoalescingConnPassesUntilGathering: before gather (a TLS handshake,
// or HTTP/1.1 over TLS) every write goes to the socket as it comes.
func TestCoalescingConnPassesUntilGathering(t *testing.T) {
	server, client := tcpPair(t)
	counted := &countedConn{Conn: server}
	c := newPassingConn(counted)
	c.wmu.Lock() // would hold a gathered write back
	for range 3 {
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	c.wmu.Unlock()
	if n := counted.writes.Load(); n != 3 {
		t.Errorf("%d writes reached the socket, want 3", n)
	}
	c.gather()
	c.wmu.Lock()
	for range 3 {
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	if n := counted.writes.Load(); n != 3 {
		t.Errorf("once gathering, %d writes reached the socket at once, want none", n-3)
	}
	c.wmu.Unlock()
	got := make([]byte, 30)
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
}

// TestHTTP2StreamsThroughGatheredWrites: many concurrent streams on a few
// HTTP/2 connections, over TLS and h2c, to an HTTP/1.1 backend and an h2c
// one: every response arrives whole, whatever its size (small ones
// gathered, those past coalesceMaxBytes written at once), and the
// connections the proxy's HTTP/2 server serves directly gather their
// writes and pool their reads.
func TestHTTP2StreamsThroughGatheredWrites(t *testing.T) {
	sized := func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("size"))
		_, _ = w.Write(sizedBody(n))
	}
	h1 := startBackend(t, "h1", false, sized)
	h2 := startBackend(t, "h2", true, sized)
	h1Set, h2Set := epSet("ns/h1:80", h1), epSet("ns/h2:80", h2)
	h2Set.AppProtocol = snapshot.AppProtocolH2C
	p := newTestPlane(t)
	httpPort, tlsPort := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cert := testCert(t, "a.example")
	routes := []snapshot.Route{
		{ID: "h2", Match: prefix("/h2"), Backends: to(h2Set.Name)},
		{ID: "h1", Match: prefix("/"), Backends: to(h1Set.Name)},
	}
	plain := httpListener(httpPort, snapshot.VirtualHost{Hostname: "*", Routes: routes})
	secure := httpListener(tlsPort, snapshot.VirtualHost{Hostname: "*", Routes: routes})
	secure.Name, secure.Protocol = "tls", snapshot.ProtocolHTTPS
	secure.TLS = &snapshot.ListenerTLS{Certificates: []snapshot.SNICertificate{{Certificate: cert.Name}}}
	s := &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{h1Set, h2Set},
		Listeners: []snapshot.Listener{plain, secure}, Certificates: []snapshot.Certificate{cert}}
	snapshot.Normalize(s)
	p.mustApply(t, s)

	for _, overTLS := range []bool{false, true} {
		var protos http.Protocols
		tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 4}
		scheme, port := "http", httpPort
		if overTLS {
			protos.SetHTTP2(true)
			tr.TLSClientConfig = &tls.Config{ServerName: "a.example", InsecureSkipVerify: true}
			scheme, port = "https", tlsPort
		} else {
			protos.SetUnencryptedHTTP2(true)
		}
		client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
		sizes := []int{0, 1, 100, 4 << 10, coalesceMaxBytes - 9, coalesceMaxBytes + 1, 100 << 10}
		var wg sync.WaitGroup
		errs := make(chan error, 400)
		for i := range 400 {
			wg.Go(func() {
				size, path := sizes[i%len(sizes)], "/h1"
				if i%2 == 1 {
					path = "/h2"
				}
				url := fmt.Sprintf("%s://127.0.0.1:%d%s?size=%d", scheme, port, path, size)
				resp, err := client.Get(url)
				if err != nil {
					errs <- err
					return
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				switch {
				case err != nil:
					errs <- fmt.Errorf("%s: %w", url, err)
				case resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2:
					errs <- fmt.Errorf("%s: %s %s", url, resp.Proto, resp.Status)
				case !bytes.Equal(body, sizedBody(size)):
					errs <- fmt.Errorf("%s: %d bytes, not the backend's %d", url, len(body), size)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("tls=%v: %v", overTLS, err)
		}
		if !overTLS {
			lean := func(c *coalescingConn) bool { _, pooled := c.Conn.(*pooledReadConn); return c.gathering && pooled }
			if n := directH2CConns(t, p, httpPort, lean); n == 0 {
				t.Error("no h2c connection the HTTP/2 server serves directly gathers its writes and pools its reads")
			}
		}
		tr.CloseIdleConnections()
	}
}

// sizedBody is n bytes of a pattern a response must keep in order.
func sizedBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}
