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
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// errUpstreamTimeout is the cancellation cause of a route timeout.
var errUpstreamTimeout = errors.New("upstream timeout")

// attempt is one upstream exchange's timers: the route's request and
// backend timeouts, and the read and send timers that cancel it with
// errUpstreamTimeout. stop must be called.
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
