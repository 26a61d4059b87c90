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
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestFreeAddrIsLoopback(t *testing.T) {
	if a := FreeAddr(t); !strings.HasPrefix(a, "127.0.0.1:") || a == "127.0.0.1:0" {
		t.Errorf("FreeAddr = %q", a)
	}
}

func TestFreePortInt32CanBeListenedOn(t *testing.T) {
	p := FreePortInt32(t)
	if p <= 0 {
		t.Fatalf("FreePortInt32 = %d", p)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p))))
	if err != nil {
		t.Fatalf("the free port %d cannot be listened on: %v", p, err)
	}
	_ = ln.Close()
}

// TestFreePortNeverTwice: no two calls return the same port, though the
// kernel may offer one again once its listener is closed.
func TestFreePortNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

func TestSyncBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("%d bytes kept of 800 written", n)
	}
}
