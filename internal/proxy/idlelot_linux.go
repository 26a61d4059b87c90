//go:build linux

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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// An idle lot holds the fast path's parked sessions on Linux without a
// goroutine each: their sockets sit in an epoll set of the lot's,
// edge-triggered for readability, and one goroutine per lot waits for the
// set through the runtime's poller (the epoll descriptor is itself
// pollable). An event ends the session's armed watch (finish): while a
// request is served it is the client watch (data, or the client's close,
// which cancels the request); once the session is parked it is the wait
// for the next request, and the lot hands the session to a worker. An
// idle connection then costs its socket, its session and a timer: no
// goroutine, stack or buffer.
//
// A socket joins the set once. Arming a watch again is a store, not a
// system call: an event that finds no watch armed (a worker is serving
// the session) leaves lotSignalled in its place, and the next arm then
// looks at the socket itself (rearm), as the edge it would wait for has
// passed.
//
// Sessions are found by an id carried in the event, never by a pointer
// the kernel holds. Every epoll_ctl and peek runs inside
// syscall.RawConn.Control, so the descriptor cannot be closed and reused
// under it. A socket leaves the set when it closes (or explicitly, when
// it is handed to net/http); its session leaves the lot's table when it
// ends.
type idleLot struct {
	epfd     int
	mu       sync.Mutex
	sessions map[uint64]*fastSession
	events   [128]unix.EpollEvent
}

// lotPlace is a session's place in a lot.
type lotPlace struct {
	l     *idleLot
	id    uint64
	raw   syscall.RawConn
	added bool
	ev    unix.EpollEvent
	// hup is set once an event reported the client's close or an error,
	// which no later edge reports again (rearm).
	hup atomic.Bool
	// peek is the Control callback of peekState, made once per session
	// on first use; only the lot's goroutine uses it and peekErr.
	peek    func(fd uintptr)
	peekErr error
}

// lotCtl is the scratch of one goroutine that arms sessions (a worker,
// an accept loop): the outcome of adding a socket to a lot's set is read
// here, not from the session, which the lot may have handed to another
// goroutine by then.
type lotCtl struct {
	fn   func(fd uintptr)
	epfd int
	ev   *unix.EpollEvent
	err  error
	// look, rw and ready are rearm's peek at the socket.
	look  func(fd uintptr)
	rw    readWaiter
	ready bool
}

func (c *lotCtl) do(fd uintptr) { c.err = unix.EpollCtl(c.epfd, unix.EPOLL_CTL_ADD, int(fd), c.ev) }

func (p *lotPlace) in() bool { return p.l != nil }

var idleLots struct {
	once   sync.Once
	shards []*idleLot
	ids    atomic.Uint64
}

// lotFor is the lot of session id (nil: none could be made).
func lotFor(id uint64) *idleLot {
	idleLots.once.Do(func() {
		n := min(runtime.GOMAXPROCS(0), 16)
		for range n {
			l, err := newIdleLot()
			if err != nil {
				idleLots.shards = nil
				return
			}
			idleLots.shards = append(idleLots.shards, l)
		}
	})
	if len(idleLots.shards) == 0 {
		return nil
	}
	return idleLots.shards[id%uint64(len(idleLots.shards))]
}

func newIdleLot() (*idleLot, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	// Non-blocking, so os.NewFile registers it with the runtime's poller.
	f := os.NewFile(uintptr(fd), "coxswain-idle-lot")
	raw, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	l := &idleLot{epfd: fd, sessions: map[uint64]*fastSession{}}
	go func() {
		// Read waits for readability again whenever poll reports
		// nothing more; it returns only if the descriptor fails.
		_ = raw.Read(l.poll)
		runtime.KeepAlive(f)
	}()
	return l, nil
}

// poll takes the ready events without blocking and ends their sessions'
// watches; false (wait for the poller) once there are no more. The
// runtime's poller watches the epoll descriptor edge-triggered, and its
// readiness is reset before poll runs: an event that arrives after the
// last epoll_wait here wakes it again.
func (l *idleLot) poll(fd uintptr) bool {
	for {
		n, err := unix.EpollWait(int(fd), l.events[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		for i := range n {
			l.event(&l.events[i])
		}
		if n < len(l.events) {
			return false
		}
	}
}

func (l *idleLot) event(ev *unix.EpollEvent) {
	id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32 //nolint:gosec // G115: the id's two halves, bits unchanged
	l.mu.Lock()
	s := l.sessions[id]
	l.mu.Unlock()
	if s == nil {
		return // the session ended
	}
	hup := ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	if hup {
		// Reported once, edge-triggered: every later arm looks for itself.
		s.lot.hup.Store(true)
	}
	var cw *clientWatch
	for cw == nil {
		switch cur := s.armed.Load(); cur {
		case lotSignalled:
			return // the next arm looks already
		case nil:
			// Nothing armed: a worker serves the session (or the idle
			// timer or a drain ended the wait first).
			if s.armed.CompareAndSwap(nil, lotSignalled) {
				return
			}
		default:
			if s.armed.CompareAndSwap(cur, nil) {
				cw = cur
			}
		}
	}
	var err error
	if hup {
		// The client closed or reset its side: bytes it sent first (the
		// next request) still count, as in readWaiter.check.
		err = s.lot.peekState()
	}
	cw.finish(err)
}

// joinLot gives s a place in a lot: true for a TCP connection (past a
// PROXY header or not) when the lots could be made.
func (s *fastSession) joinLot() bool {
	if s.src.rw.raw == nil || s.fs.d.opts.goroutineIdleWait {
		return false
	}
	id := idleLots.ids.Add(1)
	l := lotFor(id)
	if l == nil {
		return false
	}
	p := &s.lot
	p.l, p.id, p.raw = l, id, s.src.rw.raw
	// The event carries the id in its 64 data bits (Fd and Pad).
	lo, hi := int32(uint32(id)), int32(uint32(id>>32)) //nolint:gosec // G115: the id's two halves, bits unchanged
	p.ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: lo, Pad: hi}
	l.mu.Lock()
	l.sessions[id] = s
	l.mu.Unlock()
	return true
}

// armLot arms the lot's wait for cw and stores cw in s.armed. False when
// it cannot: s then leaves the lot, and the caller waits for cw otherwise
// (a goroutine). True also when cw was ended meanwhile. Once cw is armed
// the lot may end it and hand s on at once, so every write to s comes
// before the store of cw, which the lot's CompareAndSwap acquires, and
// none after.
func (s *fastSession) armLot(cw *clientWatch, c *lotCtl) bool {
	p := &s.lot
	if s.src.rw.pc != nil && len(s.src.rw.pc.rest) > 0 {
		// Bytes replayed past a PROXY header: no event announces them.
		s.leaveLot(true)
		return false
	}
	if p.added {
		return s.rearm(cw, c)
	}
	if c.fn == nil {
		c.fn = c.do
	}
	// Added with cw armed: a socket readable already reports an event at
	// once.
	c.epfd, c.ev = p.l.epfd, &p.ev
	p.added = true
	s.armed.Store(cw)
	c.err = nil
	if err := p.raw.Control(c.fn); err == nil && c.err == nil {
		return true
	}
	// Not added (a closed socket): unless the idle timer or a drain ended
	// cw meanwhile, s is still the caller's.
	if !s.armed.CompareAndSwap(cw, nil) {
		return true
	}
	p.added = false
	s.leaveLot(true)
	return false
}

// rearm arms cw on a socket in the lot's set, where events are edge-
// triggered: an edge ends cw, but bytes or a close that came before cw
// was armed may have no edge to come. Nothing is armed when rearm runs
// (the caller serves s), and the socket is looked at (a non-blocking
// peek) instead of waited for when an edge came since the last watch
// ended (s.armed holds lotSignalled), when an event reported the client's
// close (reported once), or when the last read filled its buffer (bytes
// may be left from before its edge): cw then ends at once if the look
// finds bytes or the close. Else cw is armed, and an event that comes
// between the look and the arm finds it, or leaves lotSignalled, which
// makes the arm fail and look again.
func (s *fastSession) rearm(cw *clientWatch, c *lotCtl) bool {
	look := !s.src.drained
	for {
		cur := s.armed.Load()
		if cur == lotSignalled {
			if !s.armed.CompareAndSwap(lotSignalled, nil) {
				continue
			}
			cur, look = nil, true
		}
		if look || s.lot.hup.Load() {
			look = false
			if ready, err := s.lot.look(c); ready {
				cw.finish(err)
				return true
			}
		}
		// cur is nil: any other watch is over (its finisher took it out),
		// and the arm replaces it.
		if s.armed.CompareAndSwap(cur, cw) {
			return true
		}
	}
}

// look tells whether the socket has bytes to read (err nil) or the
// client's close or an error to report, without reading.
func (p *lotPlace) look(c *lotCtl) (ready bool, err error) {
	if c.look == nil {
		c.look = func(fd uintptr) { c.ready = c.rw.check(fd) }
	}
	c.rw.err, c.ready = nil, false
	if err := p.raw.Control(c.look); err != nil {
		return true, err // closed: the worker's read reports it
	}
	return c.ready, c.rw.err
}

// peekState tells data (nil) from the peer's close (io.EOF) or an error,
// as readWaiter.check does.
func (p *lotPlace) peekState() error {
	if p.peek == nil {
		p.peek = p.doPeek
	}
	p.peekErr = nil
	if err := p.raw.Control(p.peek); err != nil {
		return err
	}
	return p.peekErr
}

func (p *lotPlace) doPeek(fd uintptr) {
	w := readWaiter{}
	if !w.check(fd) {
		return // nothing to read after all: let the worker's read decide
	}
	p.peekErr = w.err
}

// leaveLot takes s out of its lot; del also takes its socket out of the
// epoll set (else its close does).
func (s *fastSession) leaveLot(del bool) {
	p := &s.lot
	if p.l == nil {
		return
	}
	p.l.mu.Lock()
	delete(p.l.sessions, p.id)
	p.l.mu.Unlock()
	if del && p.added {
		epfd := p.l.epfd
		_ = p.raw.Control(func(fd uintptr) { _ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}
	p.l, p.added = nil, false
}
