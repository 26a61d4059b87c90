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
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// listenerKind is what serves a bound socket: net/http and the fast path
// (HTTP), net/http over TLS (HTTPS), the stream accept loop (TLS, TCP;
// stream_tcp.go) or the datagram loop (UDP; stream_udp.go).
type listenerKind uint8

// The listener kinds, one per snapshot protocol.
const (
	kindHTTP listenerKind = iota
	kindHTTPS
	kindTLS
	kindTCP
	kindUDP
)

func kindOf(p snapshot.Protocol) listenerKind {
	switch p {
	case snapshot.ProtocolHTTPS:
		return kindHTTPS
	case snapshot.ProtocolTLS:
		return kindTLS
	case snapshot.ProtocolTCP:
		return kindTCP
	case snapshot.ProtocolUDP:
		return kindUDP
	}
	return kindHTTP
}

func (k listenerKind) String() string {
	return [...]string{"HTTP", "HTTPS", "TLS", "TCP", "UDP"}[k]
}

// listenerAddr is one bound socket: a port, over TCP or UDP. A port has at
// most one TCP socket (of any TCP kind) and one UDP socket, as
// snapshot.ListenerKey says.
type listenerAddr struct {
	port int32
	udp  bool
}

func addrOf(l *snapshot.Listener) listenerAddr {
	return listenerAddr{port: l.Port, udp: l.Protocol == snapshot.ProtocolUDP}
}

// String is the address as snapshot.ListenerKey spells it: "443", "53/udp".
func (a listenerAddr) String() string {
	if a.udp {
		return strconv.Itoa(int(a.port)) + "/udp"
	}
	return strconv.Itoa(int(a.port))
}

// bindListeners binds every listener st needs that is not bound with the
// right kind yet. Nothing is published or unbound here, so a failure
// leaves every old listener serving. Caller holds d.mu; the caller serves
// what it returns and drains the listeners they replace.
//
// A TCP port whose kind changes (HTTP, HTTPS, TLS, TCP: say HTTP to
// HTTPS, or HTTP to TCP) cannot be bound twice. SO_REUSEPORT would allow
// it, but would also let another process, or a second proxy on a host
// network, share the port silently. Instead such ports are switched last,
// once every new socket is bound: the old listener stops accepting and the
// new one binds the freed port at once (a connection arriving in between
// is refused; a client of the old protocol fails after the switch
// anyway). If a switch fails, the ports switched so far get a listener of
// their old kind back. A UDP socket only ever has the UDP kind: it is
// bound or unbound, never switched, and it shares its port number with
// the TCP socket of that port without either noticing.
func (d *DataPlane) bindListeners(st *state) ([]*boundListener, error) {
	var fresh, switching []listenerAddr
	for _, addr := range st.addrs() {
		if bl := d.bound[addr]; bl == nil {
			fresh = append(fresh, addr)
		} else if bl.kind != st.listeners[addr] {
			switching = append(switching, addr)
		}
	}
	var opened []*boundListener
	closeOpened := func() {
		for _, bl := range opened {
			bl.closeSocket()
		}
	}
	for _, addr := range fresh {
		bl, err := d.bindListener(addr, st.listeners[addr])
		if err != nil {
			closeOpened()
			return nil, err
		}
		opened = append(opened, bl)
	}
	for i, addr := range switching {
		d.bound[addr].closeSocket()
		bl, err := d.bindListener(addr, st.listeners[addr])
		if err != nil {
			closeOpened() // frees the ports switched so far for their restore
			return nil, errors.Join(err, d.restoreListeners(switching[:i+1]))
		}
		opened = append(opened, bl)
	}
	return opened, nil
}

// restoreListeners gives ports whose listener was closed for a kind
// switch that failed a new listener of their old kind, serving the state
// in force, and drains the closed one's connections. Caller holds d.mu.
func (d *DataPlane) restoreListeners(addrs []listenerAddr) error {
	var errs []error
	for _, addr := range addrs {
		old := d.bound[addr]
		d.unbind(old)
		bl, err := d.bindListener(addr, old.kind)
		if err != nil {
			d.log.Error("lost a listener restoring it after a failed protocol switch", "port", addr.String(), "error", err)
			errs = append(errs, fmt.Errorf("restore: %w", err))
			continue
		}
		d.bound[addr] = bl
		d.serveListener(bl)
	}
	d.publishPorts()
	return errors.Join(errs...)
}

// bindListener binds one listener socket; serveListener serves it.
func (d *DataPlane) bindListener(addr listenerAddr, kind listenerKind) (*boundListener, error) {
	hostport := net.JoinHostPort(d.opts.BindHost, strconv.Itoa(int(addr.port)))
	bl := &boundListener{addr: addr, port: addr.port, kind: kind, done: make(chan struct{})}
	var err error
	if addr.udp {
		bl.pc, err = d.opts.listenPacket("udp", hostport)
	} else {
		// The fast path turns TCP keep-alive on where a connection may
		// live long (tcpkeepalive.go); elsewhere every accepted
		// connection gets it.
		fast := (kind == kindHTTP || kind == kindHTTPS) && !d.opts.DisableFastPath
		bl.ln, err = d.opts.listen("tcp", hostport, !fast)
	}
	if err != nil {
		return nil, fmt.Errorf("bind listener port %s: %w", addr, err)
	}
	return bl, nil
}

// publishPorts stores and returns the sorted bound port numbers, each
// once even when both its TCP and its UDP socket are bound. Caller holds
// d.mu.
func (d *DataPlane) publishPorts() []int32 {
	ports := make([]int32, 0, len(d.bound))
	for a := range d.bound {
		ports = append(ports, a.port)
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)
	d.ports.Store(&ports)
	return ports
}

type boundListener struct {
	addr listenerAddr
	port int32
	kind listenerKind
	// ln is the socket of the TCP kinds, pc the one of UDP.
	ln net.Listener
	pc net.PacketConn
	// srv and fast serve HTTP and HTTPS; stream serves TLS and TCP; udp
	// serves UDP.
	srv    *httpServers
	fast   *fastServer
	stream *streamServer
	udp    *udpServer
	done   chan struct{}
}

// closeSocket stops accepting (or receiving) at once.
func (bl *boundListener) closeSocket() {
	if bl.ln != nil {
		_ = bl.ln.Close()
	}
	if bl.pc != nil {
		_ = bl.pc.Close()
	}
}

// drain stops a listener gracefully: net/http's connections and the fast
// path's, or the stream connections, each bounded by ctx; UDP sessions
// end at once.
func (bl *boundListener) drain(ctx context.Context) error {
	switch {
	case bl.stream != nil:
		return bl.stream.drain(ctx)
	case bl.udp != nil:
		bl.udp.close()
		return nil
	}
	var fastErr error
	var wg sync.WaitGroup
	if bl.fast != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fastErr = bl.fast.drain(ctx) }()
	}
	var err error
	if bl.srv != nil {
		if err = bl.srv.Shutdown(ctx); err != nil {
			_ = bl.srv.Close()
		}
	}
	wg.Wait()
	return errors.Join(err, fastErr)
}

func (d *DataPlane) serveListener(bl *boundListener) {
	switch bl.kind {
	case kindTLS, kindTCP:
		bl.stream = newStreamServer(d, bl.addr, bl.kind, bl.ln)
		go func() { defer close(bl.done); bl.stream.acceptLoop() }()
		return
	case kindUDP:
		bl.udp = newUDPServer(d, bl.addr, bl.pc)
		go func() { defer close(bl.done); bl.udp.readLoop() }()
		return
	}
	isTLS := bl.kind == kindHTTPS
	// Connections enter through the PROXY protocol's accept path, and
	// net/http serves each with the ClientTraffic settings in force when
	// it got it (clienttraffic_servers.go).
	ln := d.newProxyProtocolListener(bl.port, bl.ln)
	var tlsConfig *tls.Config
	if isTLS {
		tlsConfig = d.listenerTLSConfig(bl.port)
	}
	fast := !d.opts.DisableFastPath
	var src net.Listener = ln
	if fast {
		bl.fast = newFastServer(d, bl.port, ln, tlsConfig)
		src = nil // the fast path hands connections over (handOver)
	}
	// net/http runs the TLS handshake only when the fast path does not.
	srv := d.newHTTPServers(bl.port, ln.Addr(), src, isTLS && !fast, func(cs serverSettings) *http.Server {
		var p http.Protocols
		p.SetHTTP1(true)
		if isTLS {
			p.SetHTTP2(true)
		} else {
			p.SetUnencryptedHTTP2(true)
		}
		srv := &http.Server{
			Handler:           &portHandler{d: d, port: bl.port, tls: isTLS},
			Protocols:         &p,
			ReadHeaderTimeout: cs.headerTimeout,
			IdleTimeout:       cs.idleTimeout,
			HTTP2:             cs.http2Config(),
			ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
			ConnState:         d.connState,
		}
		// With the fast path in front, the config only tells Serve to set
		// HTTP/2 up for the *tls.Conn handed to it with ALPN h2. A clone:
		// that set-up writes to the server's config, which the fast path's
		// handshakes must not see change under them.
		if tlsConfig != nil {
			srv.TLSConfig = tlsConfig.Clone()
		}
		return srv
	})
	bl.srv = srv
	if fast {
		// One goroutine a listener: the socket's accept loop hands each
		// connection to the fast path, which hands what it does not serve
		// to net/http.
		bl.fast.h2c = srv
		bl.fast.handoff = srv.handOver
		ln.start(bl.fast.admit, func() {
			bl.fast.acceptStopped()
			close(bl.done)
		})
		return
	}
	ln.start(nil, nil)
	go func() {
		defer close(bl.done)
		if err := srv.serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("listener stopped", "port", bl.port, "error", err)
		}
	}()
}

// listenerTLSConfig is an HTTPS listener's TLS configuration: the
// certificate by SNI and, on a port that validates client certificates,
// that port's config from the state in force.
func (d *DataPlane) listenerTLSConfig(port int32) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return d.certificate(port, hello.ServerName)
		},
		// A port that validates client certificates has its own config
		// in the state in force: its CA pool swaps with the snapshot
		// (clientauth.go).
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			return d.clientValidationConfig(port, hello.ServerName), nil
		},
	}
}

func (d *DataPlane) connState(_ net.Conn, cs http.ConnState) {
	switch cs {
	case http.StateNew:
		d.m.activeConns.Inc()
	case http.StateClosed, http.StateHijacked:
		d.m.activeConns.Dec()
	}
}

// unbind stops accepting on a listener at once and drains its connections
// in the background, bounded by DrainTimeout. Caller holds d.mu.
func (d *DataPlane) unbind(bl *boundListener) {
	delete(d.bound, bl.addr)
	bl.closeSocket()
	d.drains.Add(1)
	go func() {
		defer d.drains.Done()
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.DrainTimeout)
		defer cancel()
		_ = bl.drain(ctx)
	}()
}
