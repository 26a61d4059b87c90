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
)

// fastSource is what the fast path's reader reads: the connection, after
// a byte that a client watch read while a request was being served.
type fastSource struct {
	nc      net.Conn
	pending byte
	has     bool
}

func (s *fastSource) Read(p []byte) (int, error) {
	if n, ok := s.takePending(p); ok {
		return n, nil
	}
	return s.nc.Read(p)
}

func (s *fastSource) takePending(p []byte) (int, bool) {
	if !s.has || len(p) == 0 {
		return 0, false
	}
	p[0], s.has = s.pending, false
	return 1, true
}

// errClientGone is the cancellation cause when a client closes its
// connection while its request is being served.
var errClientGone = errors.New("client closed the connection")

// clientWatch reads from a connection while a request is served, as
// net/http's background read does: when the client closes, the request's
// context is canceled and the upstream exchange with it. A byte that
// arrives instead (the next request) is kept for the fast path's reader.
type clientWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	src    *fastSource
	err    error
}

func startClientWatch(src *fastSource, pipelined bool) *clientWatch {
	cw := &clientWatch{done: make(chan struct{}), src: src}
	cw.ctx, cw.cancel = context.WithCancelCause(context.Background())
	if pipelined || src.has {
		// The next request is already buffered: reading further would
		// only delay it, so this request goes unwatched.
		close(cw.done)
		return cw
	}
	go func() {
		defer close(cw.done)
		var b [1]byte
		n, err := src.nc.Read(b[:])
		if n == 1 {
			src.pending, src.has = b[0], true
			return
		}
		cw.err = err
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			cw.cancel(errClientGone)
		}
	}()
	return cw
}

// wait ends the request's context and waits for the watch's read: true when
// the connection has a next request to read, false when it is over.
func (cw *clientWatch) wait() bool {
	cw.cancel(nil)
	<-cw.done
	return cw.src.has || cw.err == nil
}

// abandon ends the request's context; the read ends when the connection
// closes.
func (cw *clientWatch) abandon() { cw.cancel(nil) }
