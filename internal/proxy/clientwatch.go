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
	"sync/atomic"
	"time"
)

// fastSource is what the fast path's reader reads: the connection, after
// a byte that a wait for readability read where it cannot wait without
// reading (readwait_other.go, and connections readwait_unix.go cannot
// poll).
type fastSource struct {
	nc      net.Conn
	pending byte
	has     bool
	rw      readWaiter
	// drained is true when the last read from the connection got fewer
	// bytes than it asked for: nothing more had arrived then, so bytes
	// that came since were announced by an event of the idle lot
	// (idlelot_linux.go's rearm).
	drained bool
}

func (s *fastSource) Read(p []byte) (int, error) {
	if n, ok := s.takePending(p); ok {
		s.drained = false
		return n, nil
	}
	n, err := s.nc.Read(p)
	s.drained = n < len(p)
	return n, err
}

func (s *fastSource) takePending(p []byte) (int, bool) {
	if !s.has || len(p) == 0 {
		return 0, false
	}
	p[0], s.has = s.pending, false
	return 1, true
}

// readOne waits for readability by reading one byte, which the next Read
// returns first.
func (s *fastSource) readOne() error {
	var b [1]byte
	n, err := s.nc.Read(b[:])
	if n == 1 {
		s.pending, s.has = b[0], true
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// lotSignalled stands in a session's armed watch for an event of its idle
// lot that found no watch armed (idlelot_linux.go); it is never finished.
var lotSignalled = new(clientWatch)

// errClientGone is the cancellation cause when a client closes its
// connection while its request is being served.
var errClientGone = errors.New("client closed the connection")

// The states of a client watch.
const (
	watchWaiting int32 = iota // the wait goes on
	watchDone                 // it ended; the worker goes on with the session
	watchParked               // the worker parked the session: the watch goes on with it
)

// clientWatch waits for the connection to become readable while a request
// is served, as net/http's background read does: when the client closes,
// the request's context is canceled and the upstream exchange with it.
// It reads nothing (readwait_unix.go, idlelot_linux.go), so the bytes
// that end it (the next request) stay for the fast path's reader. The
// same wait is the wait for the next request: when the worker finishes
// the response first, it parks the session, and whoever ends the wait
// (the idle lot, the watch's goroutine, the idle timer, a drain) goes on
// with it (wake).
type clientWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	s      *fastSession
	err    error
	state  atomic.Int32
	// idleDeadline ends the watch once it is the wait for a next request
	// in a lot (armIdleTimer).
	idleDeadline time.Time
}

func startClientWatch(s *fastSession, pipelined bool, c *lotCtl) *clientWatch {
	cw := newClientWatch(s)
	cw.arm(pipelined, c)
	return cw
}

// newClientWatch is a watch whose wait has not begun (arm begins it): its
// context is the request's already.
func newClientWatch(s *fastSession) *clientWatch {
	cw := &clientWatch{done: make(chan struct{}), s: s}
	cw.ctx, cw.cancel = context.WithCancelCause(context.Background())
	return cw
}

// arm begins the wait, on the worker's goroutine.
func (cw *clientWatch) arm(pipelined bool, c *lotCtl) {
	s := cw.s
	if pipelined || s.src.has {
		// The next request is already buffered: reading further would
		// only delay it, so this request goes unwatched.
		cw.state.Store(watchDone)
		close(cw.done)
		return
	}
	if s.lot.in() && s.armLot(cw, c) {
		return
	}
	go cw.run()
}

// run is the watch's goroutine, when it has one.
func (cw *clientWatch) run() { cw.finish(cw.s.src.awaitReadable()) }

// finish ends the watch with the wait's outcome: nil (readable), or the
// client's close, an error or a timeout.
func (cw *clientWatch) finish(err error) {
	cw.err = err
	if cw.state.CompareAndSwap(watchWaiting, watchDone) {
		var ne net.Error
		if err != nil && (!errors.As(err, &ne) || !ne.Timeout()) {
			cw.cancel(errClientGone)
		}
		close(cw.done)
		return
	}
	// Parked: the request is over (its context too), and the session is
	// the finisher's now.
	cw.s.wake(err)
}

// readable reports, once the watch is done, whether the connection has a
// next request to read.
func (cw *clientWatch) readable() bool { return cw.err == nil }

// abandon ends the request's context; the wait ends when the connection
// closes.
func (cw *clientWatch) abandon() { cw.cancel(nil) }
