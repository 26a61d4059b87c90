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
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// serverKeepAlive reports whether this process's end of client's
// connection (the socket whose peer is client's local address) has TCP
// keep-alive probes on; found is false while there is no such socket.
func serverKeepAlive(t *testing.T, client net.Conn) (on, found bool) {
	t.Helper()
	want := client.LocalAddr().(*net.TCPAddr)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); !strings.HasPrefix(target, "socket:") {
			continue
		}
		sa, err := unix.Getpeername(fd)
		in4, ok := sa.(*unix.SockaddrInet4)
		if err != nil || !ok || in4.Port != want.Port || !net.IP(in4.Addr[:]).Equal(want.IP) {
			continue
		}
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
		if err != nil {
			continue
		}
		return v == 1, true
	}
	return false, false
}

// waitKeepAlive waits until the server's end of client is there and its
// keep-alive probes are as wanted.
func waitKeepAlive(t *testing.T, client net.Conn, want bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		on, found := serverKeepAlive(t, client)
		if found && on == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the proxy's end found %v, TCP keep-alive %v, want %v", what, found, on, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClientKeepAliveProbes: the fast path accepts a connection without
// TCP keep-alive probes and turns them on once the connection outlives
// its first request or goes to net/http; without the fast path every
// accepted connection has them, as Go's listeners set them.
func TestClientKeepAliveProbes(t *testing.T) {
	backend := startBackend(t, "b", false, nil)
	snap := func(port int32) *snapshot.Snapshot {
		return &snapshot.Snapshot{Scope: snapshot.SharedPool(), EndpointSets: []*snapshot.EndpointSet{epSet("ns/b:80", backend)},
			Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*", Routes: []snapshot.Route{{ID: "r", Backends: to("ns/b:80")}}})}}
	}
	dial := func(t *testing.T, port int32) net.Conn {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	roundTrip := func(t *testing.T, c net.Conn, br *bufio.Reader, req string) {
		t.Helper()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("%q: %d, close %v; want a kept-alive 200", req, resp.StatusCode, resp.Close)
		}
	}

	t.Run("fast path", func(t *testing.T) {
		p := newTestPlane(t)
		port := testkit.FreePortInt32(t)
		p.mustApply(t, snap(port))

		c := dial(t, port)
		waitKeepAlive(t, c, false, "accepted, no request yet")
		br := bufio.NewReader(c)
		roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		waitKeepAlive(t, c, true, "kept alive after its first request")

		// A head the fast path does not serve (an escaped target) goes
		// to net/http.
		c = dial(t, port)
		br = bufio.NewReader(c)
		roundTrip(t, c, br, "GET /a%20b HTTP/1.1\r\nHost: a\r\n\r\n")
		waitKeepAlive(t, c, true, "handed to net/http")

		c = dial(t, port)
		if _, err := io.WriteString(c, h2cPreface); err != nil {
			t.Fatal(err)
		}
		waitKeepAlive(t, c, true, "an h2c connection")
	})

	t.Run("behind the PROXY protocol", func(t *testing.T) {
		p := newTestPlane(t)
		port := testkit.FreePortInt32(t)
		p.mustApply(t, ppSnapshot(port, epSet("ns/b:80", backend), trustPP("127.0.0.1/32"), nil))
		c := dial(t, port)
		if _, err := c.Write(proxyHeader(t, 1, "192.0.2.7:4000", port)); err != nil {
			t.Fatal(err)
		}
		waitKeepAlive(t, c, false, "accepted, no request yet")
		roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		waitKeepAlive(t, c, true, "kept alive after its first request")
	})

	t.Run("HTTP/2 over TLS", func(t *testing.T) {
		p := newTestPlane(t)
		port := testkit.FreePortInt32(t)
		cert := testCert(t, "a.example")
		p.mustApply(t, ppSnapshot(port, epSet("ns/b:80", backend), nil, &cert))
		raw := dial(t, port)
		tc := tls.Client(raw, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil || tc.ConnectionState().NegotiatedProtocol != "h2" {
			t.Fatalf("handshake: %v, ALPN %q", err, tc.ConnectionState().NegotiatedProtocol)
		}
		waitKeepAlive(t, raw, true, "an HTTP/2 connection")
	})

	t.Run("without the fast path", func(t *testing.T) {
		p := newPlaneWith(t, func(o *Options) { o.DisableFastPath = true })
		port := testkit.FreePortInt32(t)
		p.mustApply(t, snap(port))
		c := dial(t, port)
		waitKeepAlive(t, c, true, "accepted")
	})
}
