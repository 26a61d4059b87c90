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
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// fastServer serves the common case of an HTTP or HTTPS listener itself:
// HTTP/1.1 requests without an upgrade, and with no body or one of a plain
// Content-Length (fastbody.go, streamedbody.go; "Expect: 100-continue" is
// answered here, expectcontinue.go); on HTTPS it runs the TLS handshake
// too (fasttls.go). Its per-request cost is lower than net/http's server
// (no per-request context, no background reader goroutine, no response
// header clone). Every connection that sends anything else — HTTP/1.0, a
// chunked body, another expectation, an Upgrade,
// the h2c preface, ALPN h2 — is handed, with its unread bytes intact, to
// the listener's net/http server, which then owns it.
type fastServer struct {
	d    *DataPlane
	port int32
	ln   net.Listener
	// handoff gives a connection to the listener's net/http side, which
	// then owns it (an error: it is closed, the connection is not given).
	handoff func(net.Conn) error
	// tlsConfig is the HTTPS listener's (nil: cleartext).
	tlsConfig *tls.Config
	// h2c is the listener's net/http side, which serves a cleartext
	// HTTP/2 connection without an HTTP/1 connection around it
	// (h2cdirect.go); nil: net/http is given such a connection as it is.
	h2c *httpServers

	mu      sync.Mutex
	conns   map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
	// served counts requests the fast path answered (tests read it).
	served atomic.Uint64
	// ctl is the accept loop's scratch for arming new sessions (admit).
	ctl lotCtl
}

type fastConn struct {
	// nc is what requests are read from and answered on: the accepted
	// connection, or on HTTPS its *tls.Conn once the handshake is over
	// (written under fs.mu).
	nc net.Conn
	// raw is the accepted connection, which a drain's forced close
	// closes without waiting to send a TLS alert.
	raw    net.Conn
	remote string
	busy   atomic.Bool
	s      *fastSession
}

// fastIdleTimeout is how long a keep-alive connection may wait for its
// next request, as net/http's IdleTimeout of the listener's server,
// unless the port's ClientTraffic says otherwise (clienttraffic.go).
const fastIdleTimeout = 120 * time.Second

func newFastServer(d *DataPlane, port int32, ln net.Listener, tlsConfig *tls.Config) *fastServer {
	return &fastServer{d: d, port: port, ln: ln, tlsConfig: tlsConfig, conns: map[*fastConn]struct{}{}}
}

// admit serves a connection the listener accepted: loop says it comes
// from the accept loop's goroutine, whose scratch (ctl) it may use; a
// connection past its PROXY header comes from that header's goroutine.
func (fs *fastServer) admit(nc net.Conn, loop bool) {
	fc := &fastConn{nc: nc, raw: nc, remote: nc.RemoteAddr().String()}
	s := &fastSession{fs: fs, fc: fc}
	fc.s = s
	fs.mu.Lock()
	fs.conns[fc] = struct{}{}
	fs.wg.Add(1)
	fs.mu.Unlock()
	fs.d.m.activeConns.Inc()
	ctl := &fs.ctl
	if !loop {
		ctl = new(lotCtl)
	}
	s.start(ctl)
}

// acceptStopped is told that the listener no longer accepts (its socket
// closed): connections waiting for a request notice it.
func (fs *fastServer) acceptStopped() {
	fs.closing.Store(true)
	fs.wakeIdle()
}

// wakeIdle makes connections waiting for a request notice the drain: a
// goroutine's wait ends at a read deadline in the past, a wait in an idle
// lot is expired.
func (fs *fastServer) wakeIdle() {
	var lotted []*fastSession
	fs.mu.Lock()
	for fc := range fs.conns {
		if !fc.busy.Load() {
			_ = fc.nc.SetReadDeadline(time.Unix(1, 0))
			lotted = append(lotted, fc.s)
		}
	}
	fs.mu.Unlock()
	// Outside the lock: a session that ends releases itself under it.
	for _, s := range lotted {
		s.expire()
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
		var left []*fastSession
		fs.mu.Lock()
		for fc := range fs.conns {
			_ = fc.raw.Close()
			left = append(left, fc.s)
		}
		fs.mu.Unlock()
		// A closed socket leaves an epoll set without an event: the
		// sessions waiting in one are ended here.
		for _, s := range left {
			s.expire()
		}
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

// The fast path's buffers, a worker's while it serves: the reader bounds
// the request heads it parses, and goes with a connection handed to
// net/http until net/http has read what it holds (peekedConn), then back
// here.
var (
	fastReaderPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}
	fastWriterPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}
)

// fastSession is the state of one connection the fast path serves. It
// holds no buffer and, on Linux, no goroutine of its own: between
// requests it is parked. On Linux a parked session waits in an epoll set
// of its own (idlelot_linux.go) and costs no goroutine at all; elsewhere,
// or where that set cannot take it, its client watch's goroutine waits,
// reading nothing, for the next request (clientwatch.go). While a request
// is read and served a worker carries the session, with the worker's
// buffers and stack.
type fastSession struct {
	fs  *fastServer
	fc  *fastConn
	src fastSource
	// watch is the client watch of the request served last, which is the
	// wait for the next one.
	watch *clientWatch
	// lot is the session's place in an idle lot (zero: not in one; its
	// watches wait on goroutines instead).
	lot lotPlace
	// armed is the watch waiting in the lot, which its event, the idle
	// timer or a drain ends (nil: none, or it ended; lotSignalled: none,
	// and an event came since, idlelot_linux.go).
	armed atomic.Pointer[clientWatch]
	// idleTimer ends idleWatch, the wait for a next request in the lot, at
	// its deadline: no read deadline applies there.
	idleTimer *time.Timer
	idleWatch atomic.Pointer[clientWatch]
	handedOff bool
	// probing is true once the connection has TCP keep-alive probes
	// (keepAlive).
	probing bool
	// tlsState is the TLS connection's state (nil: cleartext), every
	// request's Request.TLS.
	tlsState *tls.ConnectionState
}

// start starts serving an accepted connection, on the accept loop: its
// first request is waited for as a parked session's next one is.
func (s *fastSession) start(ctl *lotCtl) {
	if s.fs.tlsConfig != nil {
		go s.handshake()
		return
	}
	s.src.init(s.fc.nc)
	if s.joinLot() {
		cw := &clientWatch{s: s}
		cw.state.Store(watchParked)
		s.armIdleTimer(cw)
		if s.armLot(cw, ctl) {
			return
		}
		s.idleTimer.Stop()
	}
	go func() {
		_ = s.fc.nc.SetReadDeadline(time.Now().Add(s.fs.idleTimeout()))
		if s.fs.closing.Load() {
			s.end() // a drain began: its deadline may have come first
			return
		}
		s.wake(s.src.awaitReadable())
	}()
}

// wake goes on with a parked session once the wait for its next request
// ended with err: a worker serves what arrived, else the session ends
// (the client's close, the idle timeout, a drain).
func (s *fastSession) wake(err error) {
	if err != nil || s.fs.closing.Load() {
		s.end()
		return
	}
	dispatchFast(s)
}

// armIdleTimer bounds cw, the wait for a next request in a lot, by the
// idle timeout: no read deadline applies there. The timer is the
// session's and only ever re-armed, so one that fires late finds a later
// wait, whose deadline has not passed, and leaves it.
func (s *fastSession) armIdleTimer(cw *clientWatch) {
	d := s.fs.idleTimeout()
	cw.idleDeadline = time.Now().Add(d)
	s.idleWatch.Store(cw)
	if s.idleTimer == nil {
		s.idleTimer = time.AfterFunc(d, s.idleExpired)
	} else {
		s.idleTimer.Reset(d)
	}
}

func (s *fastSession) idleExpired() {
	cw := s.idleWatch.Load()
	if cw == nil || time.Now().Before(cw.idleDeadline) {
		return
	}
	if s.armed.CompareAndSwap(cw, nil) {
		cw.finish(os.ErrDeadlineExceeded)
	}
}

// expire ends the armed wait, whichever it is, as a read deadline in the
// past would: when a drain wakes idle connections or closes what is
// left. Safe to call at any time, from any goroutine.
func (s *fastSession) expire() {
	for {
		cw := s.armed.Load()
		if cw == nil || cw == lotSignalled {
			return
		}
		if s.armed.CompareAndSwap(cw, nil) {
			cw.finish(os.ErrDeadlineExceeded)
			return
		}
	}
}

// end releases the connection: closed, unless net/http owns it now.
func (s *fastSession) end() {
	if s.watch != nil {
		// The connection closes below: the watch's wait ends with it.
		s.watch.abandon()
		s.watch = nil
	}
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.leaveLot(false) // the close takes the socket out of the lot's epoll set
	s.fs.release(s.fc, s.handedOff)
}

// fastWorker reads and serves the requests of parked sessions that
// received one, one session at a time. Workers are shared by every fast
// path listener: a connection costs a worker, its buffers and its grown
// stack only while one of its requests is read and served, not while it
// waits for the next.
type fastWorker struct {
	br  *bufio.Reader
	bw  *bufio.Writer
	w   fastWriter
	ctl lotCtl
}

// fastWork hands a session to an idle worker.
var fastWork = make(chan *fastSession)

// fastWorkerIdle ends idle workers: each one waiting for a session when
// it fires exits.
var fastWorkerIdle = newLazyTick(2 * time.Second)

// dispatchFast hands s to an idle worker, or to a new one.
func dispatchFast(s *fastSession) {
	select {
	case fastWork <- s:
	default:
		go runFastWorker(s)
	}
}

func runFastWorker(s *fastSession) {
	wk := &fastWorker{}
	for {
		if !wk.serve(s) {
			return
		}
		select {
		case s = <-fastWork:
		case <-fastWorkerIdle.C():
			wk.detach()
			if wk.br != nil {
				fastReaderPool.Put(wk.br)
			}
			if wk.bw != nil {
				fastWriterPool.Put(wk.bw)
			}
			return
		}
	}
}

// attach points the worker's buffers at s's connection.
func (wk *fastWorker) attach(s *fastSession) {
	if wk.br == nil {
		wk.br = fastReaderPool.Get().(*bufio.Reader)
	}
	if wk.bw == nil {
		wk.bw = fastWriterPool.Get().(*bufio.Writer)
	}
	wk.br.Reset(&s.src)
	wk.bw.Reset(s.fc.nc)
	wk.w.bw, wk.w.conn = wk.bw, s.fc.nc
}

// detach drops the worker's references to the session it served.
func (wk *fastWorker) detach() {
	if wk.br != nil {
		wk.br.Reset(nil)
	}
	if wk.bw != nil {
		wk.bw.Reset(nil)
	}
	wk.w = fastWriter{h: wk.w.h}
}

// serve serves s's requests until it parks, ends or is handed off; false
// when a request panicked (the worker then exits).
func (wk *fastWorker) serve(s *fastSession) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
				s.fs.d.log.Error("panic serving a request", "panic", p)
			}
			wk.br, wk.bw = nil, nil // in an unknown state: not reused
			s.end()
			ok = false
		}
	}()
	wk.attach(s)
	br := wk.br
	if _, err := br.Peek(1); err != nil {
		wk.detach()
		s.end()
		return true
	}
	fs, fc := s.fs, s.fc
	for {
		fc.busy.Store(true)
		headDeadline := time.Now().Add(fs.headerTimeout())
		req, verdict := s.readHead(br, headDeadline)
		switch verdict {
		case headTimedOut:
			// as net/http: a head that never completes is dropped
			wk.detach()
			s.end()
			return true
		case headNotSimple:
			s.handOff(br, headDeadline)
			wk.br = nil // net/http's now (peekedConn)
			wk.detach()
			s.end()
			return true
		}
		if !s.serveWithBody(wk, br, req) {
			wk.detach()
			s.end()
			return true
		}
		s.keepAlive()
		fc.busy.Store(false)
		switch s.awaitRequest(wk) {
		case awaitParked:
			return true
		case awaitOver:
			wk.detach()
			s.end()
			return true
		}
	}
}

// awaitResult is what awaitRequest makes of the wait for a next request.
type awaitResult int

const (
	awaitNext   awaitResult = iota // it is here: the worker reads it
	awaitParked                    // not yet: the watch waits for it
	awaitOver                      // the connection is over
)

// awaitRequest decides what follows a served request: the next request,
// when it is buffered or its first byte arrived, else parking the
// session, whose watch then waits for it. The connection is over after
// a drain began, the client's close or the idle timeout.
func (s *fastSession) awaitRequest(wk *fastWorker) awaitResult {
	inLot := s.lot.in()
	if !inLot {
		// A goroutine waits: the read deadline is the idle timeout.
		_ = s.fc.nc.SetReadDeadline(time.Now().Add(s.fs.idleTimeout()))
	}
	if s.fs.closing.Load() {
		return awaitOver
	}
	cw := s.watch
	s.watch = nil
	// The previous request's watch is the wait for this one: it ends
	// with the next request's first byte, the client's close, or the
	// idle timeout.
	cw.cancel(nil)
	br := wk.br
	if cw.state.Load() == watchWaiting && br.Buffered() == 0 {
		wk.detach()
		if inLot {
			s.armIdleTimer(cw)
		}
		if cw.state.CompareAndSwap(watchWaiting, watchParked) {
			// The watch owns s now: only what is safe at any time is
			// done with s here. The watch no longer uses the request's
			// context, which would otherwise stay with the idle
			// connection.
			cw.ctx, cw.cancel = nil, nil
			if s.fs.closing.Load() {
				s.expire() // a drain began: it may have missed this session
			}
			return awaitParked
		}
		if inLot {
			s.idleTimer.Stop()
		}
		wk.attach(s) // the watch just ended: go on without parking
	}
	<-cw.done
	if !cw.readable() && br.Buffered() == 0 {
		return awaitOver
	}
	if s.fs.closing.Load() {
		return awaitOver // a drain began while the deadline was being set
	}
	if _, err := br.Peek(1); err != nil {
		return awaitOver
	}
	return awaitNext
}

// readHead reads the next request head: the request, when the fast path
// serves it, else the verdict that hands the connection off or drops it.
func (s *fastSession) readHead(br *bufio.Reader, deadline time.Time) (*http.Request, headVerdict) {
	headLen, verdict := s.fs.scanHead(br, s.fc, deadline)
	if verdict != headSimple {
		return nil, verdict
	}
	if s.fs.keepsUnderscores(br, headLen) {
		return nil, headNotSimple // the port keeps "_" fields: net/http's handler applies its policy
	}
	req, ok := parseSimpleRequest(br, headLen)
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
func (s *fastSession) handOff(br *bufio.Reader, headDeadline time.Time) {
	s.leaveLot(true)
	s.keepAlive()
	if s.fs.tlsConfig == nil && s.fs.h2c != nil && hasH2CPreface(br) {
		if serve := s.fs.h2c.directH2C(); serve != nil {
			// As net/http after a preface: no deadline until the HTTP/2
			// server sets its own.
			_ = s.fc.nc.SetDeadline(time.Time{})
			_, _ = br.Discard(len(h2cPreface))
			serve(&peekedConn{Conn: s.fc.nc, r: br, src: &s.src})
			s.handedOff = true
			return
		}
	}
	pc := &peekedConn{Conn: s.fc.nc, r: br, src: &s.src, headDeadline: headDeadline}
	s.handedOff = s.fs.handoff(s.handedOffConn(pc)) == nil
}

// keepAlive turns TCP keep-alive probes on for a connection that may now
// live long: it outlived its first request, or it goes to net/http
// (tcpkeepalive.go).
func (s *fastSession) keepAlive() {
	if !s.probing {
		s.probing = true
		enableKeepAlive(s.fc.raw)
	}
}

// serve serves one request and reports whether the connection may carry
// the next.
func (s *fastSession) serve(wk *fastWorker, br *bufio.Reader, req *http.Request) bool {
	// While the request is served, a read on the connection notices the
	// client going away and cancels the upstream exchange.
	_ = s.fc.nc.SetReadDeadline(time.Time{})
	s.watch = startClientWatch(s, br.Buffered() > 0, &wk.ctl)
	return s.serveIn(wk, req.WithContext(s.watch.ctx))
}

// serveIn serves req, whose context is set.
func (s *fastSession) serveIn(wk *fastWorker, req *http.Request) bool {
	w := &wk.w
	req.RemoteAddr = s.fc.remote
	req.TLS = s.tlsState
	s.fs.served.Add(1)
	w.reset(req)
	if sb, ok := req.Body.(*streamedBody); ok {
		w.expect = sb.expect
	}
	w.reqClose = w.reqClose || s.fs.d.draining() // Connection: close while draining (drain.go)
	s.fs.d.serve(w, req, s.fs.port, s.tlsState != nil)
	err := w.finish()
	return err == nil && !w.closeAfter
}

// serveWithBody reads the request's body, when it has one, then serves
// the request. A body that ended early (bodyFailed answers it) ends the
// connection after the answer: its framing is lost.
func (s *fastSession) serveWithBody(wk *fastWorker, br *bufio.Reader, req *http.Request) bool {
	if req.ContentLength <= 0 {
		return s.serve(wk, br, req)
	}
	if expect := takeExpectation(req, s.fc.nc); expect != nil || req.ContentLength > leanBodyMaxBytes {
		return s.serveStreamed(wk, br, req, expect)
	}
	fb := readFastBody(s.fc.nc, br, int(req.ContentLength), s.fs.d.opts.RequestBodyTimeout)
	req.Body = fb
	if fb.err != nil {
		req.Close = true // the answer says Connection: close
	}
	ok := s.serve(wk, br, req)
	fb.release()
	return ok && fb.err == nil
}

// serveStreamed serves a request whose body is too large to read ahead:
// it streams (streamedbody.go). No watch reads the connection while the
// body is on it: the request's watch begins once the lean client has sent
// the whole body (sent, on this goroutine), else once the answer is out,
// as the wait for the next request. A body the answer left unread is read
// away within the drain bound (finish), else the connection ends. expect
// is the 100 Continue the client waits for, if it does: the body's first
// read sends it.
func (s *fastSession) serveStreamed(wk *fastWorker, br *bufio.Reader, req *http.Request, expect *continueOwed) bool {
	var raw *net.TCPConn
	if tc, ok := s.fc.nc.(*net.TCPConn); ok && !s.src.has {
		raw = tc
	}
	sb := newStreamedBody(s.fc.nc, raw, br, req.ContentLength, s.fs.d.opts.RequestBodyTimeout)
	sb.expect = expect
	req.Body = sb
	cw := newClientWatch(s)
	s.watch = cw // end abandons it when the connection ends here
	armed := false
	arm := func() {
		if !armed {
			armed = true
			// A splice read the socket behind the reader's back: the
			// lot looks at it before it waits for an edge (rearm).
			s.src.drained = false
			_ = s.fc.nc.SetReadDeadline(time.Time{})
			cw.arm(br.Buffered() > 0, &wk.ctl)
		}
	}
	sb.sent = arm
	ok := s.serveIn(wk, req.WithContext(cw.ctx))
	if !sb.finish(s.fs.d.opts.BodyDrainTimeout) || !ok {
		return false
	}
	arm()
	return true
}

// lazyTick is a broadcast that fires about every period while something
// waits for it: C's channel is closed at the next firing. No timer runs
// while nothing waits.
type lazyTick struct {
	period time.Duration
	ch     atomic.Pointer[chan struct{}]
	armed  atomic.Bool
}

func newLazyTick(period time.Duration) *lazyTick {
	t := &lazyTick{period: period}
	ch := make(chan struct{})
	t.ch.Store(&ch)
	return t
}

// C is the channel the next firing closes.
func (t *lazyTick) C() <-chan struct{} {
	// The channel is read before the flag: a timer armed when the flag is
	// seen set fires after this read, so it closes this channel (or a
	// later firing does).
	ch := t.ch.Load()
	if !t.armed.Load() && t.armed.CompareAndSwap(false, true) {
		time.AfterFunc(t.period, t.fire)
	}
	return *ch
}

func (t *lazyTick) fire() {
	t.armed.Store(false)
	next := make(chan struct{})
	close(*t.ch.Swap(&next))
}
