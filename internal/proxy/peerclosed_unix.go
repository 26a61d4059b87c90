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
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether an idle upstream connection is unusable: the
// upstream closed or reset it, or sent bytes nobody asked for. It peeks
// without blocking and without consuming, so a healthy connection is left
// exactly as it was. Only call it on a connection no one else is reading.
func peerClosed(nc net.Conn) bool {
	state, ok := peek(nc)
	// Empty: the connection is idle as it should be; unknown (EINTR):
	// look again next time. Anything else (its end, data, an error)
	// makes it unusable.
	return ok && state != peekEmpty && state != peekUnknown
}

// peerEnded reports whether the peer closed or reset a connection that
// may still hold unread bytes: a peek finds its end or an error, not
// data and not an empty socket (streamedbody.go tells the client's close
// within a body from the upstream's failure with it).
func peerEnded(nc net.Conn) bool {
	state, ok := peek(nc)
	return ok && (state == peekEnd || state == peekError)
}

// The outcomes of peek.
const (
	peekEmpty   = iota // nothing to read yet
	peekData           // bytes to read
	peekEnd            // the peer's close
	peekError          // a reset or another error, or no descriptor
	peekUnknown        // interrupted
)

// peek looks at what nc's socket holds without blocking or consuming;
// ok is false when nc has no descriptor to look at.
func peek(nc net.Conn) (state int, ok bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return peekError, true
	}
	state = peekError
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK:
			state = peekEmpty
		case rerr == unix.EINTR:
			state = peekUnknown
		case rerr != nil:
			state = peekError
		case n == 0:
			state = peekEnd
		default:
			state = peekData
		}
		return true
	})
	if err != nil {
		return peekError, true
	}
	return state, true
}
