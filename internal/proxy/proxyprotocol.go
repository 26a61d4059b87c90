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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The PROXY protocol (v1 text, v2 binary; github.com/pires/go-proxyproto
// parses it) on HTTP and HTTPS listeners. Every connection of such a
// listener enters through a proxyProtocolListener wrapped around its
// socket, the one place connections are accepted (it hands them to the
// fast path; without the fast path, net/http accepts from it); the PROXY
// header comes before anything else, the TLS ClientHello included.
//
// Design: the wrapper's own goroutine, the listener's only one, accepts
// from the socket and, for
// each connection, reads the port's ClientTraffic in the state in force
// (so a policy change applies to the next connection, without a rebind):
//
//   - no ProxyProtocol: the connection is handed on as it is;
//   - a peer outside TrustedCIDRs: closed at once, nothing read or
//     written (refused);
//   - a trusted peer: a goroutine of its own reads the header, within the
//     port's request header timeout, and hands the connection on only
//     once it parsed, with the header's source as its RemoteAddr (so
//     r.RemoteAddr, X-Forwarded-For and the access log name the client)
//     and the bytes read past the header replayed. A connection without a
//     header, with a malformed or truncated one, or whose header does not
//     arrive in time is closed. A LOCAL command (a health check of the
//     balancer), a v1 UNKNOWN, or a non-TCP source keeps the peer address.
//
// The header is parsed before the connection is handed on, rather than
// lazily on its first read, because net/http and the fast path take
// RemoteAddr before they read; and in a goroutine per connection, so a
// slow or silent peer never holds up the accepts of the others. At most
// maxProxyHeaderReads headers are read at once; past that, accepting
// waits for one to finish (the kernel's backlog queues the rest).
// Stream (TLS passthrough, TCP) listeners do not read PROXY headers.

// maxProxyHeaderReads bounds the PROXY headers read at once on one
// listener.
const maxProxyHeaderReads = 1024

// proxyProtocolPolicy is a compiled snapshot.ProxyProtocol.
type proxyProtocolPolicy struct {
	trusted []netip.Prefix
}

var errNoTrustedSources = errors.New("proxyProtocol: trustedCIDRs is empty")

// compileProxyProtocol compiles the sources that must send a PROXY
// header; nil when the listener reads none. An empty list would refuse
// every connection, and is an error.
func compileProxyProtocol(in *snapshot.ProxyProtocol) (*proxyProtocolPolicy, error) {
	if in == nil {
		return nil, nil
	}
	if len(in.TrustedCIDRs) == 0 {
		return nil, errNoTrustedSources
	}
	trusted, err := parsePrefixes(in.TrustedCIDRs)
	if err != nil {
		return nil, fmt.Errorf("proxyProtocol trustedCIDRs: %w", err)
	}
	return &proxyProtocolPolicy{trusted: trusted}, nil
}

// ppPolicy is the port's PROXY protocol policy (nil: none).
func (ct *clientTrafficPolicy) ppPolicy() *proxyProtocolPolicy {
	if ct == nil {
		return nil
	}
	return ct.proxyProtocol
}

// trusts reports whether a peer may, and must, send a PROXY header.
func (p *proxyProtocolPolicy) trusts(peer net.Addr) bool {
	tcp, ok := peer.(*net.TCPAddr)
	if !ok {
		return false
	}
	a, ok := netip.AddrFromSlice(tcp.IP)
	return ok && containsAddr(p.trusted, a.Unmap())
}

// accepted is one result of the socket's Accept.
type accepted struct {
	c   net.Conn
	err error
}

// proxyProtocolListener is the accept path of an HTTP or HTTPS listener
// (see above). Close closes the socket, and the connections whose header
// is still being read.
type proxyProtocolListener struct {
	d     *DataPlane
	port  int32
	inner net.Listener
	ch    chan accepted
	done  chan struct{}
	once  sync.Once
	sem   chan struct{}

	mu      sync.Mutex
	reading map[net.Conn]struct{}

	// sink, when set, is given every connection ready to be served, on
	// the goroutine that made it ready (loop: the accept loop's; else a
	// header read's), instead of Accept: the fast path takes connections
	// without a goroutine of its own waiting on Accept (at 1,000
	// listeners, a thousand goroutines fewer). stopped is called once,
	// when the accept loop ends with the socket's close.
	sink    func(c net.Conn, loop bool)
	stopped func()
}

// newProxyProtocolListener wraps a bound socket; start begins accepting.
func (d *DataPlane) newProxyProtocolListener(port int32, inner net.Listener) *proxyProtocolListener {
	return &proxyProtocolListener{
		d: d, port: port, inner: inner,
		ch: make(chan accepted), done: make(chan struct{}),
		sem: make(chan struct{}, maxProxyHeaderReads), reading: map[net.Conn]struct{}{},
	}
}

// start begins accepting: for Accept, or with sink and stopped set (see
// above), for the sink.
func (l *proxyProtocolListener) start(sink func(c net.Conn, loop bool), stopped func()) {
	l.sink, l.stopped = sink, stopped
	go l.acceptLoop()
}

// Accept returns the next connection ready to be served.
func (l *proxyProtocolListener) Accept() (net.Conn, error) {
	select {
	case a := <-l.ch:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close closes the socket and the connections whose header is being read.
func (l *proxyProtocolListener) Close() error {
	err := l.inner.Close()
	l.shut()
	return err
}

// Addr is the socket's address.
func (l *proxyProtocolListener) Addr() net.Addr { return l.inner.Addr() }

// shut ends Accept and closes the connections whose header is being read.
func (l *proxyProtocolListener) shut() {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		for c := range l.reading {
			_ = c.Close()
		}
		l.reading = nil
		l.mu.Unlock()
	})
}

// deliver hands a result to Accept, or a connection to the sink (loop:
// from the accept loop); false once the listener is closed.
func (l *proxyProtocolListener) deliver(a accepted, loop bool) bool {
	if l.sink != nil {
		select {
		case <-l.done:
			return false
		default:
		}
		l.sink(a.c, loop)
		return true
	}
	select {
	case l.ch <- a:
		return true
	case <-l.done:
		return false
	}
}

// acceptLoop accepts from the socket until it closes. Errors other than
// the socket's close go to Accept, whose caller backs off before it asks
// again; with a sink, the loop backs off itself.
func (l *proxyProtocolListener) acceptLoop() {
	if l.stopped != nil {
		defer l.stopped()
	}
	var backoff time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.shut()
				return
			}
			if l.sink != nil {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				l.d.log.Debug("accept failed", "port", l.port, "error", err, "retry", backoff)
				select {
				case <-time.After(backoff):
				case <-l.done:
					return
				}
				continue
			}
			if !l.deliver(accepted{err: err}, true) {
				l.shut()
				return
			}
			continue
		}
		backoff = 0
		ct := l.d.portTraffic(l.port)
		pp := ct.ppPolicy()
		switch {
		case pp == nil:
			if !l.deliver(accepted{c: c}, true) {
				_ = c.Close()
			}
		case !pp.trusts(c.RemoteAddr()):
			l.d.log.Debug("refused a connection from outside the PROXY protocol's trusted sources", "port", l.port, "peer", c.RemoteAddr().String())
			_ = c.Close()
		default:
			select {
			case l.sem <- struct{}{}:
			case <-l.done:
				_ = c.Close()
				return
			}
			if !l.track(c) {
				_ = c.Close()
				<-l.sem
				return
			}
			go l.readHeader(c, ct.requestHeaderTimeout(l.d.opts.HeaderTimeout))
		}
	}
}

// track records a connection whose header is being read; false once the
// listener is closed.
func (l *proxyProtocolListener) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reading == nil {
		return false
	}
	l.reading[c] = struct{}{}
	return true
}

func (l *proxyProtocolListener) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reading != nil {
		delete(l.reading, c)
	}
}

// readHeader reads a trusted peer's PROXY header and hands the connection
// on, or closes it.
func (l *proxyProtocolListener) readHeader(c net.Conn, timeout time.Duration) {
	defer func() { <-l.sem }()
	pc, err := readProxyHeader(c, timeout)
	l.untrack(c)
	if err != nil {
		l.d.log.Debug("closed a connection without a valid PROXY protocol header", "port", l.port, "peer", c.RemoteAddr().String(), "error", err)
		_ = c.Close()
		return
	}
	if !l.deliver(accepted{c: pc}, false) {
		_ = pc.Close()
	}
}

// proxyHeaderBuffer is the read buffer of a PROXY header: a v1 header
// (at most 107 bytes) must arrive in one read, as go-proxyproto requires;
// a longer v2 one is read on through it.
const proxyHeaderBuffer = 256

// readProxyHeader reads the PROXY header that begins c within timeout.
func readProxyHeader(c net.Conn, timeout time.Duration) (*proxiedConn, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("set the PROXY header deadline: %w", err)
	}
	br := bufio.NewReaderSize(c, proxyHeaderBuffer)
	h, err := proxyproto.Read(br)
	if err != nil {
		return nil, fmt.Errorf("read the PROXY header: %w", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear the PROXY header deadline: %w", err)
	}
	pc := &proxiedConn{Conn: c, remote: c.RemoteAddr()}
	if src, _, ok := h.TCPAddrs(); ok && h.Command.IsProxy() {
		pc.remote = src
	}
	if n := br.Buffered(); n > 0 {
		rest, _ := br.Peek(n)
		pc.rest = append([]byte(nil), rest...)
	}
	return pc, nil
}

// proxiedConn is a connection past its PROXY header: RemoteAddr is the
// header's source, and the bytes read past the header come first.
type proxiedConn struct {
	net.Conn
	remote net.Addr
	rest   []byte
}

// Read replays the bytes buffered past the header, then reads on.
func (c *proxiedConn) Read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		if len(c.rest) == 0 {
			c.rest = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}

// RemoteAddr is the client the PROXY header named.
func (c *proxiedConn) RemoteAddr() net.Addr { return c.remote }

// CloseWrite half-closes the connection, as net/http does after refusing
// a request body.
func (c *proxiedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
