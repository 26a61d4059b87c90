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
	"io"
	"net"
	"net/http"
	"sync"
)

// HTTP/2 with prior knowledge (h2c) straight to net/http's HTTP/2 server.
//
// Given a connection, http.Server reads the client preface through an
// HTTP/1 connection of its own and runs its HTTP/2 server inside it: that
// connection's 4 KiB reader and 4 KiB writer then stay allocated, unused,
// for as long as the HTTP/2 connection lives. When the fast path has read
// the whole preface it gives the connection to the HTTP/2 server itself,
// through the entry net/http registers for this hand-over
// (Server.TLSNextProto["unencrypted_http2"]), with the same server,
// settings and handler; anything else (a preface still in flight) goes to
// net/http as before, which decides.

// h2cPreface is HTTP/2's client connection preface (RFC 9113, section 3.4).
const h2cPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// nextProtoUnencryptedHTTP2 is the TLSNextProto key under which net/http's
// HTTP/2 server (and golang.org/x/net/http2's ConfigureServer) takes an
// unencrypted connection whose preface has been read.
const nextProtoUnencryptedHTTP2 = "unencrypted_http2"

// hasH2CPreface reports whether br holds the whole client preface.
func hasH2CPreface(br *bufio.Reader) bool {
	if br.Buffered() < len(h2cPreface) {
		return false
	}
	b, err := br.Peek(len(h2cPreface))
	return err == nil && string(b) == h2cPreface
}

// directH2C returns what serves a cleartext connection whose preface has
// been read with the HTTP/2 server of the settings in force, or nil when
// there is none (the listener is closing, or the server did not set
// HTTP/2 up): the connection is then given to net/http as it is.
func (hs *httpServers) directH2C() func(net.Conn) {
	ss := hs.server(hs.d.serverSettings(hs.port))
	if ss == nil {
		return nil
	}
	select {
	case <-ss.ln.accepting: // Serve has set HTTP/2 up: TLSNextProto is written
	case <-ss.stopped:
		return nil
	}
	serve := ss.srv.TLSNextProto[nextProtoUnencryptedHTTP2]
	if serve == nil {
		return nil
	}
	return func(c net.Conn) { ss.serveH2C(serve, c) }
}

// serveH2C serves c on a goroutine of its own with srv's HTTP/2 server,
// and counts and reports it as srv counts the connections it serves.
func (ss *settingsServer) serveH2C(serve func(*http.Server, *tls.Conn, http.Handler), c net.Conn) {
	// The HTTP/2 server's writes are gathered (coalesce.go), its reads
	// go through a pooled buffer (pooledread.go).
	cc := newCoalescingConn(newPooledReadConn(c))
	if !ss.h2c.add(cc) {
		_ = c.Close() // the listener is shutting down
		return
	}
	ss.conns.Add(1)
	ss.srv.ConnState(c, http.StateNew)
	go func() {
		defer ss.h2c.done(cc)
		// A *tls.Conn is the hand-over's only type; net/http's HTTP/2
		// server unwraps the cleartext connection from it.
		serve(ss.srv, tls.Client(unencryptedConn{cc}, nil), h2cHandler{srv: ss.srv})
		_ = cc.Close()
		ss.srv.ConnState(c, http.StateClosed)
	}()
}

// unencryptedConn carries a cleartext connection through the *tls.Conn of
// the hand-over.
type unencryptedConn struct{ net.Conn }

// UnencryptedNetConn is what net/http's HTTP/2 server serves.
func (c unencryptedConn) UnencryptedNetConn() net.Conn { return c.Conn }

// h2cHandler is what http.Server runs for each HTTP/2 request it serves
// on its own: its handler, and `OPTIONS *` answered as net/http answers it.
type h2cHandler struct{ srv *http.Server }

func (h h2cHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if !h.srv.DisableGeneralOptionsHandler && r.RequestURI == "*" && r.Method == http.MethodOptions {
		w.Header().Set("Content-Length", "0")
		if r.ContentLength != 0 {
			_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 4<<10))
		}
		return
	}
	h.srv.Handler.ServeHTTP(w, r)
}

// h2cConns are the connections a server's HTTP/2 server serves directly:
// http.Server's Shutdown sends them GOAWAY but neither waits for them nor,
// in Close, closes them.
type h2cConns struct {
	mu     sync.Mutex
	conns  map[*coalescingConn]struct{}
	closed bool
	empty  chan struct{} // closed when closed is set and conns is empty
}

// add records c; false once the server shuts down.
func (h *h2cConns) add(c *coalescingConn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if h.conns == nil {
		h.conns = map[*coalescingConn]struct{}{}
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *h2cConns) done(c *coalescingConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	h.signal()
}

// signal closes empty once the server shuts down with no connection left.
// Caller holds h.mu.
func (h *h2cConns) signal() {
	if h.closed && len(h.conns) == 0 && h.empty != nil {
		select {
		case <-h.empty:
		default:
			close(h.empty)
		}
	}
}

// wait refuses new connections and waits until those served end, or ctx
// does.
func (h *h2cConns) wait(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	if h.empty == nil {
		h.empty = make(chan struct{})
	}
	empty := h.empty
	h.signal()
	h.mu.Unlock()
	select {
	case <-empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeAll refuses new connections and closes those served.
func (h *h2cConns) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.conns {
		_ = c.Conn.Close() // at once: what waits to be written is dropped
	}
}
