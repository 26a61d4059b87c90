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
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// fastBody is the body of a request the fast path serves: read whole,
// before the request is served, as nginx reads a request body before it
// proxies (proxy_request_buffering), at most leanBodyMaxBytes
// (parseSimpleRequest), into a buffer of leanbody.go's pools. err is why
// the body ended early (errBodyTimeout, io.ErrUnexpectedEOF): the bytes
// that came are read first, then err, which bodyFailed reports as the
// client's fault, as timedBody's for what net/http serves.
type fastBody struct {
	// mu orders reads with release: http.Transport may read a body after
	// its round trip returned (an answer that came first), and a buffer
	// back in its pool is another request's.
	mu  sync.Mutex
	bb  *bodyBuffer
	rd  bytes.Reader
	err error
}

func (b *fastBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.rd.Read(p)
	if errors.Is(err, io.EOF) && b.err != nil {
		return n, b.err
	}
	return n, err
}

func (b *fastBody) Close() error { return nil }

// unread puts back the last n bytes read (restoreBodyPrefix).
func (b *fastBody) unread(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, _ = b.rd.Seek(-int64(n), io.SeekCurrent)
}

// whole hands over the body's bytes when it arrived complete and none was
// read yet, for the lean client to send as they are (readLeanBody), and
// leaves the body read to its end.
func (b *fastBody) whole() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil || b.bb == nil || b.rd.Size() == 0 || int64(b.rd.Len()) != b.rd.Size() {
		return nil, false
	}
	_, _ = b.rd.Seek(0, io.SeekEnd)
	return b.bb.b, true
}

// release returns the buffer once the request is over; a later read
// finds the body's end.
func (b *fastBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rd.Reset(nil)
	b.bb.release()
	b.bb = nil
}

// bodyReadError is why a body read failed before its length: a read
// that timed out (errBodyTimeout), the client's close within it
// (io.ErrUnexpectedEOF), or the connection's error.
func bodyReadError(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return errBodyTimeout
	case errors.Is(err, io.EOF):
		return io.ErrUnexpectedEOF
	default:
		return err
	}
}

// readFastBody reads a body of n bytes from br, each read bounded by
// timeout (nginx's client_body_timeout; none when zero).
func readFastBody(nc net.Conn, br *bufio.Reader, n int, timeout time.Duration) *fastBody {
	fb := &fastBody{bb: getBodyBuffer(n)}
	buf := fb.bb.b
	if timeout <= 0 {
		_ = nc.SetReadDeadline(time.Time{}) // the head's deadline is over
	}
	got := 0
	for got < n {
		if timeout > 0 && br.Buffered() == 0 {
			_ = nc.SetReadDeadline(time.Now().Add(timeout))
		}
		k, err := br.Read(buf[got:])
		got += k
		if err != nil && got < n {
			fb.err = bodyReadError(err)
			break
		}
	}
	fb.rd.Reset(buf[:got])
	return fb
}
