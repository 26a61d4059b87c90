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
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The connections of TLS and TCP listeners (the L4 path; serve.go
// describes both paths). Each connection, in this order:
//
//  1. loads the state with the one atomic load, and keeps it: a swap
//     later changes nothing for it;
//  2. TLS: reads the ClientHello within HeaderTimeout and 64 KiB
//     (peekClientHello, stream_sni.go), else is closed (peek_error);
//  3. picks its route: TLS by SNI, else an unrecognized_name alert; TCP
//     the listener's one route, else a reset (no_route);
//  4. picks a backend by weight and one of its endpoints, else a reset
//     (refused);
//  5. terminating TLS route: completes the handshake with the listener's
//     certificate for the SNI, else is closed (peek_error);
//  6. dials the endpoint within DialTimeout, else a reset (dial_error);
//  7. is spliced (forwarded): the recorded ClientHello first on a
//     passthrough route, then both ways until each side has closed its
//     direction, or until no byte moved for StreamIdleTimeout;
//  8. is counted and logged once it ended.

// streamServer serves the connections of one TLS or TCP listener socket.
type streamServer struct {
	d    *DataPlane
	addr listenerAddr
	kind listenerKind
	ln   net.Listener

	mu       sync.Mutex
	conns    map[*streamConn]struct{}
	draining bool
	wg       sync.WaitGroup
}

// streamConn is one client connection and, once dialed, its backend's.
type streamConn struct {
	client  net.Conn
	mu      sync.Mutex
	backend net.Conn
	killed  bool
}

func newStreamServer(d *DataPlane, addr listenerAddr, kind listenerKind, ln net.Listener) *streamServer {
	return &streamServer{d: d, addr: addr, kind: kind, ln: ln, conns: map[*streamConn]struct{}{}}
}

func (s *streamServer) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
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
		sc := &streamConn{client: c}
		s.mu.Lock()
		if s.draining {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(sc)
	}
}

// drain stops accepting, lets open connections go on until ctx ends, then
// closes both sides of what is left.
func (s *streamServer) drain(ctx context.Context) error {
	_ = s.ln.Close()
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for sc := range s.conns {
			sc.kill()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// setBackend records the dialed backend; false when the connection was
// killed meanwhile (the caller closes the backend).
func (sc *streamConn) setBackend(up net.Conn) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.killed {
		return false
	}
	sc.backend = up
	return true
}

// kill closes both sides, for a drain that ran out of time.
func (sc *streamConn) kill() {
	sc.mu.Lock()
	sc.killed = true
	up := sc.backend
	sc.mu.Unlock()
	_ = sc.client.Close()
	if up != nil {
		_ = up.Close()
	}
}

// serve serves one connection (steps 1 and 8; forward does the rest).
func (s *streamServer) serve(sc *streamConn) {
	defer func() {
		if p := recover(); p != nil {
			s.d.log.Error("panic serving a stream connection", "panic", p)
		}
		_ = sc.client.Close()
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		s.wg.Done()
	}()
	var sl *streamListener
	if st := s.d.state.Load(); st != nil {
		sl = st.streams[s.addr]
	}
	if sl == nil || sl.kind != s.kind {
		// The listener was switched or removed since it accepted.
		resetConn(sc.client)
		return
	}
	sl.active.Inc()
	defer sl.active.Dec()
	s.d.m.activeConns.Inc()
	defer s.d.m.activeConns.Dec()
	e := streamLog{start: time.Now(), listener: sl.name, protocol: s.kind.String(), clientIP: clientIP(sc.client.RemoteAddr().String())}
	s.forward(sc, sl, &e)
	if s.d.alog != nil {
		s.d.alog.logStream(&e)
	}
}

// forward runs steps 2 to 7, counting the outcome once it is known.
func (s *streamServer) forward(sc *streamConn, sl *streamListener, e *streamLog) {
	d, c := s.d, sc.client
	stats := sl.unrouted
	outcome := func(o streamOutcome) {
		e.outcome = o
		stats.count(o)
	}
	var recorded []byte
	var rt *streamRoute
	if sl.kind == kindTLS {
		_ = c.SetDeadline(e.start.Add(d.opts.HeaderTimeout))
		hello, rec, _ := peekClientHello(c, maxClientHelloBytes)
		if hello == nil {
			outcome(outcomePeekError)
			return // closed by serve: not TLS, too large or too slow
		}
		e.sni = hello.serverName
		if rt = sl.route(hello.serverName); rt == nil {
			outcome(outcomeNoRoute)
			resetConn(c)
			return
		}
		recorded = rec
	} else if rt = sl.any; rt == nil {
		outcome(outcomeNoRoute)
		resetConn(c)
		return
	}
	e.routeID, stats = rt.id, rt.stats
	ep := rt.pickStream()
	if ep == nil {
		outcome(outcomeRefused)
		resetConn(c)
		return
	}
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	e.upstream = ep.addr
	front := c
	if rt.terminate {
		if sl.tlsConfig == nil { // Validate refuses it; never hand crypto/tls a nil config
			outcome(outcomePeekError)
			return
		}
		tc, err := terminateTLS(c, recorded, sl.tlsConfig)
		if err != nil {
			outcome(outcomePeekError)
			return
		}
		front, recorded = tc, nil
	}
	_ = c.SetDeadline(time.Time{})
	up, err := d.dialer.Dial("tcp", ep.addr)
	if err != nil {
		outcome(outcomeDialError)
		resetConn(c)
		return
	}
	if !sc.setBackend(up) {
		_ = up.Close() // drained out while dialing
		outcome(outcomeDialError)
		return
	}
	outcome(outcomeForwarded)
	e.rx, e.tx = splice(front, up, recorded, d.opts.StreamIdleTimeout, stats)
}

// resetConn closes c with a TCP reset (SO_LINGER 0), which tells the
// client it was refused rather than served.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// spliceChunk is the most one copy call moves before it reports its bytes
// to the metrics and the idle watch.
const spliceChunk = 1 << 20

var spliceBufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// splicer is the idle watch of one spliced connection. Each direction
// copies in calls bounded by spliceChunk and by a read deadline of a
// quarter of the idle timeout, and reports after each call; the watch
// closes the connection once no report of moved bytes came for the idle
// timeout. A connection is thus closed between one and one and a quarter
// idle timeouts after its last byte (no earlier than three quarters when
// a peer stopped reading and a write stalls).
type splicer struct {
	idle  time.Duration
	slice time.Duration
	last  atomic.Int64 // UnixNano of the last report of moved bytes
	abort func()

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// splice relays client (a TCP connection, or TLS terminated over one) and
// backend both ways, pre first to the backend, until each direction has
// ended: a side's EOF half-closes the other side's write (CloseWrite), so
// each direction ends on its own; an error on either closes both. It
// closes both before it returns the bytes relayed from the client (rx)
// and to it (tx). Between two TCP connections io.Copy splices in the
// kernel (splice(2) on Linux).
func splice(client, backend net.Conn, pre []byte, idle time.Duration, stats *streamStats) (rx, tx int64) {
	closeBoth := sync.OnceFunc(func() {
		_ = client.Close()
		_ = backend.Close()
	})
	sp := &splicer{idle: idle, slice: max(idle/4, time.Millisecond), abort: closeBoth}
	sp.last.Store(time.Now().UnixNano())
	sp.mu.Lock()
	sp.timer = time.AfterFunc(idle, sp.check)
	sp.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tx = sp.copy(client, backend, nil, stats.tx)
	}()
	rx = sp.copy(backend, client, pre, stats.rx)
	<-done
	sp.mu.Lock()
	sp.stopped = true
	sp.timer.Stop()
	sp.mu.Unlock()
	closeBoth()
	return rx, tx
}

// check closes an idle connection, or looks again when it could be.
func (sp *splicer) check() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.stopped {
		return
	}
	quiet := time.Since(time.Unix(0, sp.last.Load()))
	if quiet >= sp.idle {
		sp.stopped = true
		go sp.abort()
		return
	}
	sp.timer.Reset(sp.idle - quiet)
}

// writerOnly hides a writer's ReadFrom, so io.CopyBuffer copies through
// the pooled buffer instead of the writer's own (TCPConn.ReadFrom
// allocates one for every call when the source is not a TCP connection).
type writerOnly struct{ io.Writer }

// copy relays src to dst and returns the bytes relayed.
func (sp *splicer) copy(dst, src net.Conn, pre []byte, counter prometheus.Counter) int64 {
	var total int64
	moved := func(n int64) {
		if n > 0 {
			total += n
			counter.Add(float64(n))
			sp.last.Store(time.Now().UnixNano())
		}
	}
	if len(pre) > 0 {
		n, err := dst.Write(pre)
		moved(int64(n))
		if err != nil {
			sp.abort()
			return total
		}
	}
	var w io.Writer = dst
	var buf []byte
	_, srcTCP := src.(*net.TCPConn)
	if _, dstTCP := dst.(*net.TCPConn); !srcTCP || !dstTCP {
		bp := spliceBufPool.Get().(*[]byte)
		defer spliceBufPool.Put(bp)
		w, buf = writerOnly{dst}, *bp
	}
	lr := &io.LimitedReader{R: src}
	for {
		_ = src.SetReadDeadline(time.Now().Add(sp.slice))
		lr.N = spliceChunk
		n, err := io.CopyBuffer(w, lr, buf)
		moved(n)
		switch {
		case err == nil && lr.N > 0: // src's EOF: this direction is done
			closeWrite(dst)
			return total
		case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		default:
			sp.abort()
			return total
		}
	}
}

// closeWrite ends c's write direction: a TLS close_notify, then a TCP
// FIN.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		_ = tc.CloseWrite()
		c = tc.NetConn()
	}
	if rc, ok := c.(*replayConn); ok {
		c = rc.Conn
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
