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
	"net"
	"sync"
	"time"
)

// handoffListener feeds connections to one of a listener's net/http
// servers (clienttraffic_servers.go): from the fast path, or accepted
// without it.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	// accepting closes at the first Accept: the server serving this
	// listener has set itself up (http.Server.Serve configures HTTP/2
	// before it accepts).
	accepting  chan struct{}
	acceptOnce sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{}), accepting: make(chan struct{})}
}

func (l *handoffListener) give(c net.Conn) error {
	select {
	case l.ch <- c:
		return nil
	case <-l.done:
		return net.ErrClosed
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	l.acceptOnce.Do(func() { close(l.accepting) })
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// peekedConn replays bytes the fast path buffered before the handoff;
// then its reader goes back to the fast path's pool.
type peekedConn struct {
	net.Conn
	r   *bufio.Reader
	src *fastSource
	// headDeadline ends the header budget of the head being handed off:
	// net/http's read deadlines are cut to it until it clears the deadline
	// (a zero deadline: the head is read, or the connection turned out to
	// be HTTP/2), so a trickled head gets one budget, not two.
	headDeadline time.Time
	headDone     bool
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if c.readAhead() {
		if c.r != nil && c.r.Buffered() > 0 {
			return c.r.Read(p)
		}
		if n, ok := c.src.takePending(p); ok {
			return n, nil
		}
	}
	return c.Conn.Read(p)
}

// readAhead reports whether bytes the fast path read are still to be
// read from c; once they are all read, the reader that held them goes
// back to its pool.
func (c *peekedConn) readAhead() bool {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return true
		}
		c.r.Reset(nil)
		fastReaderPool.Put(c.r)
		c.r = nil
	}
	if c.src != nil {
		if c.src.has {
			return true
		}
		c.src = nil
	}
	return false
}

func (c *peekedConn) SetReadDeadline(t time.Time) error {
	switch {
	case c.headDone:
	case t.IsZero():
		c.headDone = true
	case !c.headDeadline.IsZero() && c.headDeadline.Before(t):
		t = c.headDeadline
	}
	return c.Conn.SetReadDeadline(t)
}
