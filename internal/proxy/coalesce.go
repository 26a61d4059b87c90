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
	"runtime"
	"sync"
	"time"
)

// Writes of an HTTP/2 connection gathered into fewer system calls.
//
// net/http's HTTP/2 server flushes its frames whenever its queue of frames
// to write runs empty, and a handler's response is two frames it waits
// for one by one (HEADERS, then DATA): each response of a multiplexed
// connection costs it two writes to the socket, as many as the streams it
// answers. Its HTTP/2 client likewise flushes each request's HEADERS and
// DATA apart. nginx writes what one round of its event loop produced in
// one go. coalescingConn gives net/http the same: a small write is kept
// and handed to the socket by a goroutine that first yields, so that the
// frames written meanwhile (the other streams', the DATA after its
// HEADERS) go out with it in one call. It serves the proxy's HTTP/2
// server (h2c handed over by the fast path, TLS with ALPN h2) and its
// HTTP/2 client (to h2c backends, and over TLS with ALPN h2).
//
// What net/http is told stays true for what it can observe:
//   - order: every byte goes to the socket in the order it was written,
//     by one writer at a time (wmu);
//   - flow: at most coalesceMaxBytes wait at once; a write that would
//     pass it goes to the socket at once, after what waits, so a client
//     that stops reading blocks the server's writes, under their
//     deadlines, as before;
//   - errors: a failed gathered write closes the connection (as the
//     server does when one of its writes fails) and is returned by the
//     next write;
//   - Close hands what waits to the socket first (a GOAWAY or a TLS
//     close_notify written just before), within coalesceCloseTimeout,
//     unless a write is in the socket: that one it ends at once, as
//     closing the socket would;
//   - memory: nothing is held while the connection is idle (goal 4 of
//     issue 17), the buffer goes back to a pool once written.

// coalesceMaxBytes is the most a coalescingConn keeps waiting: a frame
// larger than that (a full DATA frame) is written at once.
const coalesceMaxBytes = 16 << 10

// coalesceBufs hold what waits to be written.
var coalesceBufs = sync.Pool{New: func() any { b := make([]byte, 0, coalesceMaxBytes); return &b }}

// coalescingConn is a net.Conn whose small writes are gathered.
type coalescingConn struct {
	net.Conn

	// gathering: writes are gathered; until it is set (by the goroutine
	// that hands the connection to its HTTP/2 server, before it does)
	// they go to the socket as they come: the TLS handshake's, and every
	// write of a TLS connection that turns out not to be HTTP/2.
	gathering bool

	wmu sync.Mutex // held by whoever writes to the socket

	mu        sync.Mutex
	buf       *[]byte // waiting to be written, nil when none
	scheduled bool    // a flush is on its way
	closed    bool
	err       error // the first failed write's
}

// newCoalescingConn gathers c's writes from now on (h2c).
func newCoalescingConn(c net.Conn) *coalescingConn { return &coalescingConn{Conn: c, gathering: true} }

// newPassingConn is c, whose writes are gathered once gather is called
// (TLS: once ALPN has chosen HTTP/2).
func newPassingConn(c net.Conn) *coalescingConn { return &coalescingConn{Conn: c} }

// gather starts gathering writes. The caller writes nothing to c at the
// same time, and hands c to its HTTP/2 server afterwards.
func (c *coalescingConn) gather() { c.gathering = true }

func (c *coalescingConn) Write(p []byte) (int, error) {
	if !c.gathering {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	if c.err != nil || c.closed {
		err := c.err
		c.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return 0, err
	}
	if c.buf == nil && len(p) <= coalesceMaxBytes {
		c.buf = coalesceBufs.Get().(*[]byte)
	}
	if c.buf != nil && len(*c.buf)+len(p) <= coalesceMaxBytes {
		*c.buf = append(*c.buf, p...)
		if !c.scheduled {
			c.scheduled = true
			go c.flushSoon()
		}
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	// Too much to wait: what waits, then p, at once.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(p)
}

// flushSoon writes what waits once the goroutines made runnable before it
// have run, and with them the server's writes of this round.
func (c *coalescingConn) flushSoon() {
	runtime.Gosched()
	c.wmu.Lock()
	_, _ = c.writeLocked(nil)
	c.wmu.Unlock()
}

// writeLocked writes what waits, then p, in one call where the
// connection takes a vector, and returns how much of p went. Caller holds
// c.wmu.
func (c *coalescingConn) writeLocked(p []byte) (int, error) {
	c.mu.Lock()
	b, err := c.buf, c.err
	c.buf, c.scheduled = nil, false
	c.mu.Unlock()
	if b != nil {
		defer release(b)
	}
	if err != nil {
		return 0, err
	}
	var waiting []byte
	if b != nil {
		waiting = *b
	}
	var n int64
	switch {
	case len(waiting) == 0 && len(p) == 0:
		return 0, nil
	case len(waiting) == 0:
		var m int
		m, err = c.Conn.Write(p)
		n = int64(m)
	case len(p) == 0:
		_, err = c.Conn.Write(waiting)
	default:
		bufs := net.Buffers{waiting, p}
		n, err = bufs.WriteTo(c.Conn)
		n = max(0, n-int64(len(waiting)))
	}
	if err != nil {
		c.fail(err)
	}
	return int(n), err
}

func release(b *[]byte) {
	*b = (*b)[:0]
	coalesceBufs.Put(b)
}

// fail records err and closes the connection, as the HTTP/2 server does
// after a failed write.
func (c *coalescingConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
	_ = c.Conn.Close()
}

// coalesceCloseTimeout bounds how long Close hands what waits to the
// socket (a GOAWAY or a TLS close_notify written just before) when the
// peer reads nothing.
const coalesceCloseTimeout = time.Second

// Close writes what waits, then closes. A write in the socket at that
// moment is ended at once instead, as closing a socket ends it: whoever
// closes a connection while writing to it does so to stop the write.
func (c *coalescingConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	if c.wmu.TryLock() {
		c.mu.Lock()
		pending := c.buf != nil && len(*c.buf) > 0
		c.mu.Unlock()
		if pending {
			_ = c.SetWriteDeadline(time.Now().Add(coalesceCloseTimeout))
			_, _ = c.writeLocked(nil)
		}
		c.wmu.Unlock()
	}
	return c.Conn.Close()
}
