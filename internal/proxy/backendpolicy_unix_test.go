//go:build unix

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
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// blackhole is a loopback port whose SYNs go unanswered: a listener with
// a backlog of none that never accepts, its queue filled. It returns the
// port, or skips the test when the kernel answers anyway.
func blackhole(t *testing.T) int32 {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for range 16 {
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			return int32(port)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Skip("the kernel accepts connections past the listen backlog: no blackhole")
	return 0
}

// TestConnectTimeout: a set's ConnectTimeout bounds the dial of an
// upstream that never answers, well before the proxy's DialTimeout
// (5s), and the request gets 502, on the lean client (GET) and on
// http.Transport (POST).
func TestConnectTimeout(t *testing.T) {
	port := blackhole(t)
	set := &snapshot.EndpointSet{Name: "ns/blackhole:80", ConnectTimeout: dur(300 * time.Millisecond), Endpoints: []snapshot.Endpoint{{Address: "127.0.0.1", Port: port}}}
	p, url := policyPlane(t, set, nil)
	c := client()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, err := http.NewRequest(method, url+"/", strings.NewReader("payload"))
		if method == http.MethodGet {
			req, err = http.NewRequest(method, url+"/", nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := do(t, c, req)
		if took := time.Since(start); res.code != http.StatusBadGateway || took > 4*time.Second {
			t.Errorf("%s to a blackhole: %d after %v; want 502 after about 300ms", method, res.code, took)
		}
	}
	if got := metricValue(t, p, "coxswain_proxy_upstream_errors_total", "route", "r", "kind", "connect"); got != 2 {
		t.Errorf("connect errors counted: %v, want 2", got)
	}
}
