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
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// h1Client is a lean HTTP/1.1 upstream client for requests without a body
// (GET and HEAD, the bulk of proxied traffic). Compared with
// http.Transport it writes the request and reads the response on the
// calling goroutine: no writer and reader goroutines per connection, no
// channel hand-offs per request. Everything else (bodies, upgrades, h2c)
// goes through http.Transport.
type h1Client struct {
	dialer      *net.Dialer
	maxIdle     int
	idleTimeout time.Duration
	maxHead     int64

	mu   sync.Mutex
	idle map[string][]*h1Conn
}

type h1Conn struct {
	nc     net.Conn
	lim    headLimit // between nc and br
	br     *bufio.Reader
	bw     *bufio.Writer
	addr   string
	idleAt time.Time
}

// errStaleConn marks a failure on a pooled connection before any byte of a
// response arrived: the upstream closed it while idle, so a fresh
// connection may retry the request.
var errStaleConn = errors.New("pooled upstream connection was closed")

var methodRequests = map[string]*http.Request{
	http.MethodGet:  {Method: http.MethodGet},
	http.MethodHead: {Method: http.MethodHead},
}

func newH1Client(dialer *net.Dialer, maxIdle int, idleTimeout time.Duration, maxHead int64) *h1Client {
	return &h1Client{dialer: dialer, maxIdle: maxIdle, idleTimeout: idleTimeout, maxHead: maxHead, idle: map[string][]*h1Conn{}}
}

func (c *h1Client) get(addr string) *h1Conn {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		l := c.idle[addr]
		if len(l) == 0 {
			return nil
		}
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		c.idle[addr] = l[:len(l)-1]
		if now.Sub(pc.idleAt) < c.idleTimeout {
			return pc
		}
		_ = pc.nc.Close()
	}
}

func (c *h1Client) put(pc *h1Conn) {
	pc.idleAt = time.Now()
	c.mu.Lock()
	if l := c.idle[pc.addr]; len(l) < c.maxIdle {
		c.idle[pc.addr] = append(l, pc)
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

func (c *h1Client) dial(ctx context.Context, addr string) (*h1Conn, error) {
	nc, err := c.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &h1Conn{nc: nc, bw: bufio.NewWriterSize(nc, 4<<10), addr: addr}
	pc.lim = headLimit{r: nc, max: c.maxHead, left: -1}
	pc.br = bufio.NewReaderSize(&pc.lim, 8<<10)
	return pc, nil
}

// roundTrip sends a bodiless request and returns the response whose Body
// hands the connection back to the pool once it has been read to the end.
func (c *h1Client) roundTrip(ctx context.Context, addr, method, uri, host string, h *upstreamHeaders) (*http.Response, error) {
	mreq := methodRequests[method]
	for attempt := 0; attempt < 2; attempt++ {
		pc := c.get(addr)
		reused := pc != nil
		if !reused {
			var err error
			if pc, err = c.dial(ctx, addr); err != nil {
				return nil, err
			}
		}
		resp, err := pc.exchange(ctx, mreq, uri, host, h, reused)
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

func (pc *h1Conn) exchange(ctx context.Context, mreq *http.Request, uri, host string, uh *upstreamHeaders, reused bool) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { _ = pc.nc.SetDeadline(time.Unix(1, 0)) })
	bw := pc.bw
	_, _ = bw.WriteString(mreq.Method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(uri)
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host)
	_, _ = bw.WriteString("\r\n")
	uh.write(bw)
	_, _ = bw.WriteString("\r\n")
	if err := bw.Flush(); err != nil {
		stop()
		bw.Reset(pc.nc)
		if reused && ctx.Err() == nil {
			return nil, errStaleConn
		}
		return nil, err
	}
	resp, err := readCappedHead(pc.br, &pc.lim, mreq)
	if err != nil {
		stop()
		if reused && ctx.Err() == nil && pc.br.Buffered() == 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnReset(err)) {
			return nil, errStaleConn
		}
		return nil, err
	}
	resp.Body = &stopper{ReadCloser: resp.Body, stop: stop}
	return resp, nil
}

// readCappedHead reads the response heads of one exchange within the
// head limit, then lifts the limit for the body. bufio and textproto can
// swallow the limit's error behind a partial line, so an exhausted budget
// is what reports a head that is too large (as in http.Transport).
func readCappedHead(br *bufio.Reader, lim *headLimit, mreq *http.Request) (*http.Response, error) {
	lim.arm()
	resp, err := readResponseHead(br, mreq)
	if err != nil {
		if lim.exhausted() && !errors.Is(err, errResponseHeadTooLarge) {
			// %v, not %w: a truncated head must not look like a stale
			// connection (io.ErrUnexpectedEOF) and be retried.
			err = fmt.Errorf("%w: more than %d bytes (%v)", errResponseHeadTooLarge, lim.max, err)
		}
		return nil, err
	}
	lim.disarm()
	return resp, nil
}

// readResponseHead reads the final response head of a bodiless request,
// skipping informational answers. The head limit is armed by the caller.
func readResponseHead(br *bufio.Reader, mreq *http.Request) (*http.Response, error) {
	// Wait for the first bytes, then take the simple path when the whole
	// head is there and qualifies.
	if _, err := br.Peek(1); err == nil {
		if resp, ok := readSimpleResponse(br, mreq.Method == http.MethodHead); ok {
			resp.Request = mreq
			return resp, nil
		}
	}
	for {
		resp, err := http.ReadResponse(br, mreq)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			if resp.StatusCode == http.StatusSwitchingProtocols {
				return nil, errors.New("upstream switched protocols without an upgrade request")
			}
			continue // informational answers are not forwarded
		}
		return resp, nil
	}
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

func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// readSimpleResponse parses the common upstream answer without
// http.ReadResponse's general machinery: an HTTP/1.1 head already in the
// buffer, a final status with a body, exactly one numeric Content-Length,
// no Transfer-Encoding, no folded lines. Anything else returns ok=false
// with nothing consumed, for http.ReadResponse.
func readSimpleResponse(br *bufio.Reader, head bool) (*http.Response, bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, false
	}
	raw := buf[:end+2]
	line, rest, _ := bytes.Cut(raw, []byte("\r\n"))
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || (len(line) > 12 && line[12] != ' ') {
		return nil, false
	}
	for _, c := range line[12:] {
		// reason-phrase = *( HTAB / SP / VCHAR / obs-text ); a bare LF
		// would end the line for net/http and shift the whole head.
		if (c < ' ' && c != '\t') || c == 0x7f {
			return nil, false
		}
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return nil, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, false
	}
	lines := bytes.Count(rest, []byte("\r\n"))
	s := string(raw) // one allocation backs every name and value
	off := len(line) + 2
	h := make(http.Header, lines)
	vals := make([]string, lines)
	cl := int64(-1)
	closeConn := false
	for i := 0; i < lines; i++ {
		eol := strings.Index(s[off:], "\r\n")
		l := s[off : off+eol]
		off += eol + 2
		colon := strings.IndexByte(l, ':')
		if colon <= 0 || l[0] == ' ' || l[0] == '\t' {
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
		key := http.CanonicalHeaderKey(name)
		switch key {
		case "Transfer-Encoding":
			return nil, false
		case "Content-Length":
			if cl >= 0 || v == "" || len(v) > 18 {
				return nil, false
			}
			n := int64(0)
			for j := 0; j < len(v); j++ {
				if v[j] < '0' || v[j] > '9' {
					return nil, false
				}
				n = n*10 + int64(v[j]-'0')
			}
			cl = n
		case "Connection":
			closeConn = closeConn || hasCloseToken(v)
		}
		vals[i] = v
		if old, ok := h[key]; ok {
			h[key] = append(old[:len(old):len(old)], v)
		} else {
			h[key] = vals[i : i+1 : i+1]
		}
	}
	if cl < 0 {
		return nil, false
	}
	if closeConn {
		delete(h, "Connection") // as net/http does once it has noted the close
	}
	_, _ = br.Discard(end + 4)
	resp := &http.Response{
		Status:        s[9:len(line)],
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: cl,
		Close:         closeConn,
		Body:          http.NoBody,
	}
	if !head && cl > 0 {
		resp.Body = &lengthBody{br: br, left: cl}
	}
	return resp, true
}

// hasCloseToken reports whether a Connection value lists "close", by
// net/http's rules: comma-separated, trimmed of spaces and tabs, compared
// ASCII case-insensitively (no Unicode folding: "cloſe" is not "close").
func hasCloseToken(v string) bool {
	for f := range strings.SplitSeq(v, ",") {
		f = strings.Trim(f, " \t")
		if len(f) != len("close") {
			continue
		}
		match := true
		for i := 0; i < len(f); i++ {
			if c := f[i]; c != "close"[i] && c != "CLOSE"[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func isTokenByte(c byte) bool {
	return c > ' ' && c < 0x7f && strings.IndexByte("()<>@,;:\\\"/[]?={}", c) < 0
}

// lengthBody reads exactly a Content-Length body from the connection.
type lengthBody struct {
	br   *bufio.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *lengthBody) Close() error { return nil }
