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
	"errors"
	"net"
	"os"
	"sync"
)

// Reads of an h2c connection through a buffer held only while it holds
// bytes.
//
// net/http's HTTP/2 server reads its frames straight from the connection
// it is given: nine bytes of frame header, then the payload, two system
// calls a frame, however many frames the client sent in one packet (a
// multiplexed client's HEADERS, one per stream). An HTTP/1 connection's
// reader would answer them from one read, but would hold its buffer for
// as long as the connection is idle (goal 4 of issue 17 holds an idle
// connection to 4 KiB). pooledReadConn reads what the socket has into a
// pooled buffer, taken once bytes are there to read (the runtime's poller
// says so, syscall.RawConn.Read) and given back once they are all read:
// an idle connection holds none.

// pooledReadSize is the buffer's size: a read asking for as much or more
// (a large DATA frame's payload) goes to the socket as it is.
const pooledReadSize = 16 << 10

// pooledReads are the buffers bytes read ahead wait in.
var pooledReads = sync.Pool{New: func() any { b := make([]byte, pooledReadSize); return &b }}

// pooledReadConn is a connection handed over by the fast path whose reads
// go through a pooled buffer.
type pooledReadConn struct {
	// *peekedConn: what the fast path read ahead comes first, and its
	// read deadlines apply.
	net.Conn
	pc *peekedConn
	// raw is the TCP socket under it (a connection past a PROXY header,
	// or on a platform without a poller to ask, reads Conn as it is).
	raw rawReader
	// buf[r:n] are read ahead; buf is nil when none are.
	buf  *[]byte
	r, n int
}

// newPooledReadConn reads c, a connection the fast path hands over,
// through a pooled buffer where it is a TCP socket; else it is c.
func newPooledReadConn(c net.Conn) net.Conn {
	pc, ok := c.(*peekedConn)
	if !ok {
		return c
	}
	raw := rawReaderOf(pc.Conn)
	if !raw.ok() {
		return c
	}
	return &pooledReadConn{Conn: pc, pc: pc, raw: raw}
}

func (c *pooledReadConn) Read(p []byte) (int, error) {
	if c.buf == nil {
		if len(p) >= pooledReadSize || c.pc.readAhead() {
			return c.Conn.Read(p)
		}
		b, n, err := c.raw.readPooled()
		if err != nil {
			// As net's reads: io.EOF as it is, a system call's error in
			// an OpError (the poller's come in one).
			if se := (*os.SyscallError)(nil); errors.As(err, &se) {
				err = &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: se}
			}
			return 0, err
		}
		c.buf, c.r, c.n = b, 0, n
	}
	n := copy(p, (*c.buf)[c.r:c.n])
	c.r += n
	if c.r == c.n {
		pooledReads.Put(c.buf)
		c.buf = nil
	}
	return n, nil
}
