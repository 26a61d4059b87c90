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
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// lotPair is a connected loopback TCP pair and a fast-path session of
// the server's end in an idle lot, and arm, which arms a new client watch.
func lotPair(t *testing.T) (client net.Conn, server net.Conn, s *fastSession, arm func() *clientWatch) {
	t.Helper()
	server, client = tcpPair(t)
	s = &fastSession{fs: &fastServer{d: &DataPlane{}}, fc: &fastConn{nc: server, raw: server}}
	s.src.init(server)
	if !s.joinLot() {
		t.Skip("no idle lot on this machine")
	}
	t.Cleanup(func() { s.leaveLot(true) })
	var c lotCtl
	arm = func() *clientWatch {
		t.Helper()
		cw := &clientWatch{done: make(chan struct{}), s: s}
		cw.ctx, cw.cancel = context.WithCancelCause(context.Background())
		if !s.armLot(cw, &c) {
			t.Fatal("not armed")
		}
		return cw
	}
	return client, server, s, arm
}

func watchEnded(cw *clientWatch, within time.Duration) bool {
	select {
	case <-cw.done:
		return true
	case <-time.After(within):
		return false
	}
}

// TestLotRearmAfterAnEventNothingTook drives a session's watches in an
// idle lot directly: an edge-triggered event that comes while no watch is
// armed leaves lotSignalled, and the next arm then ends at once when the
// socket has bytes (no edge would announce them again), but waits when it
// has none; the client's close ends an armed watch with io.EOF.
func TestLotRearmAfterAnEventNothingTook(t *testing.T) {
	client, _, s, watch := lotPair(t)
	// As after a read that drained the socket: only the lot's signs make
	// a watch look.
	s.src.drained = true
	send := func(b string) {
		t.Helper()
		if _, err := io.WriteString(client, b); err != nil {
			t.Fatal(err)
		}
	}
	ended := watchEnded

	first := watch()
	send("a")
	if !ended(first, 2*time.Second) || !first.readable() {
		t.Fatalf("the first watch did not end readable on a byte: %v", first.err)
	}
	send("b") // nothing armed: the lot leaves lotSignalled
	deadline := time.Now().Add(2 * time.Second)
	for s.armed.Load() != lotSignalled {
		if time.Now().After(deadline) {
			t.Fatal("the event that found no watch left no sign")
		}
		time.Sleep(time.Millisecond)
	}
	second := watch()
	if !ended(second, 2*time.Second) || !second.readable() {
		t.Fatalf("a watch armed after an event nothing took waits for bytes already there (err %v)", second.err)
	}

	buf := make([]byte, 16)
	if n, err := s.src.Read(buf); err != nil || string(buf[:n]) != "ab" || !s.src.drained {
		t.Fatalf("read %q, %v, drained %v", buf[:n], err, s.src.drained)
	}
	third := watch()
	if ended(third, 100*time.Millisecond) {
		t.Fatalf("a watch with nothing to read ended (err %v)", third.err)
	}
	send("c")
	if !ended(third, 2*time.Second) || !third.readable() {
		t.Fatalf("the third watch did not end readable on a byte: %v", third.err)
	}
	if n, err := s.src.Read(buf); err != nil || n != 1 {
		t.Fatal(n, err)
	}

	// A read that fills its buffer may leave bytes whose edge has passed.
	send("0123456789")
	fourth := watch()
	if !ended(fourth, 2*time.Second) || !fourth.readable() {
		t.Fatalf("the fourth watch did not end readable: %v", fourth.err)
	}
	if n, err := s.src.Read(buf[:4]); err != nil || n != 4 || s.src.drained {
		t.Fatalf("read %d, %v, drained %v", n, err, s.src.drained)
	}
	fifth := watch()
	if !ended(fifth, 2*time.Second) || !fifth.readable() {
		t.Fatalf("a watch armed after a read that filled its buffer waits for bytes already there (err %v)", fifth.err)
	}
	if n, err := s.src.Read(buf); err != nil || n != 6 {
		t.Fatal(n, err)
	}

	last := watch()
	_ = client.Close()
	if !ended(last, 2*time.Second) || !errors.Is(last.err, io.EOF) {
		t.Fatalf("the client's close ended the watch with %v, want io.EOF", last.err)
	}
}

// TestLotRearmAfterTheClientsClose: the client's bytes and its close come
// in one edge-triggered event, which ends one watch (readable); once the
// bytes are read, the next watch ends at once with io.EOF, though no edge
// reports the close again.
func TestLotRearmAfterTheClientsClose(t *testing.T) {
	client, _, s, watch := lotPair(t)
	if _, err := io.WriteString(client, "x"); err != nil {
		t.Fatal(err)
	}
	_ = client.Close()
	time.Sleep(50 * time.Millisecond) // both are there before the socket joins the set
	first := watch()
	if !watchEnded(first, 2*time.Second) || !first.readable() {
		t.Fatalf("the first watch did not end readable: %v", first.err)
	}
	var b [16]byte
	if n, err := s.src.Read(b[:]); err != nil || n != 1 || !s.src.drained {
		t.Fatalf("read %d, %v, drained %v", n, err, s.src.drained)
	}
	second := watch()
	if !watchEnded(second, 2*time.Second) || !errors.Is(second.err, io.EOF) {
		t.Fatalf("after the close's one event, a watch ended %v with %v; want at once with io.EOF", watchEnded(second, 0), second.err)
	}
}
