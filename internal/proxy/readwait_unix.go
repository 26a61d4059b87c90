//go:build linux || darwin

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
	"syscall"

	"golang.org/x/sys/unix"
)

// readWaiter waits for a connection to become readable without reading
// from it: through the runtime's poller (syscall.RawConn.Read), with a
// non-blocking MSG_PEEK of one byte to tell data from the peer's close.
// The peek runs after the poller's readiness is reset, as net's own reads
// do, so no wake-up is lost between the two. The wait needs no buffer, and
// a goroutine that waits holds little stack.
type readWaiter struct {
	raw   syscall.RawConn
	probe func(fd uintptr) bool
	// pc is set for a connection past a PROXY header, whose replayed
	// bytes are readable without a wait.
	pc   *proxiedConn
	err  error
	peek [1]byte
}

// init sets the waiter up for nc: TCP connections (past a PROXY header or
// not) are polled; any other connection waits by reading a byte.
func (s *fastSource) init(nc net.Conn) {
	s.nc = nc
	inner := nc
	if pc, ok := nc.(*proxiedConn); ok {
		s.rw.pc, inner = pc, pc.Conn
	}
	tc, ok := inner.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	s.rw.raw = raw
	s.rw.probe = s.rw.check
}

// awaitReadable waits until a read of the connection would not block:
// nil when bytes are there to read, else why not (io.EOF for the peer's
// close, a timeout at the read deadline, the error of a reset or a close).
func (s *fastSource) awaitReadable() error {
	if s.has || s.rw.pc != nil && len(s.rw.pc.rest) > 0 {
		return nil
	}
	if s.rw.raw == nil {
		return s.readOne()
	}
	s.rw.err = nil
	if err := s.rw.raw.Read(s.rw.probe); err != nil {
		return err
	}
	return s.rw.err
}

// check is the probe of awaitReadable: false (wait for the poller) while
// nothing is there to read.
func (w *readWaiter) check(fd uintptr) bool {
	for {
		n, _, err := unix.Recvfrom(int(fd), w.peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || err == unix.EWOULDBLOCK:
			return false
		case err != nil:
			w.err = err
		case n == 0:
			w.err = io.EOF
		}
		return true
	}
}
