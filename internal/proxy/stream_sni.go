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

// Reading the ClientHello of a TLS listener's connection, without a TLS
// parser of our own: crypto/tls parses it. peekClientHello runs tls.Server
// over a connection that records every byte it reads and discards every
// byte written, and GetConfigForClient, which crypto/tls calls with the
// parsed ClientHello, keeps what it needs and ends the handshake with a
// sentinel error (the alert crypto/tls then sends is discarded). What was
// recorded, exactly the bytes read from the socket, is replayed: to the
// backend as they came (passthrough), or into a second tls.Server over a
// connection that yields them before the socket (terminate,
// terminateTLS).

import (
	"crypto/tls"
	"errors"
	"net"
	"time"
)

// maxClientHelloBytes bounds what the peek reads before it has a
// ClientHello (Envoy's tls_inspector bounds it the same): a ClientHello
// with post-quantum key shares is a few KiB, and crypto/tls accepts
// handshake messages up to 64 KiB.
const maxClientHelloBytes = 64 << 10

var (
	// errHelloSeen ends the peek's handshake once the ClientHello is read.
	errHelloSeen = errors.New("proxy: ClientHello read")
	// errHelloTooLarge is the peek's read beyond its cap.
	errHelloTooLarge = errors.New("proxy: no ClientHello within the peek's size bound")
)

// clientHello is what routing needs of a ClientHello.
type clientHello struct {
	serverName string
}

// helloRecorder is the connection the peek's tls.Server reads through: it
// records what it reads, up to limit bytes, and swallows writes.
type helloRecorder struct {
	net.Conn
	limit int
	buf   []byte
}

func (r *helloRecorder) Read(p []byte) (int, error) {
	room := r.limit - len(r.buf)
	if room <= 0 {
		return 0, errHelloTooLarge
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := r.Conn.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// Write discards what crypto/tls answers (an alert after errHelloSeen).
func (r *helloRecorder) Write(p []byte) (int, error) { return len(p), nil }

// Close leaves the connection open: it belongs to the caller.
func (r *helloRecorder) Close() error { return nil }

// SetDeadline and SetWriteDeadline leave the caller's deadlines alone.
func (r *helloRecorder) SetDeadline(time.Time) error      { return nil }
func (r *helloRecorder) SetWriteDeadline(time.Time) error { return nil }

// peekClientHello reads c until crypto/tls has parsed a ClientHello, at
// most limit bytes, within c's read deadline. It returns the ClientHello
// (nil when there was none: not TLS, too large, the deadline, EOF) and
// every byte it read from c, which is always a prefix of what c carried.
func peekClientHello(c net.Conn, limit int) (*clientHello, []byte, error) {
	rec := &helloRecorder{Conn: c, limit: limit}
	var hello *clientHello
	srv := tls.Server(rec, &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = &clientHello{serverName: chi.ServerName}
			return nil, errHelloSeen
		},
	})
	err := srv.Handshake()
	if hello != nil {
		return hello, rec.buf, nil
	}
	if err == nil {
		err = errors.New("proxy: handshake ended without a ClientHello")
	}
	return nil, rec.buf, err
}

// replayConn yields the bytes the peek recorded, then reads the
// connection they came from.
type replayConn struct {
	net.Conn
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// terminateTLS completes the handshake of a connection whose ClientHello
// the peek read (recorded), with cfg, within raw's deadline.
func terminateTLS(raw net.Conn, recorded []byte, cfg *tls.Config) (*tls.Conn, error) {
	tc := tls.Server(&replayConn{Conn: raw, pending: recorded}, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, nil
}
