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
	"crypto/tls"
	"errors"
	"io"
	"net"
	"time"
)

// On an HTTPS listener the fast path runs the TLS handshake itself, with
// the listener's one tls.Config (the one net/http would use), and then:
//
//   - ALPN "h2": the *tls.Conn goes to net/http untouched, whose
//     handshake is then a no-op and whose HTTP/2 server takes it;
//   - HTTP/1.1 (or no ALPN): the fast path serves its requests over the
//     *tls.Conn as it serves cleartext ones, with Request.TLS set; a
//     request it does not serve is handed to net/http with its unread
//     bytes (tlsPeekedConn), whose ConnectionState gives net/http's
//     requests their Request.TLS.
//
// A TLS connection never waits in an idle lot: tls.Conn may hold
// decrypted or undecrypted bytes no epoll event announces, so its waits
// read through it (fastSource.readOne) on a goroutine, as net/http's do.

// handshake runs the TLS handshake of s's accepted connection on a
// goroutine of its own, bounded as net/http bounds it, then waits for the
// first request (or hands an HTTP/2 connection to net/http).
func (s *fastSession) handshake() {
	fs, raw := s.fs, s.fc.nc
	// Writes go to the socket as they come unless ALPN chooses HTTP/2,
	// whose are gathered (coalesce.go).
	cc := newPassingConn(raw)
	tc := tls.Server(cc, fs.tlsConfig)
	// net/http's bound: its ReadHeaderTimeout, for reads and writes.
	if d := fs.headerTimeout(); d > 0 {
		_ = tc.SetDeadline(time.Now().Add(d))
	}
	// After the deadline: a drain that began before it set its own.
	if fs.closing.Load() {
		s.end()
		return
	}
	if err := tc.Handshake(); err != nil {
		reason := err.Error()
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && recordHeaderLooksLikeHTTP(re.RecordHeader) {
			// As net/http: a client that speaks HTTP to an HTTPS port is
			// told so in plain text.
			_, _ = io.WriteString(re.Conn, plainHTTPToHTTPS)
			reason = "client sent an HTTP request to an HTTPS server"
		}
		fs.d.log.Debug("TLS handshake failed", "port", fs.port, "remote", s.fc.remote, "error", reason)
		s.end()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	cs := tc.ConnectionState()
	fs.mu.Lock()
	s.fc.nc = tc // a drain's close now ends the TLS session as net/http's would
	fs.mu.Unlock()
	if cs.NegotiatedProtocol == "h2" {
		cc.gather()
		s.keepAlive()
		s.handedOff = fs.handoff(tc) == nil
		s.end()
		return
	}
	s.tlsState = &cs
	s.src.init(tc)
	_ = tc.SetReadDeadline(time.Now().Add(fs.idleTimeout()))
	if fs.closing.Load() {
		s.end()
		return
	}
	s.wake(s.src.awaitReadable())
}

// plainHTTPToHTTPS is net/http's answer to a plain HTTP request on a TLS
// port, written on the raw connection before it closes.
const plainHTTPToHTTPS = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"

// recordHeaderLooksLikeHTTP reports whether a TLS record header is the
// start of a plain HTTP request, by net/http's test.
func recordHeaderLooksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

// tlsPeekedConn is a TLS connection handed to net/http after the fast
// path read from it: net/http sets Request.TLS from ConnectionState for a
// connection that is not a *tls.Conn.
type tlsPeekedConn struct {
	*peekedConn
	state *tls.ConnectionState
}

func (c tlsPeekedConn) ConnectionState() tls.ConnectionState { return *c.state }

// handedOffConn is what handOff gives net/http for s's connection.
func (s *fastSession) handedOffConn(pc *peekedConn) net.Conn {
	if s.tlsState != nil {
		return tlsPeekedConn{peekedConn: pc, state: s.tlsState}
	}
	return pc
}
