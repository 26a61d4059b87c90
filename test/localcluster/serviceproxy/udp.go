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

package serviceproxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Bounds of UDP relaying.
const (
	// udpIdleTimeout ends a session after this long without a datagram in
	// either direction (conntrack's default for UDP).
	udpIdleTimeout = 30 * time.Second
	// maxUDPSessions bounds the sessions of one frontend; a new client
	// beyond it takes the place of the least recently active session.
	// Each session holds a socket, a goroutine and a 64 KiB buffer.
	maxUDPSessions = 1024
	maxDatagram    = 64 << 10
)

// udpFrontend is a UDP Service port's socket and its sessions, one per
// client address.
type udpFrontend struct {
	conn *net.UDPConn

	mu       sync.Mutex
	sessions map[netip.AddrPort]*udpSession
	closed   bool
	full     bool // the session limit was reached (logged once until it clears)
}

// udpSession carries one client's datagrams to one endpoint and the
// endpoint's replies back.
type udpSession struct {
	client  netip.AddrPort
	backend string
	conn    *net.UDPConn // connected to backend
	last    atomic.Int64 // UnixNano of the last datagram either way
}

func (s *udpSession) touch() { s.last.Store(time.Now().UnixNano()) }

// listenUDP opens a UDP frontend socket on hostPort.
func (p *Proxy) listenUDP(hostPort string) (*udpFrontend, error) {
	ap, err := netip.ParseAddrPort(hostPort)
	if err != nil {
		return nil, err
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return nil, err
	}
	return &udpFrontend{conn: conn, sessions: map[netip.AddrPort]*udpSession{}}, nil
}

// close closes the socket and ends every session.
func (u *udpFrontend) close() {
	u.mu.Lock()
	u.closed = true
	sessions := u.sessions
	u.sessions = map[netip.AddrPort]*udpSession{}
	u.mu.Unlock()
	_ = u.conn.Close()
	for _, s := range sessions {
		_ = s.conn.Close()
	}
}

// end removes a session (if it is still the client's) and closes it.
func (u *udpFrontend) end(s *udpSession) {
	u.mu.Lock()
	if u.sessions[s.client] == s {
		delete(u.sessions, s.client)
	}
	u.mu.Unlock()
	_ = s.conn.Close()
}

// sessionCount is the number of open sessions.
func (u *udpFrontend) sessionCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sessions)
}

// serveUDP reads clients' datagrams until the frontend is closed and
// relays each to its client's session.
func (p *Proxy) serveUDP(fe *frontend) {
	u := fe.udp
	buf := make([]byte, maxDatagram)
	for {
		n, client, err := u.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.relayToBackend(fe, netip.AddrPortFrom(client.Addr().Unmap(), client.Port()), buf[:n])
	}
}

// relayToBackend sends one client datagram through the client's session,
// opening one (round robin) when there is none. A datagram for a Service
// without a ready endpoint is dropped. A session whose socket failed (the
// endpoint refused an earlier datagram) is replaced once.
func (p *Proxy) relayToBackend(fe *frontend, client netip.AddrPort, b []byte) {
	for range 2 {
		s := p.udpSession(fe, client)
		if s == nil {
			return
		}
		if _, err := s.conn.Write(b); err == nil {
			s.touch()
			return
		}
		fe.udp.end(s)
	}
}

// udpSession returns the client's session, or opens one to the next
// endpoint; nil when the Service has no endpoint or the frontend is
// closed. Only the frontend's serve goroutine opens sessions.
func (p *Proxy) udpSession(fe *frontend, client netip.AddrPort) *udpSession {
	u := fe.udp
	u.mu.Lock()
	s, closed := u.sessions[client], u.closed
	u.mu.Unlock()
	if s != nil || closed {
		return s
	}
	// Proxy.mu is taken before udpFrontend.mu (Reconcile closes frontends
	// under it), never while holding it.
	p.mu.Lock()
	key := fe.key
	p.mu.Unlock()
	backend, ok := p.pick(key)
	if !ok {
		return nil
	}
	ap, err := netip.ParseAddrPort(backend)
	if err != nil {
		return nil
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		p.logf("udp session %s -> %s: %v", client, backend, err)
		return nil
	}
	s = &udpSession{client: client, backend: backend, conn: conn}
	s.touch()

	var evicted *udpSession
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		_ = conn.Close()
		return nil
	}
	if len(u.sessions) >= p.udpMaxSessions {
		evicted = u.leastRecentLocked()
		delete(u.sessions, evicted.client)
		if !u.full {
			p.logf("udp frontend %s: %d sessions (the limit): the least recently active give way to new clients", u.conn.LocalAddr(), p.udpMaxSessions)
		}
		u.full = true
	} else if len(u.sessions) < p.udpMaxSessions/2 {
		u.full = false
	}
	u.sessions[client] = s
	u.mu.Unlock()
	if evicted != nil {
		_ = evicted.conn.Close()
	}
	go p.relayReplies(u, s)
	return s
}

// leastRecentLocked is the session with the oldest activity (the map is
// not empty).
func (u *udpFrontend) leastRecentLocked() *udpSession {
	var oldest *udpSession
	for _, s := range u.sessions {
		if oldest == nil || s.last.Load() < oldest.last.Load() {
			oldest = s
		}
	}
	return oldest
}

// relayReplies sends the endpoint's datagrams back to the client from the
// frontend socket, so they come from the address the client sent to. It
// ends the session after the idle timeout, when the endpoint refuses (an
// ICMP port unreachable shows as ECONNREFUSED on the connected socket), or
// when the session or the frontend is closed.
func (p *Proxy) relayReplies(u *udpFrontend, s *udpSession) {
	defer u.end(s)
	buf := make([]byte, maxDatagram)
	for {
		deadline := time.Unix(0, s.last.Load()).Add(p.udpIdle)
		if !time.Now().Before(deadline) {
			return // idle
		}
		_ = s.conn.SetReadDeadline(deadline)
		n, err := s.conn.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // the loop checks whether traffic came meanwhile
			}
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNREFUSED) {
				p.logf("udp session %s -> %s: %v", s.client, s.backend, err)
			}
			return
		}
		s.touch()
		if _, err := u.conn.WriteToUDPAddrPort(buf[:n], s.client); errors.Is(err, net.ErrClosed) {
			return
		}
	}
}
