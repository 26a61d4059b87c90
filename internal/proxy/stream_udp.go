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
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The datagrams of UDP listeners. One goroutine reads the listener
// socket. A datagram from a client address with a session goes to that
// session's endpoint; one from a new address opens a session, which loads
// the state with the one atomic load (a swap later changes nothing for
// the session), picks the listener's route, a backend by weight and one of
// its endpoints, and connects a UDP socket of its own to it. The session's
// goroutine reads the endpoint's replies and sends them to the client from
// the listener socket. A session ends when no datagram went either way for
// its listener's UDPIdleTimeout, or when the listener closes. A datagram
// that cannot open a session (no route, a refused pick, the listener's
// UDPMaxSessions reached, a failed dial) is dropped and counted.

// maxDatagram is the largest UDP payload.
const maxDatagram = 64 << 10

// datagramPool holds the buffers replies are read into, taken only while
// a reply is there (readReply), so an idle session holds none.
var datagramPool = sync.Pool{New: func() any { b := make([]byte, maxDatagram); return &b }}

// udpServer serves one UDP listener socket.
type udpServer struct {
	d    *DataPlane
	addr listenerAddr
	pc   *net.UDPConn
	max  int

	mu       sync.Mutex
	sessions map[netip.AddrPort]*udpSession
	closed   bool
	wg       sync.WaitGroup
}

// udpSession is one client address's flow to the endpoint it picked.
type udpSession struct {
	srv    *udpServer
	sl     *streamListener
	rt     *streamRoute
	ep     *endpoint
	client netip.AddrPort
	up     *net.UDPConn
	start  time.Time
	// last is the UnixNano of the last datagram either way; the server
	// stores it under its mutex when it finds the session, so expiry,
	// decided under the same mutex, never ends a session a datagram was
	// just handed to.
	last   atomic.Int64
	rx, tx atomic.Int64
}

func newUDPServer(d *DataPlane, addr listenerAddr, pc net.PacketConn) *udpServer {
	return &udpServer{d: d, addr: addr, pc: pc.(*net.UDPConn), max: d.opts.UDPMaxSessions, sessions: map[netip.AddrPort]*udpSession{}}
}

// readLoop forwards the listener's datagrams until its socket closes,
// then ends every session.
func (u *udpServer) readLoop() {
	defer u.close()
	buf := make([]byte, maxDatagram)
	var backoff time.Duration
	for {
		n, from, err := u.pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// An error of the socket, not of a datagram (ENOBUFS, ENOMEM):
			// back off as the accept loops do.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s := u.session(from)
		if s == nil {
			continue
		}
		if _, err := s.up.Write(buf[:n]); err != nil {
			s.sl.dropped[dropSendError].Inc()
			continue
		}
		s.rx.Add(int64(n))
		s.rt.stats.rx.Add(float64(n))
	}
}

// session returns the session of a client address, opening one if it has
// none; nil when the datagram is to be dropped (counted here).
func (u *udpServer) session(from netip.AddrPort) *udpSession {
	u.mu.Lock()
	s := u.sessions[from]
	if s != nil {
		s.last.Store(time.Now().UnixNano())
	}
	full := len(u.sessions) >= u.max
	u.mu.Unlock()
	if s != nil {
		return s
	}
	var sl *streamListener
	if st := u.d.state.Load(); st != nil {
		sl = st.streams[u.addr]
	}
	if sl == nil || sl.kind != kindUDP {
		return nil // the listener is being removed
	}
	rt := sl.any
	switch {
	case rt == nil:
		sl.dropped[dropNoRoute].Inc()
		return nil
	case full:
		sl.dropped[dropSessionLimit].Inc()
		return nil
	}
	ep := rt.pickStream()
	if ep == nil {
		sl.dropped[dropRefused].Inc()
		return nil
	}
	c, err := u.d.dialer.Dial("udp", ep.addr)
	if err != nil {
		sl.dropped[dropDialError].Inc()
		return nil
	}
	s = &udpSession{srv: u, sl: sl, rt: rt, ep: ep, client: from, up: c.(*net.UDPConn), start: time.Now()}
	s.last.Store(s.start.UnixNano())
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		_ = c.Close()
		return nil
	}
	u.sessions[from] = s
	u.wg.Add(1)
	u.mu.Unlock()
	ep.inflight.Add(1)
	sl.active.Inc()
	rt.stats.count(outcomeForwarded)
	go s.replies()
	return s
}

// replies sends the endpoint's datagrams to the client until the session
// is idle or closed.
func (s *udpSession) replies() {
	defer s.end()
	defer func() {
		if p := recover(); p != nil {
			s.srv.d.log.Error("panic serving a UDP session", "panic", p)
		}
	}()
	idle := s.sl.udpIdle
	for {
		deadline := time.Unix(0, s.last.Load()).Add(idle)
		if !time.Now().Before(deadline) {
			if s.expire(idle) {
				return
			}
			continue
		}
		_ = s.up.SetReadDeadline(deadline)
		bp, n, err := readReply(s.up)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrDeadlineExceeded) {
				continue // nothing listens there (yet), or look at last again
			}
			return
		}
		s.last.Store(time.Now().UnixNano())
		_, err = s.srv.pc.WriteToUDPAddrPort((*bp)[:n], s.client)
		datagramPool.Put(bp)
		if err == nil {
			s.tx.Add(int64(n))
			s.rt.stats.tx.Add(float64(n))
		}
	}
}

// expire removes an idle session from the server; false when a datagram
// came meanwhile.
func (s *udpSession) expire(idle time.Duration) bool {
	u := s.srv
	u.mu.Lock()
	defer u.mu.Unlock()
	if time.Since(time.Unix(0, s.last.Load())) < idle {
		return false
	}
	if u.sessions[s.client] == s {
		delete(u.sessions, s.client)
	}
	return true
}

// end releases an ended session and logs it.
func (s *udpSession) end() {
	u := s.srv
	u.mu.Lock()
	if u.sessions[s.client] == s {
		delete(u.sessions, s.client)
	}
	u.mu.Unlock()
	_ = s.up.Close()
	s.ep.inflight.Add(-1)
	s.sl.active.Dec()
	if a := u.d.alog; a != nil {
		a.logStream(&streamLog{
			start: s.start, listener: s.sl.name, protocol: "UDP", routeID: s.rt.id,
			clientIP: s.client.Addr().Unmap().String(), upstream: s.ep.addr,
			rx: s.rx.Load(), tx: s.tx.Load(), outcome: outcomeForwarded,
		})
	}
	u.wg.Done()
}

// close ends every session and waits for them.
func (u *udpServer) close() {
	_ = u.pc.Close()
	u.mu.Lock()
	u.closed = true
	for _, s := range u.sessions {
		_ = s.up.Close()
	}
	u.mu.Unlock()
	u.wg.Wait()
}
