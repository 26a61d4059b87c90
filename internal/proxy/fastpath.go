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
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fastServer serves the common case of a cleartext listener itself: HTTP/1.1
// GET and HEAD requests without a body, upgrade or expectation. Its
// per-request cost is lower than net/http's server (no per-request context,
// no background reader goroutine, no response header clone). Every
// connection that sends anything else — HTTP/1.0, a body, an Upgrade,
// the h2c preface — is handed, with its unread bytes intact, to the
// listener's net/http server, which then owns it.
type fastServer struct {
	d       *DataPlane
	port    int32
	ln      net.Listener
	handoff *handoffListener

	mu      sync.Mutex
	conns   map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
	// served counts requests the fast path answered (tests read it).
	served atomic.Uint64
}

type fastConn struct {
	nc     net.Conn
	remote string
	busy   atomic.Bool
}

// fastIdleTimeout is how long a keep-alive connection may wait for its
// next request, as net/http's IdleTimeout of the listener's server.
const fastIdleTimeout = 120 * time.Second

func newFastServer(d *DataPlane, port int32, ln net.Listener) *fastServer {
	return &fastServer{d: d, port: port, ln: ln, conns: map[*fastConn]struct{}{},
		handoff: &handoffListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
}

func (fs *fastServer) acceptLoop() {
	var backoff time.Duration
	for {
		nc, err := fs.ln.Accept()
		if err != nil {
			if fs.closing.Load() || errors.Is(err, net.ErrClosed) {
				fs.closing.Store(true)
				fs.wakeIdle()
				return
			}
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		fc := &fastConn{nc: nc, remote: nc.RemoteAddr().String()}
		fs.mu.Lock()
		fs.conns[fc] = struct{}{}
		fs.wg.Add(1)
		fs.mu.Unlock()
		fs.d.m.activeConns.Inc()
		go fs.serveConn(fc)
	}
}

// wakeIdle makes connections waiting for a request notice the drain.
func (fs *fastServer) wakeIdle() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for fc := range fs.conns {
		if !fc.busy.Load() {
			_ = fc.nc.SetReadDeadline(time.Unix(1, 0))
		}
	}
}

// drain stops accepting, lets in-flight requests finish until ctx ends,
// then closes what is left.
func (fs *fastServer) drain(ctx context.Context) error {
	fs.closing.Store(true)
	_ = fs.ln.Close()
	fs.wakeIdle()
	done := make(chan struct{})
	go func() { fs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		fs.mu.Lock()
		for fc := range fs.conns {
			_ = fc.nc.Close()
		}
		fs.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (fs *fastServer) release(fc *fastConn, handedOff bool) {
	fs.mu.Lock()
	delete(fs.conns, fc)
	fs.mu.Unlock()
	if !handedOff {
		_ = fc.nc.Close()
	}
	fs.d.m.activeConns.Dec() // net/http counts a handed-off connection itself
	fs.wg.Done()
}

var fastBufPool = sync.Pool{New: func() any {
	return &fastBufs{br: bufio.NewReaderSize(nil, 8<<10), bw: bufio.NewWriterSize(nil, 8<<10)}
}}

type fastBufs struct {
	br *bufio.Reader
	bw *bufio.Writer
}

func (fs *fastServer) serveConn(fc *fastConn) {
	bufs := fastBufPool.Get().(*fastBufs)
	src := &fastSource{nc: fc.nc}
	br, bw := bufs.br, bufs.bw
	br.Reset(src)
	bw.Reset(fc.nc)
	handedOff := false
	var watch *clientWatch
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler { //nolint:errorlint // sentinel panic value
			fs.d.log.Error("panic serving a request", "panic", p)
		}
		if watch != nil {
			// The connection closes below: the watch's read ends with it.
			watch.abandon()
		}
		if !handedOff {
			br.Reset(nil)
			bw.Reset(nil)
			fastBufPool.Put(bufs)
		}
		fs.release(fc, handedOff)
	}()
	w := &fastWriter{bw: bw}
	_ = fc.nc.SetReadDeadline(time.Now().Add(fastIdleTimeout))
	for {
		if fs.closing.Load() {
			return
		}
		if watch != nil {
			// The previous request's watch is the wait for this one: it
			// ends with the next request's first byte, the client's
			// close, or the idle timeout.
			ok := watch.wait()
			watch = nil
			if !ok && br.Buffered() == 0 {
				return
			}
		}
		if fs.closing.Load() {
			return // a drain began while the deadline was being set
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		fc.busy.Store(true)
		headDeadline := time.Now().Add(fs.d.opts.HeaderTimeout)
		headLen, verdict := fs.scanHead(br, fc, headDeadline)
		switch verdict {
		case headTimedOut:
			return // as net/http: a head that never completes is dropped
		case headNotSimple:
			// Hand the connection, unread bytes included, to net/http,
			// which answers exactly as it would have on its own; its
			// header timeout ends where this head's budget ends.
			pc := &peekedConn{Conn: fc.nc, r: br, src: src, headDeadline: headDeadline}
			if err := fs.handoff.give(pc); err != nil {
				return
			}
			handedOff = true
			return
		}
		req, ok := parseSimpleRequest(br, headLen)
		if !ok {
			// The head looked simple but a field is one the fast path does
			// not vouch for: net/http decides, never a second parser.
			pc := &peekedConn{Conn: fc.nc, r: br, src: src, headDeadline: headDeadline}
			if err := fs.handoff.give(pc); err != nil {
				return
			}
			handedOff = true
			return
		}
		// While the request is served, a read on the connection notices
		// the client going away and cancels the upstream exchange.
		_ = fc.nc.SetReadDeadline(time.Time{})
		watch = startClientWatch(src, br.Buffered() > 0)
		req = req.WithContext(watch.ctx)
		req.RemoteAddr = fc.remote
		fs.served.Add(1)
		w.reset(req)
		w.reqClose = w.reqClose || fs.d.draining() // Connection: close while draining (drain.go)
		fs.d.serve(w, req, fs.port, false)
		if err := w.finish(); err != nil || w.closeAfter {
			return
		}
		fc.busy.Store(false)
		_ = fc.nc.SetReadDeadline(time.Now().Add(fastIdleTimeout))
	}
}

// headVerdict is what the fast path makes of a buffered request head.
type headVerdict int

const (
	headSimple    headVerdict = iota // the fast path serves it
	headNotSimple                    // net/http gets the connection
	headTimedOut                     // the head did not arrive in time
)

// scanHead waits for a whole request head and reports whether it is one
// the fast path serves: "GET" or "HEAD", HTTP/1.1, CRLF line endings only,
// no body framing, no Upgrade, no Expect. It hands off at the first byte
// that rules the head out, so net/http answers malformed heads at once.
func (fs *fastServer) scanHead(br *bufio.Reader, fc *fastConn, deadline time.Time) (int, headVerdict) {
	partial := false
	for {
		buf, _ := br.Peek(br.Buffered())
		switch {
		case bytes.HasPrefix(buf, []byte("GET ")) || bytes.HasPrefix(buf, []byte("HEAD ")):
			end, ok := headEnd(buf)
			if !ok {
				return 0, headNotSimple
			}
			if end >= 0 {
				if simpleHead(buf[:end+2]) {
					return end + 2, headSimple
				}
				return 0, headNotSimple
			}
		case len(buf) < 5 && (bytes.HasPrefix([]byte("GET "), buf) || bytes.HasPrefix([]byte("HEAD "), buf)):
			// Too short to tell yet.
		default:
			return 0, headNotSimple
		}
		if br.Buffered() >= br.Size() {
			return 0, headNotSimple // a large head: net/http applies its own limits
		}
		if !partial {
			// The head arrives in pieces: bound the wait as net/http's
			// ReadHeaderTimeout does, once per request.
			partial = true
			_ = fc.nc.SetReadDeadline(deadline)
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, headTimedOut
			}
			return 0, headNotSimple // let net/http produce the error answer
		}
	}
}

// headEnd finds the CRLF CRLF that ends a head (-1 while it has not
// arrived). ok is false when a bare CR or LF comes first: such a head is
// not the fast path's to parse.
func headEnd(buf []byte) (int, bool) {
	for i := 0; i < len(buf); i++ {
		switch buf[i] {
		case '\n':
			return 0, false
		case '\r':
			if i+1 == len(buf) {
				return -1, true
			}
			if buf[i+1] != '\n' {
				return 0, false
			}
			if i+3 < len(buf) && buf[i+2] == '\r' && buf[i+3] == '\n' {
				return i, true
			}
			if i+2 < len(buf) && buf[i+2] == '\n' {
				return 0, false
			}
			i++ // past the LF
		}
	}
	return -1, true
}

// simpleHead checks the request line's version and the header names.
func simpleHead(head []byte) bool {
	line, rest, ok := bytes.Cut(head, []byte("\r\n"))
	if !ok || !bytes.HasSuffix(line, []byte(" HTTP/1.1")) {
		return false
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return false
		}
		switch {
		case asciiEqualFold(name, "content-length"), asciiEqualFold(name, "transfer-encoding"),
			asciiEqualFold(name, "upgrade"), asciiEqualFold(name, "expect"), asciiEqualFold(name, "http2-settings"):
			return false
		}
	}
	return true
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// handoffListener feeds connections from the fast path to net/http.
type handoffListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *handoffListener) give(c net.Conn) error {
	select {
	case l.ch <- c:
		return nil
	case <-l.done:
		return net.ErrClosed
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// peekedConn replays bytes the fast path buffered before the handoff.
type peekedConn struct {
	net.Conn
	r   *bufio.Reader
	src *fastSource
	// headDeadline ends the header budget of the head being handed off:
	// net/http's read deadlines are cut to it until it clears the deadline
	// (a zero deadline: the head is read, or the connection turned out to
	// be HTTP/2), so a trickled head gets one budget, not two.
	headDeadline time.Time
	headDone     bool
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(p)
		}
		c.r = nil
	}
	if c.src != nil {
		if n, ok := c.src.takePending(p); ok {
			return n, nil
		}
		c.src = nil
	}
	return c.Conn.Read(p)
}

func (c *peekedConn) SetReadDeadline(t time.Time) error {
	switch {
	case c.headDone:
	case t.IsZero():
		c.headDone = true
	case !c.headDeadline.IsZero() && c.headDeadline.Before(t):
		t = c.headDeadline
	}
	return c.Conn.SetReadDeadline(t)
}

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

// fastWriter is the http.ResponseWriter of the fast path: HTTP/1.1 with
// Content-Length when the handler set one, else chunked.
type fastWriter struct {
	bw          *bufio.Writer
	h           http.Header
	head        bool
	reqClose    bool
	wroteHeader bool
	noBody      bool
	chunked     bool
	remaining   int64
	closeAfter  bool
	err         error
}

func (w *fastWriter) reset(req *http.Request) {
	h := w.h
	if h == nil {
		h = make(http.Header, 8)
	} else {
		clear(h) // the previous exchange on this connection is over
	}
	*w = fastWriter{bw: w.bw, h: h, head: req.Method == http.MethodHead, reqClose: req.Close, remaining: -1}
}

func (w *fastWriter) Header() http.Header { return w.h }

var dateCache atomic.Pointer[dateValue]

type dateValue struct {
	unix int64
	s    string
}

func httpDate() string {
	now := time.Now()
	if d := dateCache.Load(); d != nil && d.unix == now.Unix() {
		return d.s
	}
	d := &dateValue{unix: now.Unix(), s: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.s
}

func (w *fastWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return // informational answers are not relayed on the fast path
	}
	w.wroteHeader = true
	h := w.h
	delete(h, "Transfer-Encoding")
	delete(h, "Connection")
	w.noBody = w.head || code == http.StatusNoContent || code == http.StatusNotModified
	if code == http.StatusNoContent || code == http.StatusNotModified {
		delete(h, "Content-Length")
	} else if cl := h["Content-Length"]; len(cl) == 1 {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 {
			w.remaining = n
		} else {
			delete(h, "Content-Length")
		}
	} else if len(cl) > 1 {
		delete(h, "Content-Length")
	}
	if !w.noBody && w.remaining < 0 {
		w.chunked = true
	}
	bw := w.bw
	_, _ = bw.WriteString("HTTP/1.1 ")
	_, _ = bw.WriteString(strconv.Itoa(code))
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(http.StatusText(code))
	_, _ = bw.WriteString("\r\n")
	if _, ok := h["Date"]; !ok {
		_, _ = bw.WriteString("Date: ")
		_, _ = bw.WriteString(httpDate())
		_, _ = bw.WriteString("\r\n")
	}
	for k, vv := range h {
		if k == "Trailer" || len(k) > len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
			continue
		}
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	if w.chunked {
		_, _ = bw.WriteString("Transfer-Encoding: chunked\r\n")
		if t := h["Trailer"]; len(t) > 0 {
			_, _ = bw.WriteString("Trailer: ")
			_, _ = bw.WriteString(t[0])
			_, _ = bw.WriteString("\r\n")
		}
	}
	if w.reqClose {
		w.closeAfter = true
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	_, _ = bw.WriteString("\r\n")
}

func (w *fastWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		return 0, http.ErrBodyNotAllowed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if w.chunked {
		_, _ = w.bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		_, _ = w.bw.WriteString("\r\n")
		n, err := w.bw.Write(p)
		_, _ = w.bw.WriteString("\r\n")
		w.err = err
		return n, err
	}
	if int64(len(p)) > w.remaining {
		n, _ := w.bw.Write(p[:w.remaining])
		w.remaining = 0
		w.closeAfter = true
		return n, http.ErrContentLength
	}
	n, err := w.bw.Write(p)
	w.remaining -= int64(n)
	w.err = err
	return n, err
}

func (w *fastWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
}

// finish ends the response (last chunk and trailers) and flushes it.
func (w *fastWriter) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.chunked {
		_, _ = w.bw.WriteString("0\r\n")
		announced := map[string]bool{}
		for _, t := range w.h["Trailer"] {
			for _, k := range bytes.Split([]byte(t), []byte(",")) {
				announced[http.CanonicalHeaderKey(string(bytes.TrimSpace(k)))] = true
			}
		}
		for k, vv := range w.h {
			name := k
			if len(k) > len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
				name = k[len(http.TrailerPrefix):]
			} else if !announced[k] {
				continue
			}
			for _, v := range vv {
				_, _ = w.bw.WriteString(name + ": " + v + "\r\n")
			}
		}
		_, _ = w.bw.WriteString("\r\n")
	} else if w.remaining > 0 && !w.noBody {
		w.closeAfter = true // the body was short: the framing is broken
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	return nil
}

var _ io.Writer = (*fastWriter)(nil)

// parseSimpleRequest builds the request of a simple head (see simpleHead)
// without http.ReadRequest's general machinery: an origin-form target
// without escapes, valid token header names, plain values, one Host.
// Anything else returns ok=false with nothing consumed, for
// http.ReadRequest. head ends with the CRLF of the last header line.
func parseSimpleRequest(br *bufio.Reader, headLen int) (*http.Request, bool) {
	buf, _ := br.Peek(headLen)
	s := string(buf) // one allocation backs every field
	line := s[:strings.Index(s, "\r\n")]
	sp1 := strings.IndexByte(line, ' ')
	sp2 := strings.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 || line[sp2+1:] != "HTTP/1.1" {
		return nil, false
	}
	method, target := line[:sp1], line[sp1+1:sp2]
	if method != http.MethodGet && method != http.MethodHead {
		return nil, false
	}
	if target[0] != '/' || (len(target) > 1 && target[1] == '/') {
		return nil, false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f || c == '%' || c == '#' {
			return nil, false
		}
	}
	path, query, _ := strings.Cut(target, "?")
	rest := s[len(line)+2:]
	lines := strings.Count(rest, "\r\n")
	h := make(http.Header, lines)
	vals := make([]string, lines)
	host, hosts, closeConn := "", 0, false
	for i := 0; i < lines; i++ {
		eol := strings.Index(rest, "\r\n")
		l := rest[:eol]
		rest = rest[eol+2:]
		colon := strings.IndexByte(l, ':')
		if colon <= 0 {
			return nil, false
		}
		name := l[:colon]
		for j := 0; j < len(name); j++ {
			if !isTokenByte(name[j]) {
				return nil, false
			}
		}
		v := strings.Trim(l[colon+1:], " \t")
		for j := 0; j < len(v); j++ {
			if c := v[j]; (c < ' ' && c != '\t') || c == 0x7f {
				return nil, false
			}
		}
		if strings.IndexByte(name, '_') >= 0 {
			continue // dropped, as nginx's underscores_in_headers off does
		}
		key := http.CanonicalHeaderKey(name)
		switch key {
		case "Host":
			host, hosts = v, hosts+1
			continue
		case "Connection":
			for _, f := range strings.Split(v, ",") {
				if strings.EqualFold(strings.TrimSpace(f), "close") {
					closeConn = true
				}
			}
		}
		vals[i] = v
		if old, ok := h[key]; ok {
			h[key] = append(old[:len(old):len(old)], v)
		} else {
			h[key] = vals[i : i+1 : i+1]
		}
	}
	if hosts != 1 || host == "" || !validHostHeader(host) {
		return nil, false
	}
	_, _ = br.Discard(headLen + 2)
	return &http.Request{
		Method:     method,
		URL:        &url.URL{Path: path, RawQuery: query},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Body:       http.NoBody,
		Host:       host,
		RequestURI: target,
		Close:      closeConn,
	}, true
}

// validHostHeader accepts the characters of a reg-name, IPv4 or bracketed
// IPv6 host with an optional port; net/http applies the full rules to
// anything else.
func validHostHeader(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}
