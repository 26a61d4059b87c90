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
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// fastServer serves the common case of a cleartext listener itself: HTTP/1.1
// GET and HEAD requests without a body, upgrade or expectation. Its
// per-request cost is lower than net/http's server (no per-request context,
// no background reader goroutine, no response header clone). Every
// connection that sends anything else — HTTP/1.0, a body, an Upgrade,
// the h2c preface — is handed, with its unread bytes intact, to the
// listener's net/http server, which then owns it.
type fastServer struct {
	d       *DataPlane
	port    int32
	ln      net.Listener
	handoff *handoffListener

	mu      sync.Mutex
	conns   map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
	// served counts requests the fast path answered (tests read it).
	served atomic.Uint64
}

type fastConn struct {
	nc     net.Conn
	remote string
	busy   atomic.Bool
}

// fastIdleTimeout is how long a keep-alive connection may wait for its
// next request, as net/http's IdleTimeout of the listener's server,
// unless the port's ClientTraffic says otherwise (clienttraffic.go).
const fastIdleTimeout = 120 * time.Second

func newFastServer(d *DataPlane, port int32, ln net.Listener) *fastServer {
	return &fastServer{d: d, port: port, ln: ln, conns: map[*fastConn]struct{}{},
		handoff: &handoffListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
}

func (fs *fastServer) acceptLoop() {
	var backoff time.Duration
	for {
		nc, err := fs.ln.Accept()
		if err != nil {
			if fs.closing.Load() || errors.Is(err, net.ErrClosed) {
				fs.closing.Store(true)
				fs.wakeIdle()
				return
			}
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		fc := &fastConn{nc: nc, remote: nc.RemoteAddr().String()}
		fs.mu.Lock()
		fs.conns[fc] = struct{}{}
		fs.wg.Add(1)
		fs.mu.Unlock()
		fs.d.m.activeConns.Inc()
		go fs.serveConn(fc)
	}
}

// wakeIdle makes connections waiting for a request notice the drain.
func (fs *fastServer) wakeIdle() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for fc := range fs.conns {
		if !fc.busy.Load() {
			_ = fc.nc.SetReadDeadline(time.Unix(1, 0))
		}
	}
}

// drain stops accepting, lets in-flight requests finish until ctx ends,
// then closes what is left.
func (fs *fastServer) drain(ctx context.Context) error {
	fs.closing.Store(true)
	_ = fs.ln.Close()
	fs.wakeIdle()
	done := make(chan struct{})
	go func() { fs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		fs.mu.Lock()
		for fc := range fs.conns {
			_ = fc.nc.Close()
		}
		fs.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (fs *fastServer) release(fc *fastConn, handedOff bool) {
	fs.mu.Lock()
	delete(fs.conns, fc)
	fs.mu.Unlock()
	if !handedOff {
		_ = fc.nc.Close()
	}
	fs.d.m.activeConns.Dec() // net/http counts a handed-off connection itself
	fs.wg.Done()
}

var fastBufPool = sync.Pool{New: func() any {
	return &fastBufs{br: bufio.NewReaderSize(nil, 8<<10), bw: bufio.NewWriterSize(nil, 8<<10)}
}}

type fastBufs struct {
	br *bufio.Reader
	bw *bufio.Writer
}

// fastSession is the state of one connection the fast path serves.
type fastSession struct {
	fs   *fastServer
	fc   *fastConn
	bufs *fastBufs
	br   *bufio.Reader
	src  fastSource
	w    fastWriter
	// watch is the client watch of the request served last, which is the
	// wait for the next one (clientwatch.go).
	watch     *clientWatch
	handedOff bool
}

// serveConn is the connection loop: wait for a request, read its head,
// serve it or hand the connection to net/http, and again.
func (fs *fastServer) serveConn(fc *fastConn) {
	s := &fastSession{fs: fs, fc: fc, bufs: fastBufPool.Get().(*fastBufs)}
	s.src.nc = fc.nc
	s.br = s.bufs.br
	s.br.Reset(&s.src)
	s.bufs.bw.Reset(fc.nc)
	s.w.bw = s.bufs.bw
	defer s.end()
	_ = fc.nc.SetReadDeadline(time.Now().Add(fs.idleTimeout()))
	for s.awaitRequest() {
		fc.busy.Store(true)
		headDeadline := time.Now().Add(fs.headerTimeout())
		req, verdict := s.readHead(headDeadline)
		switch verdict {
		case headTimedOut:
			return // as net/http: a head that never completes is dropped
		case headNotSimple:
			s.handOff(headDeadline)
			return
		}
		if !s.serve(req) {
			return
		}
		fc.busy.Store(false)
		_ = fc.nc.SetReadDeadline(time.Now().Add(fs.idleTimeout()))
	}
}

// end releases the connection: closed, unless net/http owns it now.
func (s *fastSession) end() {
	if p := recover(); p != nil && p != http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
		s.fs.d.log.Error("panic serving a request", "panic", p)
	}
	if s.watch != nil {
		// The connection closes below: the watch's read ends with it.
		s.watch.abandon()
	}
	if !s.handedOff {
		s.br.Reset(nil)
		s.bufs.bw.Reset(nil)
		fastBufPool.Put(s.bufs)
	}
	s.fs.release(s.fc, s.handedOff)
}

// awaitRequest waits for the first byte of the next request; false when
// the connection is over (a drain, the client's close, the idle timeout).
func (s *fastSession) awaitRequest() bool {
	if s.fs.closing.Load() {
		return false
	}
	if s.watch != nil {
		// The previous request's watch is the wait for this one: it
		// ends with the next request's first byte, the client's
		// close, or the idle timeout.
		ok := s.watch.wait()
		s.watch = nil
		if !ok && s.br.Buffered() == 0 {
			return false
		}
	}
	if s.fs.closing.Load() {
		return false // a drain began while the deadline was being set
	}
	_, err := s.br.Peek(1)
	return err == nil
}

// readHead reads the next request head: the request, when the fast path
// serves it, else the verdict that hands the connection off or drops it.
func (s *fastSession) readHead(deadline time.Time) (*http.Request, headVerdict) {
	headLen, verdict := s.fs.scanHead(s.br, s.fc, deadline)
	if verdict != headSimple {
		return nil, verdict
	}
	if s.fs.keepsUnderscores(s.br, headLen) {
		return nil, headNotSimple // the port keeps "_" fields: net/http's handler applies its policy
	}
	req, ok := parseSimpleRequest(s.br, headLen)
	if !ok {
		// The head looked simple but a field is one the fast path does
		// not vouch for: net/http decides, never a second parser.
		return nil, headNotSimple
	}
	return req, headSimple
}

// handOff hands the connection, unread bytes included, to net/http, which
// answers exactly as it would have on its own; its header timeout ends
// where this head's budget ends.
func (s *fastSession) handOff(headDeadline time.Time) {
	pc := &peekedConn{Conn: s.fc.nc, r: s.br, src: &s.src, headDeadline: headDeadline}
	s.handedOff = s.fs.handoff.give(pc) == nil
}

// serve serves one request and reports whether the connection may carry
// the next.
func (s *fastSession) serve(req *http.Request) bool {
	// While the request is served, a read on the connection notices the
	// client going away and cancels the upstream exchange.
	_ = s.fc.nc.SetReadDeadline(time.Time{})
	s.watch = startClientWatch(&s.src, s.br.Buffered() > 0)
	req = req.WithContext(s.watch.ctx)
	req.RemoteAddr = s.fc.remote
	s.fs.served.Add(1)
	s.w.reset(req)
	s.w.reqClose = s.w.reqClose || s.fs.d.draining() // Connection: close while draining (drain.go)
	s.fs.d.serve(&s.w, req, s.fs.port, false)
	err := s.w.finish()
	return err == nil && !s.w.closeAfter
}
