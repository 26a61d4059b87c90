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
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// serverSettings are the net/http server settings a port's ClientTraffic
// sets: its request header and keep-alive timeouts and its HTTP/2
// settings (zero fields: net/http's defaults).
type serverSettings struct {
	headerTimeout time.Duration
	idleTimeout   time.Duration
	maxStreams    int32
	streamWindow  int32
	connWindow    int32
}

// serverSettings are the settings of the port's ClientTraffic in force.
func (d *DataPlane) serverSettings(port int32) serverSettings {
	ct := d.portTraffic(port)
	s := serverSettings{headerTimeout: ct.requestHeaderTimeout(d.opts.HeaderTimeout), idleTimeout: ct.keepAliveTimeout()}
	if ct != nil {
		s.maxStreams = ct.http2.MaxConcurrentStreams
		s.streamWindow = ct.http2.InitialStreamWindowSize
		s.connWindow = ct.http2.InitialConnectionWindowSize
	}
	return s
}

// http2Config is the server's HTTP/2 configuration. The windows are what
// the server advertises for data it receives: SETTINGS_INITIAL_WINDOW_SIZE
// per stream, and the connection's window (zero: net/http's defaults).
//
// Response headers are encoded without HPACK's dynamic table (a limit of
// one byte holds no field), as nginx encodes them: a table filled with a
// response's fields was about a tenth of the heap an idle HTTP/2
// connection holds, and looking every field up in it and adding it was
// work at each response. Request headers are decoded with the default
// table, so clients compress them as they would anywhere.
func (s serverSettings) http2Config() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxConcurrentStreams:          int(s.maxStreams),
		MaxReceiveBufferPerStream:     int(s.streamWindow),
		MaxReceiveBufferPerConnection: int(s.connWindow),
		MaxEncoderHeaderTableSize:     responseHeaderTableSize,
	}
}

// responseHeaderTableSize is the limit of the HPACK table responses are
// encoded with: the least net/http takes, too small for any field.
const responseHeaderTableSize = 1

// httpServers is the net/http side of one HTTP or HTTPS listener: one
// http.Server per serverSettings in use. http.Server reads its timeouts
// and HTTP/2 settings for the life of its connections and cannot change
// them safely while it serves, so instead each connection, as it is
// given to net/http (accepted, or handed off by the fast path), goes to
// the server built with the settings in force then; it keeps them until
// it closes. A server that no longer matches the settings in force and
// has no connections left is closed when the settings change again.
type httpServers struct {
	d *DataPlane
	// tls: net/http runs the TLS handshake (ServeTLS).
	tls   bool
	port  int32
	build func(serverSettings) *http.Server

	// addr is the listener's address (its servers' listeners').
	addr net.Addr

	mu sync.Mutex
	// src is what serve accepts from; nil when the fast path hands
	// connections over itself (handOver).
	src     net.Listener
	servers map[serverSettings]*settingsServer
	current serverSettings
	closed  bool
}

// settingsServer is one http.Server of a listener, fed by its own
// listener of handed-over connections.
type settingsServer struct {
	srv *http.Server
	ln  *handoffListener
	// conns counts the connections given to srv and not yet closed or
	// hijacked.
	conns atomic.Int64
	// stopped closes when srv's Serve returns.
	stopped chan struct{}
	// h2c: the HTTP/2 connections srv's HTTP/2 server serves without its
	// HTTP/1 connection (h2cdirect.go), which srv does not track.
	h2c h2cConns
}

// newHTTPServers builds a listener's net/http side, fed by src (nil: by
// the fast path's handOver); build
// makes the server of one set of settings (listeners.go). handshake:
// net/http runs the TLS handshake of the connections it is given (else
// they are cleartext, or TLS connections the fast path shook hands on).
// Its servers can be had (server) at once, before serve runs: the fast
// path hands h2c connections to them directly.
func (d *DataPlane) newHTTPServers(port int32, addr net.Addr, src net.Listener, handshake bool, build func(serverSettings) *http.Server) *httpServers {
	return &httpServers{d: d, tls: handshake, port: port, addr: addr, src: src, build: build, servers: map[serverSettings]*settingsServer{}}
}

// handOver gives c to the server of the settings in force, as serve does
// with what it accepts, for the fast path, which has no listener between
// it and these servers: net.ErrClosed, c not taken, once they are closed.
func (hs *httpServers) handOver(c net.Conn) error {
	if hs.isClosed() {
		return net.ErrClosed
	}
	hs.give(c)
	return nil
}

// serve gives every connection accepted from src to the server of the
// settings in force, until src or the servers close. It returns
// http.ErrServerClosed after a close.
func (hs *httpServers) serve() error {
	hs.mu.Lock()
	src, closed := hs.src, hs.closed
	hs.mu.Unlock()
	if closed {
		_ = src.Close()
		return http.ErrServerClosed
	}
	var backoff time.Duration
	for {
		c, err := src.Accept()
		if err != nil {
			if hs.isClosed() || errors.Is(err, net.ErrClosed) {
				return http.ErrServerClosed
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			hs.d.log.Debug("accept failed", "port", hs.port, "error", err, "retry", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		hs.give(c)
	}
}

func (hs *httpServers) isClosed() bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.closed
}

// give hands one connection to its server.
func (hs *httpServers) give(c net.Conn) {
	ss := hs.server(hs.d.serverSettings(hs.port))
	if ss == nil {
		_ = c.Close()
		return
	}
	ss.conns.Add(1)
	if ss.ln.give(c) != nil {
		ss.conns.Add(-1)
		_ = c.Close()
	}
}

// server returns the server of settings s, started on first use (nil
// once closed). When s is not the settings last used, the servers of
// other settings without connections are closed.
func (hs *httpServers) server(s serverSettings) *settingsServer {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return nil
	}
	if s != hs.current {
		for k, old := range hs.servers {
			if k != s && old.conns.Load() == 0 {
				delete(hs.servers, k)
				_ = old.ln.Close() // its Serve returns; it has nothing to drain
			}
		}
		hs.current = s
	}
	if ss := hs.servers[s]; ss != nil {
		return ss
	}
	ss := &settingsServer{srv: hs.build(s), ln: newHandoffListener(hs.addr), stopped: make(chan struct{})}
	hook := ss.srv.ConnState
	ss.srv.ConnState = func(c net.Conn, cs http.ConnState) {
		if hook != nil {
			hook(c, cs)
		}
		if cs == http.StateClosed || cs == http.StateHijacked {
			ss.conns.Add(-1)
		}
	}
	hs.servers[s] = ss
	go hs.run(ss)
	return ss
}

// run serves one server's connections until its listener closes.
func (hs *httpServers) run(ss *settingsServer) {
	defer close(ss.stopped)
	var err error
	if hs.tls {
		err = ss.srv.ServeTLS(ss.ln, "", "")
	} else {
		err = ss.srv.Serve(ss.ln)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		hs.d.log.Error("listener stopped", "port", hs.port, "error", err)
	}
}

// stop marks the servers closed, closes the source and returns the
// servers.
func (hs *httpServers) stop() []*settingsServer {
	hs.mu.Lock()
	hs.closed = true
	src := hs.src
	out := make([]*settingsServer, 0, len(hs.servers))
	for _, ss := range hs.servers {
		out = append(out, ss)
	}
	hs.mu.Unlock()
	if src != nil {
		_ = src.Close()
	}
	return out
}

// Shutdown shuts every server down gracefully (http.Server.Shutdown),
// bounded by ctx.
func (hs *httpServers) Shutdown(ctx context.Context) error {
	servers := hs.stop()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, ss := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := ss.srv.Shutdown(ctx)
			if err != nil && !errors.Is(err, net.ErrClosed) {
				errs[i] = err
			}
			// Shutdown has sent GOAWAY on every HTTP/2 connection; those
			// it does not track are waited for here.
			if err := ss.h2c.wait(ctx); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes every server and its connections at once.
func (hs *httpServers) Close() error {
	var errs []error
	for _, ss := range hs.stop() {
		if err := ss.srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		ss.h2c.closeAll()
	}
	return errors.Join(errs...)
}
