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
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// streamBodyMaxDigits bounds the Content-Length the fast path serves with
// a streamed body (parseSimpleContentLength): twelve digits, well past
// any upload and far from overflow. Larger ones are net/http's to judge.
const streamBodyMaxDigits = 12

// spliceStep is how much of a streamed body one splice moves: the client
// body timeout bounds each step, as nginx's client_body_timeout bounds
// the wait between two reads.
const spliceStep = 1 << 20

// errBodyAbandoned ends a read of a streamed body after its request was
// over: the connection's next bytes are the next request's.
var errBodyAbandoned = errors.New("request body read after the request was over")

// streamedBody is the body of a request the fast path serves whose
// Content-Length is over leanBodyMaxBytes. It is not read ahead: it comes
// from the client's connection as the upstream takes it, as nginx's
// proxy_request_buffering off streams it. The lean client relays it in
// the kernel when both connections are plain TCP (sendTo); anything else
// (http.Transport, a retry's replay, an authorization service's
// look at the body) reads it as a stream, each read bounded by the
// request body timeout as timedBody bounds net/http's.
//
// Only what is left of the Content-Length is ever read: the bytes after
// it are the next request's. Once the request is over (finish) nothing
// reads the connection for it, even a transport that still holds it.
type streamedBody struct {
	// mu orders the reads with finish: http.Transport may still read
	// after its round trip returned (an answer that came first).
	mu sync.Mutex
	br *bufio.Reader
	nc net.Conn
	// raw is the client's TCP connection when nothing sits between it
	// and br (no TLS, no byte a readability wait took), for splice(2).
	raw     *net.TCPConn
	left    int64
	timeout time.Duration
	// err is why the body ended early (errBodyTimeout, io.ErrUnexpectedEOF
	// or the connection's error): bodyFailed reports it as the client's
	// fault.
	err    error
	failed atomic.Pointer[error] // err, for failure
	over   bool
	// broken is set when a splice failed on the upstream's side: bytes
	// read from the client were lost, so its framing is.
	broken bool
	// started is set once any of the body left the client's reader;
	// spliced counts what moved in the kernel.
	started bool
	spliced int64
	// prefix is what a reader put back (unread), ahead of the rest; left
	// counts it.
	prefix []byte
	// sent is called, on the goroutine that serves the request, once the
	// lean client has sent the whole body: the client's connection may
	// then be watched (serveStreamed).
	sent func()
	// expect, when the client sent "Expect: 100-continue", is the 100 it
	// waits for before it sends the body: the first take of the body
	// sends it (expectcontinue.go).
	expect *continueOwed
}

func newStreamedBody(nc net.Conn, raw *net.TCPConn, br *bufio.Reader, n int64, timeout time.Duration) *streamedBody {
	if timeout <= 0 {
		_ = nc.SetReadDeadline(time.Time{}) // the head's deadline is over
	}
	return &streamedBody{br: br, nc: nc, raw: raw, left: n, timeout: timeout}
}

func (b *streamedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read(p)
}

func (b *streamedBody) read(p []byte) (int, error) {
	switch {
	case b.err != nil:
		return 0, b.err
	case b.left == 0:
		return 0, io.EOF
	case b.over:
		return 0, errBodyAbandoned
	case len(p) == 0:
		return 0, nil
	}
	if len(b.prefix) > 0 {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		b.left -= int64(n)
		return n, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	b.expect.send()
	if b.timeout > 0 && b.br.Buffered() == 0 {
		_ = b.nc.SetReadDeadline(time.Now().Add(b.timeout))
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if err != nil && b.left > 0 {
		b.fail(err)
		return n, b.err
	}
	return n, nil
}

// fail records why the body ended early (bodyReadError).
func (b *streamedBody) fail(err error) {
	b.err = bodyReadError(err)
	e := b.err
	b.failed.Store(&e)
}

func (b *streamedBody) Close() error { return nil }

// failure is why the body ended early, nil when it did not; it does
// not wait for a read in progress.
func (b *streamedBody) failure() error {
	if p := b.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// buffered is the part of the body br holds already, which the lean
// client writes with the head (consumed once the head is sent).
func (b *streamedBody) buffered() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil || b.over {
		return nil
	}
	if len(b.prefix) > 0 {
		return b.prefix
	}
	p, _ := b.br.Peek(int(min(int64(b.br.Buffered()), b.left)))
	return p
}

// unread puts p, read from the body, back in front of the rest
// (restoreBodyPrefix): it is read, or sent, first.
func (b *streamedBody) unread(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prefix = append(p[:len(p):len(p)], b.prefix...)
	b.left += int64(len(p))
}

// length is the body's Content-Length, before any of it is sent.
func (b *streamedBody) length() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}

// untouched reports whether none of the body left the client's
// connection: a send that failed then can go to another connection.
func (b *streamedBody) untouched() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.started
}

// splicedBytes is how much of the body moved in the kernel.
func (b *streamedBody) splicedBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spliced
}

func (b *streamedBody) consumed(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.prefix) > 0 {
		// buffered handed out the prefix, whole.
		b.prefix = b.prefix[n:]
		b.left -= int64(n)
		b.started = true
		return
	}
	if n > 0 {
		b.expect.send()
	}
	_, _ = b.br.Discard(n)
	b.left -= int64(n)
	b.started = b.started || n > 0
}

// sendTo writes the rest of the body to the upstream's connection dst.
// Between two plain TCP connections it moves in the kernel
// (net.TCPConn.ReadFrom: splice(2) on Linux), spliceStep bytes at a time
// under the body timeout; otherwise it is copied. An error is the
// client's (failure reports it) or the upstream's.
func (b *streamedBody) sendTo(dst net.Conn, canceled func() bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = true
	if b.left > 0 {
		b.expect.send()
	}
	up, ok := dst.(*net.TCPConn)
	if !ok || b.raw == nil || b.br.Buffered() > 0 || len(b.prefix) > 0 {
		return b.copyTo(dst)
	}
	for b.left > 0 && b.err == nil {
		if b.timeout > 0 {
			_ = b.raw.SetReadDeadline(time.Now().Add(b.timeout))
		}
		step := min(b.left, spliceStep)
		n, err := up.ReadFrom(&io.LimitedReader{R: b.raw, N: step})
		b.left -= n
		b.spliced += n
		switch {
		case err == nil && n < step:
			b.fail(io.EOF) // the client closed within the body
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && !canceled():
			// The upstream's connection has no deadline but a
			// cancellation's: this one is the client's body timeout.
			b.fail(err)
		case peerEnded(b.raw):
			b.fail(io.EOF)
		default:
			// The upstream's failure: what the client sent since is lost
			// with it, and the connection ends after the answer.
			b.broken = true
			return err
		}
	}
	return b.err
}

// copyTo copies the rest of the body to dst.
func (b *streamedBody) copyTo(dst io.Writer) error {
	buf := getBodyBuffer(leanBodyMaxBytes)
	defer buf.release()
	for b.left > 0 {
		n, rerr := b.read(buf.b)
		if n > 0 {
			if _, err := dst.Write(buf.b[:n]); err != nil {
				return err
			}
		}
		if rerr != nil {
			return rerr
		}
	}
	return nil
}

// finish ends the body's use by its request and reports whether the
// connection can carry the next request. What the answer left unread is
// read away first, for at most drain (nginx's lingering close, net/http's
// drain after a handler): a client still sending gets to read the answer
// instead of a reset, and one whose body ends within drain keeps its
// connection. A read still waiting (a transport's, after an answer that
// came first) is woken by a deadline in the past.
func (b *streamedBody) finish(drain time.Duration) bool {
	for !b.mu.TryLock() {
		// Again until the reader lets go: it may set a deadline of its
		// own between two of these.
		_ = b.nc.SetReadDeadline(time.Unix(1, 0))
		time.Sleep(time.Millisecond)
	}
	defer b.mu.Unlock()
	// A prefix put back and never read is not on the connection.
	b.left -= int64(len(b.prefix))
	b.prefix = nil
	// After a broken splice left overstates what is to come: the drain
	// then ends at its bound, and the connection closes either way.
	if b.err == nil && b.left > 0 && drain > 0 {
		_ = b.nc.SetReadDeadline(time.Now().Add(drain))
		for b.left > 0 {
			n, err := b.br.Discard(int(min(b.left, 1<<30)))
			b.left -= int64(n)
			if err != nil {
				break
			}
		}
	}
	b.over = true
	_ = b.nc.SetReadDeadline(time.Time{})
	return b.left == 0 && b.err == nil && !b.broken
}
