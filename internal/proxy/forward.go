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
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

var (
	errBodyTooLarge    = errors.New("request body larger than the route allows")
	errUpstreamTimeout = errors.New("upstream timeout")
)

// portHandler serves one listener port.
type portHandler struct {
	d    *DataPlane
	port int32
	tls  bool
}

// ServeHTTP serves what net/http parsed: requests the fast path handed
// off, TLS listeners and HTTP/2.
func (h *portHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.d.closeWhenDraining(w)
	dropUnderscoreHeaders(r.Header)
	var body *timedBody
	if r.Body != nil && r.Body != http.NoBody {
		body = &timedBody{rc: r.Body, ctl: http.NewResponseController(w), timeout: h.d.opts.RequestBodyTimeout}
		r.Body = body
	}
	if r.ProtoMajor == 1 {
		if len(r.TransferEncoding) > 0 {
			// net/http drops a Content-Length that came with
			// Transfer-Encoding, so whether both came cannot be told:
			// close after responding, as RFC 9112 §6.1 requires when they
			// did.
			w.Header()["Connection"] = []string{"close"}
		}
		if body != nil {
			// net/http reads what the handler left of the body before the
			// next request (up to 256 KiB, else it closes): bound that.
			defer body.boundDrain(h.d.opts.BodyDrainTimeout)
		}
	}
	h.d.serve(w, r, h.port, h.tls)
}

// dropUnderscoreHeaders removes header fields whose names contain "_", as
// nginx does by default (underscores_in_headers off): backends that map
// "-" and "_" to the same variable (CGI, PHP, many frameworks) must not
// receive an X_Forwarded_For the proxy never vetted.
func dropUnderscoreHeaders(h http.Header) {
	for k := range h {
		if strings.IndexByte(k, '_') >= 0 {
			delete(h, k)
		}
	}
}

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
}

func (b *timedBody) Read(p []byte) (int, error) {
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
	tb, ok := r.Body.(*timedBody)
	if !ok {
		return false
	}
	if want == errBodyTimeout {
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

// exchange is the per-request bookkeeping, pooled.
type exchange struct {
	w           http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	upstream    string
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

func (e *exchange) Header() http.Header { return e.w.Header() }

func (e *exchange) WriteHeader(code int) {
	if e.wroteHeader {
		return
	}
	if code >= 200 || code == http.StatusSwitchingProtocols {
		e.wroteHeader = true
		e.status = code
	}
	e.w.WriteHeader(code)
}

func (e *exchange) Write(p []byte) (int, error) {
	if !e.wroteHeader {
		e.WriteHeader(http.StatusOK)
	}
	n, err := e.w.Write(p)
	e.bytes += int64(n)
	return n, err
}

func (e *exchange) Flush() {
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// adoptHeader hands h to a writer that can take it as its header map
// instead of copying it (the fast path's writer).
func (e *exchange) adoptHeader(h http.Header) bool {
	if fw, ok := e.w.(*fastWriter); ok && !fw.wroteHeader && len(fw.h) == 0 {
		fw.h = h
		return true
	}
	return false
}

// Unwrap lets http.ResponseController reach the connection (hijack for
// upgrades).
func (e *exchange) Unwrap() http.ResponseWriter { return e.w }

func (d *DataPlane) serve(w http.ResponseWriter, r *http.Request, port int32, isTLS bool) {
	start := time.Now()
	ex := exchangePool.Get().(*exchange)
	*ex = exchange{w: w}
	var rt *route
	var lr *listenerRouter
	if st := d.state.Load(); st != nil {
		lr = st.router.ports[port]
	}
	defer func() {
		if ex.status == 0 {
			ex.status = http.StatusOK
		}
		stats := (*routeStats)(nil)
		logOff := false
		id, listener := "", ""
		if rt != nil {
			stats, logOff, id, listener = rt.stats, rt.accessLogOff, rt.id, rt.listener
		} else if lr != nil {
			stats, listener = lr.notFound.stats, lr.name
		}
		if stats != nil {
			stats.inc(r.Method, ex.status)
			stats.duration.Observe(time.Since(start).Seconds())
		}
		if d.alog != nil && !logOff {
			d.alog.log(start, listener, r, ex, id)
		}
		ex.w = nil
		exchangePool.Put(ex)
	}()
	if r.Method == http.MethodConnect || r.Method == http.MethodTrace {
		// Neither is relayed: CONNECT would open a tunnel past the
		// routes, TRACE echoes credentials back (nginx refuses both).
		answer(ex, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if r.RequestURI == "*" || r.URL.Path == "*" {
		// The asterisk form belongs to OPTIONS alone (RFC 9112 §3.2.4),
		// which is answered here: it asks about the server, not a route.
		if r.Method == http.MethodOptions {
			ex.Header()["Content-Length"] = []string{"0"}
			ex.WriteHeader(http.StatusOK)
			return
		}
		ex.Header()["Connection"] = []string{"close"}
		answer(ex, http.StatusBadRequest, "the asterisk form is for OPTIONS only")
		return
	}
	if !d.normalizeRequest(ex, r) {
		return
	}
	if lr != nil {
		if vh := lr.host(r.Host); vh != nil {
			rt = vh.match(r.URL.Path, r)
		}
	}
	if rt == nil {
		answer(ex, http.StatusNotFound, "no route matches this request")
		return
	}
	d.handle(ex, r, rt, isTLS)
}

// answer writes a short plain-text response.
func answer(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["Content-Length"] = []string{strconv.Itoa(len(msg) + 1)}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

func (d *DataPlane) handle(ex *exchange, r *http.Request, rt *route, isTLS bool) {
	var corsHeaders bool
	if rt.cors != nil {
		if origin := r.Header["Origin"]; len(origin) > 0 {
			allowed := rt.cors.allows(origin[0])
			if r.Method == http.MethodOptions && len(r.Header["Access-Control-Request-Method"]) > 0 {
				if allowed {
					rt.cors.preflight(ex.Header(), origin[0], r)
				}
				ex.WriteHeader(http.StatusNoContent)
				return
			}
			corsHeaders = allowed
		}
	}
	if rd := rt.redirect; rd != nil {
		loc := redirectLocation(rd, rt, r, isTLS)
		ex.Header()["Location"] = []string{loc}
		rt.respHdr.apply(ex.Header())
		ex.WriteHeader(rd.StatusCode)
		return
	}
	if dr := rt.direct; dr != nil {
		rt.respHdr.apply(ex.Header())
		body := dr.Body
		if body == "" {
			body = http.StatusText(dr.StatusCode)
		}
		answer(ex, dr.StatusCode, body)
		return
	}
	if rt.maxBody > 0 && r.ContentLength > rt.maxBody {
		answer(ex, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	b := rt.pickBackend()
	if b == nil || b.invalid {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "invalid_backend").Inc()
		answer(ex, http.StatusInternalServerError, "no valid backend for this route")
		return
	}
	ep := b.set.pick()
	if ep == nil {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "no_endpoints").Inc()
		answer(ex, http.StatusServiceUnavailable, "no healthy upstream")
		return
	}
	ex.upstream = ep.addr
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	d.forward(ex, r, rt, b, ep, isTLS, corsHeaders)
}

func (rt *route) pickBackend() *backend {
	switch {
	case len(rt.backends) == 0 || rt.totalWeight <= 0:
		return nil
	case len(rt.backends) == 1:
		return &rt.backends[0]
	}
	n := rand.Int64N(rt.totalWeight)
	for i, c := range rt.cumWeights {
		if n < c {
			return &rt.backends[i]
		}
	}
	return &rt.backends[len(rt.backends)-1]
}

func (es *endpointSet) pick() *endpoint {
	n := len(es.eps)
	switch {
	case n == 0:
		return nil
	case n == 1:
		return es.eps[0]
	case es.leastRequest:
		// Power of two choices: two distinct random endpoints, the one with
		// fewer requests in flight wins.
		i, j := rand.IntN(n), rand.IntN(n-1)
		if j >= i {
			j++
		}
		a, b := es.eps[i], es.eps[j]
		if b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
	return es.eps[es.rr.Add(1)%uint64(n)]
}

// hopHeaders are removed in both directions (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func isHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// isClientForwarding reports headers a client must not be able to set.
func isClientForwarding(k string) bool {
	return k == "Forwarded" || k == "X-Real-Ip" || strings.HasPrefix(k, "X-Forwarded-")
}

// Shared, never mutated: header modifiers copy before appending.
var (
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

// outboundHeader copies the request headers for the upstream: no
// hop-by-hop headers, no client-supplied forwarding headers, and fresh
// X-Forwarded-For/Proto/Host.
func outboundHeader(in http.Header, clientIP, proto, host string) http.Header {
	out := make(http.Header, len(in)+3)
	var conn []string
	if c := in["Connection"]; len(c) > 0 {
		for _, v := range c {
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					conn = append(conn, http.CanonicalHeaderKey(f))
				}
			}
		}
	}
outer:
	for k, v := range in {
		if isHop(k) || isClientForwarding(k) {
			continue
		}
		for _, c := range conn {
			if c == k {
				continue outer
			}
		}
		out[k] = v
	}
	for _, v := range in["Te"] {
		if strings.Contains(strings.ToLower(v), "trailers") {
			out["Te"] = []string{"trailers"}
			break
		}
	}
	if clientIP != "" {
		out["X-Forwarded-For"] = []string{clientIP}
	}
	if proto == "https" {
		out["X-Forwarded-Proto"] = protoHTTPS
	} else {
		out["X-Forwarded-Proto"] = protoHTTP
	}
	if host != "" {
		out["X-Forwarded-Host"] = []string{host}
	}
	return out
}

// upgradeType is the protocol a request asks to switch to, when the proxy
// relays that switch: WebSocket only. Any other Upgrade (h2c above all,
// which would tunnel later requests past the routes) is dropped with the
// other hop-by-hop headers and the request is forwarded as a plain one.
func upgradeType(h http.Header) string {
	conn := h["Connection"]
	for _, v := range conn {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "upgrade") {
				if u := h["Upgrade"]; len(u) == 1 && strings.EqualFold(strings.TrimSpace(u[0]), "websocket") {
					return u[0]
				}
			}
		}
	}
	return ""
}

func clientIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// timeoutCtx arms the route's upstream timers. Cancel must be called.
type attempt struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timers    []*time.Timer
	cancelers []context.CancelFunc
}

func (a *attempt) stop() {
	for _, t := range a.timers {
		t.Stop()
	}
	for _, c := range a.cancelers {
		c()
	}
	if a.cancel != nil {
		a.cancel(nil)
	}
}

func (d *DataPlane) forward(ex *exchange, r *http.Request, rt *route, b *backend, ep *endpoint, isTLS, corsHeaders bool) {
	ctx := r.Context()
	var at attempt
	if t := rt.timeouts.Request.D(); t > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, t, errUpstreamTimeout)
		at.cancelers = append(at.cancelers, c)
	}
	if t := rt.timeouts.Backend.D(); t > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, t, errUpstreamTimeout)
		at.cancelers = append(at.cancelers, c)
	}
	if rt.timeouts.UpstreamRead > 0 || rt.timeouts.UpstreamSend > 0 {
		ctx, at.cancel = context.WithCancelCause(ctx)
	}
	at.ctx = ctx
	defer at.stop()

	proto := "http"
	if isTLS {
		proto = "https"
	}
	host := r.Host
	path, rewritten := r.URL.Path, false
	if rw := rt.rewrite; rw != nil {
		if rw.Hostname != "" {
			host = rw.Hostname
		}
		if rw.Path != nil {
			path, rewritten = rewritePath(rw.Path, rt, r.URL.Path), true
		}
	}
	up := upgradeType(r.Header)
	noBody := r.ContentLength == 0 && (r.Body == nil || r.Body == http.NoBody)
	lean := d.lean != nil && noBody && up == "" && !b.set.h2c && len(rt.mirrors) == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	// Without header filters or Connection tokens the lean client writes
	// the filtered client headers straight to the upstream, no map built.
	uh := upstreamHeaders{in: r.Header, clientIP: clientIP(r.RemoteAddr), proto: proto, fwdHost: r.Host}
	if !lean || rt.reqHdr != nil || b.reqHdr != nil || len(r.Header["Connection"]) > 0 {
		uh.h = outboundHeader(r.Header, uh.clientIP, proto, r.Host)
		rt.reqHdr.apply(uh.h)
		b.reqHdr.apply(uh.h)
		if up != "" {
			uh.h["Connection"] = []string{"Upgrade"}
			uh.h["Upgrade"] = []string{up}
		}
	}
	if t := rt.timeouts.UpstreamRead.D(); t > 0 {
		at.timers = append(at.timers, time.AfterFunc(t, func() { at.cancel(errUpstreamTimeout) }))
	}

	var (
		resp    *http.Response
		err     error
		limited *limitedBody
	)
	if lean {
		uri := r.RequestURI
		switch {
		case rewritten:
			uri = (&url.URL{Path: path, RawQuery: r.URL.RawQuery}).RequestURI()
		case uri == "" || uri[0] != '/':
			uri = r.URL.RequestURI() // absolute-form or asterisk targets
		}
		resp, err = d.lean.roundTrip(ctx, ep.addr, r.Method, uri, host, &uh)
	} else {
		outreq := r.WithContext(ctx)
		outreq.RequestURI = ""
		outreq.Close = false
		u := *r.URL
		u.Scheme = "http"
		u.Host = ep.addr
		if rewritten {
			u.Path, u.RawPath = path, ""
		}
		outreq.URL = &u
		outreq.Host = host
		outreq.Header = uh.h
		if r.ContentLength == 0 {
			outreq.Body = nil
		}
		outreq.GetBody = nil
		if outreq.Body != nil && rt.maxBody > 0 {
			limited = &limitedBody{rc: outreq.Body, left: rt.maxBody}
			outreq.Body = limited
		}
		if len(rt.mirrors) > 0 {
			d.startMirrors(outreq, rt)
		}
		if t := rt.timeouts.UpstreamSend.D(); t > 0 && outreq.Body != nil {
			sb := &sentBody{rc: outreq.Body}
			sb.timer = time.AfterFunc(t, func() { at.cancel(errUpstreamTimeout) })
			at.timers = append(at.timers, sb.timer)
			outreq.Body = sb
		}
		tr := d.h1
		if b.set.h2c {
			tr = d.h2c
		}
		resp, err = tr.RoundTrip(outreq)
	}
	for _, t := range at.timers {
		t.Stop()
	}
	if err != nil {
		switch {
		case limited != nil && limited.exceeded:
			answer(ex, http.StatusRequestEntityTooLarge, "request body too large")
		case bodyFailed(r, errBodyTimeout):
			ex.Header()["Connection"] = []string{"close"}
			answer(ex, http.StatusRequestTimeout, "request body timed out")
		case errors.Is(context.Cause(ctx), errUpstreamTimeout) || errors.Is(err, context.DeadlineExceeded):
			rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "timeout").Inc()
			answer(ex, http.StatusGatewayTimeout, "upstream timed out")
		case r.Context().Err() != nil:
			ex.status = 499 // the client went away; nothing to send
		case bodyFailed(r, nil):
			// The client's body was malformed (a broken chunk) or cut
			// short: the fault is the client's, not the upstream's.
			ex.Header()["Connection"] = []string{"close"}
			answer(ex, http.StatusBadRequest, "malformed or incomplete request body")
		default:
			kind := "protocol"
			var ne *net.OpError
			if errors.As(err, &ne) && ne.Op == "dial" {
				kind = "connect"
			}
			rt.stats.m.upstreamErrors.WithLabelValues(rt.id, kind).Inc()
			d.log.Debug("upstream error", "route", rt.id, "upstream", ep.addr, "error", err)
			answer(ex, http.StatusBadGateway, "upstream connect or protocol error")
		}
		return
	}
	defer func() { _ = resp.Body.Close() }()

	if resp.StatusCode == http.StatusSwitchingProtocols {
		d.upgrade(ex, r, rt, resp, up)
		return
	}
	respConn := resp.Header["Connection"]
	dst := ex.Header()
	if len(dst) == 0 && ex.adoptHeader(resp.Header) {
		// The fast path takes the upstream's header map as its own.
		dst = resp.Header
		for k := range dst {
			if isHop(k) {
				delete(dst, k)
			}
		}
	} else {
		for k, v := range resp.Header {
			if isHop(k) {
				continue
			}
			dst[k] = v
		}
	}
	for _, c := range respConn {
		for _, f := range strings.Split(c, ",") {
			delete(dst, http.CanonicalHeaderKey(strings.TrimSpace(f)))
		}
	}
	if corsHeaders {
		rt.cors.actual(dst, r.Header["Origin"][0])
	}
	rt.respHdr.apply(dst)
	b.respHdr.apply(dst)
	announced := len(resp.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		dst["Trailer"] = []string{strings.Join(keys, ", ")}
	}
	ex.WriteHeader(resp.StatusCode)
	// Bodies of unknown length stream: flush every chunk (gRPC, SSE).
	flush := resp.ContentLength == -1
	if flush {
		ex.Flush()
	}
	if err := copyBody(ex, resp.Body, flush); err != nil {
		if errors.Is(context.Cause(ctx), errUpstreamTimeout) {
			rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "timeout").Inc()
		}
		if r.Context().Err() == nil {
			// The response is half sent: abort the client stream so it
			// does not mistake a truncated body for a whole one.
			panic(http.ErrAbortHandler)
		}
		return
	}
	if len(resp.Trailer) > 0 {
		for k, v := range resp.Trailer {
			if announced > 0 {
				dst[k] = v
			} else {
				dst[http.TrailerPrefix+k] = v
			}
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func copyBody(w *exchange, body io.Reader, flush bool) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if flush {
				w.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
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

// upgrade splices a client connection to an upstream that switched
// protocols (WebSocket).
func (d *DataPlane) upgrade(ex *exchange, r *http.Request, rt *route, resp *http.Response, reqUp string) {
	resUp := upgradeType(resp.Header)
	backConn, ok := resp.Body.(io.ReadWriteCloser)
	if reqUp == "" || !strings.EqualFold(reqUp, resUp) || !ok {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "protocol").Inc()
		answer(ex, http.StatusBadGateway, "upstream switched to an unexpected protocol")
		return
	}
	conn, brw, err := http.NewResponseController(ex.w).Hijack()
	if err != nil {
		answer(ex, http.StatusInternalServerError, "cannot switch protocols on this connection")
		return
	}
	defer func() { _ = conn.Close() }()
	ex.status, ex.wroteHeader = http.StatusSwitchingProtocols, true
	rt.respHdr.apply(resp.Header)
	resp.Body = nil
	if err := resp.Write(brw); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		n, _ := io.Copy(conn, backConn)
		ex.bytes += n
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(backConn, brw)
		done <- struct{}{}
	}()
	<-done
	_ = backConn.Close()
	_ = conn.Close()
	<-done
}

// redirectLocation builds the Location of a RequestRedirect filter. An
// unset port is the well-known port of a set scheme, else the listener's
// external port; well-known ports are omitted.
func redirectLocation(rd *snapshot.Redirect, rt *route, r *http.Request, isTLS bool) string {
	scheme := "http"
	if isTLS {
		scheme = "https"
	}
	port := rt.extPort
	if rd.Scheme != "" {
		scheme = rd.Scheme
		port = wellKnownPort(scheme)
	}
	if rd.Port != 0 {
		port = rd.Port
	}
	host := rd.Hostname
	if host == "" {
		host = trimHost(r.Host)
	}
	path := r.URL.EscapedPath()
	if rd.Path != nil {
		path = rewritePath(rd.Path, rt, r.URL.Path)
		path = (&url.URL{Path: path}).EscapedPath()
	}
	var sb strings.Builder
	sb.WriteString(scheme)
	sb.WriteString("://")
	sb.WriteString(host)
	if port != wellKnownPort(scheme) {
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(int(port)))
	}
	sb.WriteString(path)
	if r.URL.RawQuery != "" {
		sb.WriteByte('?')
		sb.WriteString(r.URL.RawQuery)
	}
	return sb.String()
}

func wellKnownPort(scheme string) int32 {
	if scheme == "https" {
		return 443
	}
	return 80
}

// rewritePath applies a path modifier to the request path.
func rewritePath(pm *snapshot.PathModifier, rt *route, path string) string {
	switch pm.Type {
	case snapshot.ReplaceFullPath:
		return pm.Value
	case snapshot.ReplacePrefixMatch:
		return replacePrefix(path, rt.prefix, pm.Value)
	case snapshot.ReplaceRegex:
		if rt.pathRE == nil {
			return path
		}
		m := rt.pathRE.FindStringSubmatchIndex(path)
		if m == nil {
			return path
		}
		return string(rt.pathRE.ExpandString(nil, pm.Value, path, m))
	}
	return path
}

// replacePrefix swaps the matched (normalised) prefix for value, keeping
// exactly one slash at the seam.
func replacePrefix(path, prefix, value string) string {
	rest := path
	if len(path) >= len(prefix) {
		rest = path[len(prefix):]
	}
	if strings.HasSuffix(value, "/") && strings.HasPrefix(rest, "/") {
		rest = rest[1:]
	}
	out := value + rest
	if out == "" {
		return "/"
	}
	if out[0] != '/' {
		out = "/" + out
	}
	return out
}

func (p *corsPolicy) origin(origin string) string {
	if p.anyOrigin && !p.credentials {
		return "*"
	}
	return origin
}

func (p *corsPolicy) preflight(h http.Header, origin string, r *http.Request) {
	h["Access-Control-Allow-Origin"] = []string{p.origin(origin)}
	h["Vary"] = []string{"Origin"}
	if p.credentials {
		h["Access-Control-Allow-Credentials"] = []string{"true"}
	}
	methods := p.methods
	if p.anyMethod {
		methods = r.Header.Get("Access-Control-Request-Method")
	}
	if methods != "" {
		h["Access-Control-Allow-Methods"] = []string{methods}
	}
	headers := p.headers
	if p.anyHeader {
		headers = r.Header.Get("Access-Control-Request-Headers")
	}
	if headers != "" {
		h["Access-Control-Allow-Headers"] = []string{headers}
	}
	if p.maxAge != "" {
		h["Access-Control-Max-Age"] = []string{p.maxAge}
	}
	// Gateway API expects exposeHeaders on the preflight answer too
	// (conformance HTTPRouteCORS).
	if p.expose != "" {
		h["Access-Control-Expose-Headers"] = []string{p.expose}
	}
}

func (p *corsPolicy) actual(h http.Header, origin string) {
	h["Access-Control-Allow-Origin"] = []string{p.origin(origin)}
	h["Vary"] = append(h["Vary"][:len(h["Vary"]):len(h["Vary"])], "Origin")
	if p.credentials {
		h["Access-Control-Allow-Credentials"] = []string{"true"}
	}
	if p.expose != "" {
		h["Access-Control-Expose-Headers"] = []string{p.expose}
	}
}

// mirrorBody tees the upstream request body into a capped buffer and
// sends the mirrors once the body has been read completely.
type mirrorBody struct {
	rc       io.ReadCloser
	buf      []byte
	cap      int
	overflow bool
	done     atomic.Bool
	send     func(body []byte, overflow bool)
}

func (m *mirrorBody) Read(p []byte) (int, error) {
	n, err := m.rc.Read(p)
	if n > 0 && !m.overflow {
		if len(m.buf)+n > m.cap {
			m.overflow = true
			m.buf = nil
		} else {
			m.buf = append(m.buf, p[:n]...)
		}
	}
	if err == io.EOF && m.done.CompareAndSwap(false, true) {
		m.send(m.buf, m.overflow)
	}
	return n, err
}

func (m *mirrorBody) Close() error { return m.rc.Close() }

func (d *DataPlane) startMirrors(outreq *http.Request, rt *route) {
	var targets []*endpointSet
	for _, mi := range rt.mirrors {
		if mi.set == nil || len(mi.set.eps) == 0 {
			continue
		}
		if mi.denom > 0 && rand.Int32N(mi.denom) >= mi.num {
			continue
		}
		targets = append(targets, mi.set)
	}
	if len(targets) == 0 {
		return
	}
	method, host, path, query := outreq.Method, outreq.Host, outreq.URL.Path, outreq.URL.RawQuery
	hdr := outreq.Header.Clone()
	send := func(body []byte, truncated bool) {
		for _, es := range targets {
			if truncated {
				d.m.mirrorsDropped.Inc()
				continue
			}
			ep := es.pick()
			select {
			case d.mirrorSem <- struct{}{}:
			default:
				d.m.mirrorsDropped.Inc()
				continue
			}
			go func(es *endpointSet, ep *endpoint) {
				defer func() { <-d.mirrorSem }()
				d.sendMirror(es, ep, method, host, path, query, hdr.Clone(), body)
			}(es, ep)
		}
	}
	if outreq.Body == nil {
		send(nil, false)
		return
	}
	outreq.Body = &mirrorBody{rc: outreq.Body, cap: d.opts.MirrorBodyCap, send: send}
}

func (d *DataPlane) sendMirror(es *endpointSet, ep *endpoint, method, host, path, query string, hdr http.Header, body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.MirrorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+ep.addr, nil)
	if err != nil {
		return
	}
	req.URL.Path, req.URL.RawQuery, req.Host, req.Header = path, query, host, hdr
	if len(body) > 0 {
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		req.ContentLength = int64(len(body))
	}
	tr := d.h1
	if es.h2c {
		tr = d.h2c
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}
