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

package testkit

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"testing"
)

// FreePort returns a loopback TCP port that was free a moment ago, and
// that no earlier call in this process returned: the kernel may hand the
// same port to two listeners opened and closed one after the other, and
// a test that asks for a metrics and a discovery port in turn would then
// bind both to it ("address already in use").
func FreePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		givenPorts.Lock()
		_, given := givenPorts.m[port]
		givenPorts.m[port] = struct{}{}
		givenPorts.Unlock()
		if !given {
			return port
		}
	}
	t.Fatal("no loopback port that was not handed out already")
	return 0
}

// givenPorts are the ports FreePort returned in this process.
var givenPorts = struct {
	sync.Mutex
	m map[int]struct{}
}{m: map[int]struct{}{}}

// FreePortInt32 is FreePort as the int32 that snapshot and Gateway API
// ports are.
func FreePortInt32(t testing.TB) int32 {
	t.Helper()
	return int32(FreePort(t)) //nolint:gosec // G115: a TCP port is at most 65535
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers (a process's
// output, a logger) and readers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
