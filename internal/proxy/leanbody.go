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
	"math/bits"
	"net/http"
	"sync"
)

// leanBodyMaxBytes is the largest request body the lean client sends
// from memory: the proxy reads such a body whole before it picks a
// connection, as nginx buffers request bodies by default
// (proxy_request_buffering), and writes it upstream with the head. A
// larger one the fast path streams (streamedbody.go); bodies of unknown
// length, trailers and expectations go through http.Transport.
const (
	leanBodyMaxShift = 16
	leanBodyMaxBytes = 1 << leanBodyMaxShift
)

// errBodyLonger fails a request body that goes on past its Content-Length
// (an HTTP/2 stream whose DATA exceeds its declared length).
var errBodyLonger = errors.New("request body longer than its Content-Length")

// leanBody reports whether the lean client may send r's body: a known
// length within leanBodyMaxBytes (and within what a retry keeps in
// memory), a method that carries one, no trailers, no Expect, and no send
// timeout (which bounds the streaming of a body, not its buffering).
func (d *DataPlane) leanBody(r *http.Request, rt *route) bool {
	return bodyMethod(r.Method) && r.ContentLength > 0 && r.ContentLength <= min(leanBodyMaxBytes, int64(d.opts.RetryBodyBufferBytes)) &&
		len(r.Trailer) == 0 && len(r.Header["Expect"]) == 0 && rt.timeouts.UpstreamSend == 0
}

// leanStream is the streamed body (streamedbody.go) the lean client may
// send as it comes: on a route that does not retry (a retry keeps what
// it sends, to send it again) and has no send timeout. nil leaves the
// body to http.Transport, which reads it as any body.
func (d *DataPlane) leanStream(r *http.Request, rt *route) *streamedBody {
	sb, ok := r.Body.(*streamedBody)
	if !ok || !bodyMethod(r.Method) || rt.retry != nil || rt.timeouts.UpstreamSend != 0 ||
		len(r.Trailer) > 0 || len(r.Header["Expect"]) > 0 {
		return nil
	}
	return sb
}

// readLeanBody reads the whole body of a request the lean client sends:
// what retry.go read already, or the buffer the fast path read it into
// (fastbody.go; released only once the request is served), else the
// client's body through the route's limit (out.limited, as transportRequest wraps it). An error is the
// client's body failing, which answerUpstreamError answers.
func (d *DataPlane) readLeanBody(r *http.Request, rt *route, out *outbound) (*bodyBuffer, error) {
	var src io.Reader
	fb, _ := r.Body.(*fastBody)
	switch rb := out.replay; {
	case rb != nil && rb.whole:
		return &bodyBuffer{b: rb.buf, class: -1}, nil
	case rb == nil && fb != nil && (rt.maxBody == 0 || r.ContentLength <= rt.maxBody):
		if b, ok := fb.whole(); ok {
			return &bodyBuffer{b: b, class: -1}, nil
		}
		src = r.Body
	case rb != nil:
		src = &prefixedBody{prefix: rb.buf, rc: rb.rest}
	case rt.maxBody > 0:
		out.limited = &limitedBody{rc: r.Body, left: rt.maxBody}
		src = out.limited
	default:
		src = r.Body
	}
	bb := getBodyBuffer(int(r.ContentLength))
	_, err := io.ReadFull(src, bb.b)
	if err == nil {
		// Read on to the body's end, so that the client's connection is
		// ready for its next request and a stream that sends more than it
		// declared is refused.
		var one [1]byte
		if _, err = io.ReadFull(src, one[:]); errors.Is(err, io.EOF) {
			return bb, nil
		} else if err == nil {
			err = errBodyLonger
		}
	}
	bb.release()
	// Closed now, as http.Transport closes a body it failed to send:
	// net/http then drains no more of it (a read that timed out stays
	// timed out) and closes the connection after the answer.
	_ = r.Body.Close()
	return nil, err
}

// bodyBuffer holds a request body the lean client sends. Buffers come
// from pools by size class (4 KiB to leanBodyMaxBytes, powers of two);
// class -1 is a buffer the pools do not own.
type bodyBuffer struct {
	b     []byte
	class int
}

const minBodyClassShift = 12 // 4 KiB

var bodyBuffers [leanBodyMaxShift - minBodyClassShift + 1]sync.Pool

func getBodyBuffer(n int) *bodyBuffer {
	class := max(bits.Len(uint(n-1)), minBodyClassShift) - minBodyClassShift
	if bb, ok := bodyBuffers[class].Get().(*bodyBuffer); ok {
		bb.b = bb.b[:n]
		return bb
	}
	return &bodyBuffer{b: make([]byte, n, 1<<(class+minBodyClassShift)), class: class}
}

func (bb *bodyBuffer) bytes() []byte {
	if bb == nil {
		return nil
	}
	return bb.b
}

func (bb *bodyBuffer) release() {
	if bb == nil || bb.class < 0 {
		return
	}
	bodyBuffers[bb.class].Put(bb)
}
