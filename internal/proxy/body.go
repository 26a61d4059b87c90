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
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// errBodyTooLarge fails a request body read past the route's limit.
var errBodyTooLarge = errors.New("request body larger than the route allows")

// errBodyTimeout fails a request body read that waited too long.
var errBodyTimeout = errors.New("request body read timed out")

// timedBody bounds each read of a request body (nginx's
// client_body_timeout) and remembers whether the body was read to its end.
type timedBody struct {
	rc       io.ReadCloser
	ctl      *http.ResponseController
	timeout  time.Duration
	timedOut atomic.Bool
	failed   atomic.Bool
	eof      atomic.Bool
	// asked is set at the first read: net/http has then sent the 100
	// Continue a client that expects one waits for (expectcontinue.go).
	asked atomic.Bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.asked.Store(true)
	if b.timeout > 0 {
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.timeout))
	}
	n, err := b.rc.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		b.eof.Store(true)
		if b.timeout > 0 {
			// net/http's own read of the connection begins at the body's
			// end; it must not inherit this deadline.
			_ = b.ctl.SetReadDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
		b.failed.Store(true)
		err = errBodyTimeout
	default:
		b.failed.Store(true)
	}
	return n, err
}

func (b *timedBody) Close() error { return b.rc.Close() }

// bodyFailed reports whether reading the client's body failed: with
// errBodyTimeout when want is that, with any error when want is nil.
func bodyFailed(r *http.Request, want error) bool {
	if fb, ok := r.Body.(*fastBody); ok {
		return fb.err != nil && (want == nil || errors.Is(fb.err, want))
	}
	if sb, ok := r.Body.(*streamedBody); ok {
		err := sb.failure()
		return err != nil && (want == nil || errors.Is(err, want))
	}
	tb, ok := r.Body.(*timedBody)
	if !ok {
		return false
	}
	if errors.Is(want, errBodyTimeout) {
		return tb.timedOut.Load()
	}
	return tb.failed.Load()
}

// boundDrain limits how long net/http may read an unread body after the
// response (HTTP/1 only: an HTTP/2 stream's body is reset instead).
func (b *timedBody) boundDrain(d time.Duration) {
	if !b.eof.Load() && d > 0 {
		_ = b.ctl.SetReadDeadline(time.Now().Add(d))
	}
}

// limitedBody fails reads past the route's body limit.
type limitedBody struct {
	rc       io.ReadCloser
	left     int64
	exceeded bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		l.exceeded = true
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.exceeded = true
		return 0, errBodyTooLarge
	}
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }

// sentBody stops the send timer once the whole request body was read.
type sentBody struct {
	rc    io.ReadCloser
	timer *time.Timer
}

func (s *sentBody) Read(p []byte) (int, error) {
	n, err := s.rc.Read(p)
	if err != nil {
		s.timer.Stop()
	}
	return n, err
}

func (s *sentBody) Close() error { return s.rc.Close() }
