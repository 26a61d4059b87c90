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
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// h1Client is a lean HTTP/1.1 upstream client for requests without a body
// (GET and HEAD, the bulk of proxied traffic) and for small bodies read
// whole beforehand (leanbody.go). Compared with http.Transport it writes
// the request and reads the response on the calling goroutine: no writer
// and reader goroutines per connection, no channel hand-offs per request.
// Everything else (streamed bodies, upgrades, h2c) goes through
// http.Transport.
type h1Client struct {
	dialer      *net.Dialer
	maxIdle     int
	idleTimeout time.Duration
	maxHead     int64

	mu sync.Mutex
	// idle is keyed by the endpoint's pool key (address, plus the TLS
	// fingerprint for a TLS set).
	idle map[string][]*h1Conn
	// bodies counts the requests sent with a body, spliced the response
	// body bytes relayed in the kernel (splicebody.go); tests read them.
	bodies  atomic.Uint64
	spliced atomic.Int64
	// streamed counts the request body bytes relayed in the kernel
	// (streamedbody.go); tests read it.
	streamed atomic.Int64
}

type h1Conn struct {
	// nc is the connection requests are written to: raw, or a TLS client
	// over raw. The reaper probes raw.
	nc     net.Conn
	raw    net.Conn
	lim    headLimit // between nc and br
	br     *bufio.Reader
	bw     *bufio.Writer // over w
	w      bodyWriter
	key    string
	idleAt time.Time
	// idleTimeout is how long the connection may idle in the pool: its
	// endpoint set's IdleTimeout, else the client's.
	idleTimeout time.Duration
}

// expired reports whether the connection idled past its idle timeout at
// now.
func (pc *h1Conn) expired(now time.Time) bool { return now.Sub(pc.idleAt) >= pc.idleTimeout }

// errStaleConn marks a failure on a pooled connection before any byte of a
// response arrived: the upstream closed it while idle, so a fresh
// connection may retry the request.
var errStaleConn = errors.New("pooled upstream connection was closed")

var methodRequests = map[string]*http.Request{
	http.MethodGet:  {Method: http.MethodGet},
	http.MethodHead: {Method: http.MethodHead},
	// The methods of leanBody.
	http.MethodPost:   {Method: http.MethodPost},
	http.MethodPut:    {Method: http.MethodPut},
	http.MethodPatch:  {Method: http.MethodPatch},
	http.MethodDelete: {Method: http.MethodDelete},
}

func newH1Client(dialer *net.Dialer, maxIdle int, idleTimeout time.Duration, maxHead int64) *h1Client {
	return &h1Client{dialer: dialer, maxIdle: maxIdle, idleTimeout: idleTimeout, maxHead: maxHead, idle: map[string][]*h1Conn{}}
}

func (c *h1Client) get(key string) *h1Conn {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		l := c.idle[key]
		if len(l) == 0 {
			return nil
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		c.idle[key] = l[:len(l)-1]
		if !pc.expired(now) {
			return pc
		}
		_ = pc.nc.Close()
	}
}

func (c *h1Client) put(pc *h1Conn) {
	pc.idleAt = time.Now()
	c.mu.Lock()
	if l := c.idle[pc.key]; len(l) < c.maxIdle {
		c.idle[pc.key] = append(l, pc)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	_ = pc.nc.Close()
}

func (c *h1Client) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, l := range c.idle {
		for _, pc := range l {
			_ = pc.nc.Close()
		}
		delete(c.idle, addr)
	}
}

// dial connects to ep: with its set's dialer (ConnectTimeout) when it has
// one, else the client's.
func (c *h1Client) dial(ctx context.Context, ep *endpoint) (*h1Conn, error) {
	dialer := c.dialer
	if ep.dialer != nil {
		dialer = ep.dialer
	}
	nc, raw, err := dialTLS(ctx, dialer, ep.addr, ep.tls)
	if err != nil {
		return nil, err
	}
	pc := &h1Conn{nc: nc, raw: raw, w: bodyWriter{nc: nc}, key: ep.key, idleTimeout: c.idleTimeout}
	pc.bw = bufio.NewWriterSize(&pc.w, 4<<10)
	if ep.idleTimeout > 0 {
		pc.idleTimeout = ep.idleTimeout
	}
	pc.lim = headLimit{r: nc, max: c.maxHead, left: -1}
	pc.br = bufio.NewReaderSize(&pc.lim, 8<<10)
	return pc, nil
}

// roundTrip sends a request, with body when it is not nil, and returns
// the response whose Body hands the connection back to the pool once it
// has been read to the end. A body is in memory, so a stale pooled
// connection can be retried with it too.
func (c *h1Client) roundTrip(ctx context.Context, ep *endpoint, method, uri, host string, h *upstreamHeaders, body []byte) (*http.Response, error) {
	return c.roundTripBody(ctx, ep, method, uri, host, h, body, nil)
}

// roundTripStreamed is roundTrip with a body the fast path streams
// (streamedbody.go): a stale pooled connection is tried again only while
// none of the body left the client's connection.
func (c *h1Client) roundTripStreamed(ctx context.Context, ep *endpoint, method, uri, host string, h *upstreamHeaders, sb *streamedBody) (*http.Response, error) {
	resp, err := c.roundTripBody(ctx, ep, method, uri, host, h, nil, sb)
	c.streamed.Add(sb.splicedBytes())
	return resp, err
}

func (c *h1Client) roundTripBody(ctx context.Context, ep *endpoint, method, uri, host string, h *upstreamHeaders, body []byte, sb *streamedBody) (*http.Response, error) {
	mreq := methodRequests[method]
	for attempt := 0; attempt < 2; attempt++ {
		pc := c.get(ep.key)
		reused := pc != nil
		if !reused {
			var err error
			if pc, err = c.dial(ctx, ep); err != nil {
				return nil, err
			}
		}
		if body != nil || sb != nil {
			c.bodies.Add(1)
		}
		resp, err := pc.exchange(ctx, mreq, uri, host, h, body, sb, reused)
		if err == nil {
			resp.Body = &h1Body{rc: resp.Body, pc: pc, c: c, stop: resp.Body.(*stopper).stop, keep: !resp.Close}
			return resp, nil
		}
		_ = pc.nc.Close()
		if !errors.Is(err, errStaleConn) || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, errStaleConn
}

// stopper carries the cancellation hook of an exchange to the body.
type stopper struct {
	io.ReadCloser
	stop func() bool
}

// exchange sends the request, its body in memory (body) or streamed
// (sb), and reads the answer's head.
func (pc *h1Conn) exchange(ctx context.Context, mreq *http.Request, uri, host string, uh *upstreamHeaders, body []byte, sb *streamedBody, reused bool) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { _ = pc.nc.SetDeadline(time.Unix(1, 0)) })
	bw := pc.bw
	_, _ = bw.WriteString(mreq.Method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(uri)
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	uh.write(bw)
	length, first := int64(len(body)), body
	if sb != nil {
		// What the client's reader holds of the body goes with the head.
		length, first = sb.length(), sb.buffered()
	}
	if body != nil || sb != nil {
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), length, 10))
		_, _ = bw.WriteString("\r\n")
	}
	_, _ = bw.WriteString("\r\n")
	if len(first) > bw.Available() && bw.Buffered() > 0 {
		pc.w.tail = first // sent with the head by the flush
	} else {
		_, _ = bw.Write(first)
	}
	err := bw.Flush()
	pc.w.tail = nil
	if err == nil && sb != nil {
		sb.consumed(len(first))
		err = sb.sendTo(pc.nc, func() bool { return ctx.Err() != nil })
		switch {
		case err == nil && sb.sent != nil:
			sb.sent() // the client's connection is watched from here
		case err != nil && sb.failure() != nil:
			stop() // the client's body failed: bodyFailed answers
			return nil, err
		}
	}
	if err != nil {
		bw.Reset(&pc.w)
		if reused && ctx.Err() == nil && (sb == nil || sb.untouched()) {
			stop()
			return nil, errStaleConn
		}
		if (body == nil && sb == nil) || ctx.Err() != nil {
			stop()
			return nil, err
		}
		// The upstream may have answered before it read the whole body
		// (a 413) and closed: relay that answer, as http.Transport does,
		// on a connection that is not pooled again.
		resp, rerr := readCappedHead(pc.br, &pc.lim, mreq)
		if rerr != nil {
			stop()
			return nil, err
		}
		resp.Close = true
		resp.Body = &stopper{ReadCloser: resp.Body, stop: stop}
		return resp, nil
	}
	resp, err := readCappedHead(pc.br, &pc.lim, mreq)
	if err != nil {
		stop()
		if reused && sb == nil && ctx.Err() == nil && pc.br.Buffered() == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err)) {
			return nil, errStaleConn
		}
		return nil, err
	}
	resp.Body = &stopper{ReadCloser: resp.Body, stop: stop}
	return resp, nil
}

// bodyWriter is what an h1Conn's buffered writer writes to: the
// connection, and when tail is set, tail after the buffered head in the
// same call (one writev on TCP) instead of a write of the buffer's fill
// and another of the rest of the body.
type bodyWriter struct {
	nc   net.Conn
	tail []byte
}

func (w *bodyWriter) Write(p []byte) (int, error) {
	if w.tail == nil {
		return w.nc.Write(p)
	}
	bufs := net.Buffers{p, w.tail}
	w.tail = nil
	n, err := bufs.WriteTo(w.nc)
	if n < int64(len(p)) {
		return int(n), err
	}
	return len(p), err
}

func isConnReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "read"
}

// h1Body returns the connection to the pool at EOF, or closes it when the
// body is abandoned.
type h1Body struct {
	rc   io.ReadCloser
	pc   *h1Conn
	c    *h1Client
	stop func() bool
	keep bool
	done bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

func (b *h1Body) finish(ok bool) {
	if b.done {
		return
	}
	b.done = true
	notCanceled := b.stop()
	if ok && b.keep && notCanceled && b.pc.br.Buffered() == 0 {
		b.c.put(b.pc)
		return
	}
	_ = b.pc.nc.Close()
}

// discard reads away the rest of a body nobody relays, at most limit
// bytes for at most timeout, and pools the connection when the body ended
// within both (retry.go).
func (b *h1Body) discard(limit int64, timeout time.Duration) {
	if b.done {
		return
	}
	_ = b.pc.nc.SetReadDeadline(time.Now().Add(timeout))
	_, err := io.CopyN(io.Discard, b.rc, limit+1)
	_ = b.pc.nc.SetReadDeadline(time.Time{})
	b.finish(errors.Is(err, io.EOF))
}

func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}
