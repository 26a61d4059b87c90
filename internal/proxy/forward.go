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
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// errUpstreamTimeout is the cancellation cause of a route timeout.
var errUpstreamTimeout = errors.New("upstream timeout")

// errBackendTimeout is the cause of the backend timeout of one try
// (Timeouts.Backend), which Retry.BackendTimeouts retries; it is an
// errUpstreamTimeout.
var errBackendTimeout = fmt.Errorf("%w: backend request timeout", errUpstreamTimeout)

// forward sends a request to its destination and relays the answer, steps
// 10 to 12 of the request path (serve.go): buildRequest, roundTrip, then
// copyResponse or upgrade. The set's circuit breaker (backendpolicy.go)
// admits the request first, else it is answered 503; the outcome is
// recorded for outlier detection (outlier.go). A route with a Retry
// policy goes through forwardRetrying (retry.go) instead.
func (d *DataPlane) forward(ex *exchange, r *http.Request, dst destination, isTLS bool, cors corsVerdict) {
	if !dst.b.set.admit() {
		answerOverloaded(ex, dst.rt)
		return
	}
	if dst.rt.retry != nil {
		d.forwardRetrying(ex, r, dst, isTLS, cors)
		return
	}
	defer dst.b.set.done()
	dst.ep.inflight.Add(1)
	defer dst.ep.inflight.Add(-1)
	var at attempt
	at.arm(r.Context(), dst.rt.timeouts, false, false)
	defer at.stop()
	out := d.buildRequest(ex, r, dst, isTLS)
	resp, err := d.roundTrip(&at, r, dst, &out)
	d.recordOutcome(dst, r, &out, resp, err)
	d.respond(ex, r, dst, &at, &out, resp, err, cors)
}

// respond relays the outcome of the last round trip: the error answered
// by whose fault it was, a 101 spliced, else the response copied.
func (d *DataPlane) respond(ex *exchange, r *http.Request, dst destination, at *attempt, out *outbound, resp *http.Response, err error, cors corsVerdict) {
	if err != nil {
		d.answerUpstreamError(ex, r, dst, at, out, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		d.upgrade(ex, r, dst.rt, resp, out.upgrade)
		return
	}
	copyResponse(ex, r, dst, at, resp, cors)
}

// attempt is one upstream exchange's timers: the route's request and
// backend timeouts, and the read and send timers that cancel it with
// errUpstreamTimeout. stop must be called.
type attempt struct {
	ctx       context.Context
	cancel    context.CancelCauseFunc
	timers    []*time.Timer
	cancelers []context.CancelFunc
}

// arm derives the exchange's context from the client's, with the route's
// request and backend timeouts, and a cancel for the read and send timers
// when the route has either. A try of a retried request (retry set) has
// its request timeout in ctx already, bounding every try; withCancel
// gives it a cancel even without timers (retry.go stops the drain of a
// failed answer with it).
func (a *attempt) arm(ctx context.Context, t snapshot.Timeouts, retry, withCancel bool) {
	if d := t.Request.D(); d > 0 && !retry {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, d, errUpstreamTimeout)
		a.cancelers = append(a.cancelers, c)
	}
	if d := t.Backend.D(); d > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeoutCause(ctx, d, errBackendTimeout)
		a.cancelers = append(a.cancelers, c)
	}
	if t.UpstreamRead > 0 || t.UpstreamSend > 0 || withCancel {
		ctx, a.cancel = context.WithCancelCause(ctx)
	}
	a.ctx = ctx
}

// startTimer cancels the exchange with errUpstreamTimeout after d.
func (a *attempt) startTimer(d time.Duration) *time.Timer {
	t := time.AfterFunc(d, func() { a.cancel(errUpstreamTimeout) })
	a.timers = append(a.timers, t)
	return t
}

func (a *attempt) stopTimers() {
	for _, t := range a.timers {
		t.Stop()
	}
}

func (a *attempt) stop() {
	a.stopTimers()
	for _, c := range a.cancelers {
		c()
	}
	if a.cancel != nil {
		a.cancel(nil)
	}
}

// outbound is the upstream request buildRequest prepares from the
// client's, for roundTrip.
type outbound struct {
	// host and path are what the upstream receives (after URLRewrite);
	// rewritten tells whether path differs from the client's.
	host, path string
	rewritten  bool
	// upgrade is the protocol the client asks to switch to ("" for none).
	upgrade string
	// lean sends the request with the lean HTTP/1.1 client (h1client.go);
	// stream is the body it streams, when the fast path did not read it
	// ahead (streamedbody.go).
	lean   bool
	stream *streamedBody
	hdr    upstreamHeaders
	// limited caps the request body at the route's limit; roundTrip sets
	// it when it wraps the body.
	limited *limitedBody
	// replay is the request body of a retried request as retry.go read it
	// (nil: the client's body as it comes); retried marks a try after the
	// first, which sends no mirrors.
	replay  *replayBody
	retried bool
}

// buildRequest applies the request filters (step 10): URL rewrite, then
// the upstream's headers.
func (d *DataPlane) buildRequest(ex *exchange, r *http.Request, dst destination, isTLS bool) outbound {
	rt, b := dst.rt, dst.b
	proto := "http"
	if isTLS {
		proto = "https"
	}
	var out outbound
	out.host, out.path, out.rewritten = rewriteTarget(rt, r)
	out.upgrade = upgradeType(r.Header)
	// An HTTP/2 request always has a Body object, even when its HEADERS
	// frame ended the stream; a zero Content-Length there means no DATA
	// may follow (the HTTP/2 server enforces the declared length).
	noBody := r.ContentLength == 0 && (r.Body == nil || r.Body == http.NoBody || r.ProtoMajor == 2)
	stream := d.leanStream(r, rt)
	out.lean = d.lean != nil && out.upgrade == "" && !b.set.h2c && len(rt.mirrors) == 0 &&
		((noBody && (r.Method == http.MethodGet || r.Method == http.MethodHead)) || d.leanBody(r, rt) || stream != nil)
	if out.lean {
		out.stream = stream
	}
	// Without header filters or Connection tokens the lean client writes
	// the filtered client headers straight to the upstream, no map built.
	out.hdr = upstreamHeaders{in: r.Header, clientIP: clientIP(r.RemoteAddr), proto: proto, fwdHost: r.Host}
	clientCert := isTLS && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && !rt.omitClientCert
	if !out.lean || rt.reqHdr != nil || b.reqHdr != nil || len(r.Header["Connection"]) > 0 || clientCert || ex.authForwarded != nil {
		h := outboundHeader(r.Header, out.hdr.clientIP, proto, r.Host)
		if clientCert {
			setClientCertHeader(h, r.TLS)
		}
		for k, v := range ex.authForwarded {
			h[k] = v
		}
		rt.reqHdr.apply(h)
		b.reqHdr.apply(h)
		if out.upgrade != "" {
			h["Connection"] = []string{"Upgrade"}
			h["Upgrade"] = []string{out.upgrade}
		}
		out.hdr.h = h
	}
	return out
}

// roundTrip sends the request upstream (step 11) under the route's read
// timer: through the lean client, else through http.Transport.
func (d *DataPlane) roundTrip(at *attempt, r *http.Request, dst destination, out *outbound) (*http.Response, error) {
	if t := dst.rt.timeouts.UpstreamRead.D(); t > 0 {
		at.startTimer(t)
	}
	var (
		resp *http.Response
		err  error
	)
	switch {
	case out.stream != nil:
		resp, err = d.lean.roundTripStreamed(at.ctx, dst.ep, r.Method, out.requestURI(r), out.host, &out.hdr, out.stream)
	case out.lean:
		var body *bodyBuffer
		if r.ContentLength > 0 {
			if body, err = d.readLeanBody(r, dst.rt, out); err != nil {
				at.stopTimers()
				return nil, err
			}
		}
		resp, err = d.lean.roundTrip(at.ctx, dst.ep, r.Method, out.requestURI(r), out.host, &out.hdr, body.bytes())
		body.release()
	default:
		resp, err = d.transports(dst.b.set).roundTrip(d.transportRequest(at, r, dst, out), dst.ep)
	}
	at.stopTimers()
	return resp, err
}

// transports are the http.Transport pools of a set's protocol.
func (d *DataPlane) transports(es *endpointSet) *addrTransports {
	if es.h2c {
		return d.h2c
	}
	return d.h1
}

// isUpstreamTLSError reports a failed TLS handshake or verification
// toward an upstream (upstreamtls.go), or a TLS alert the upstream sent
// (in TLS 1.3 a backend that refuses the proxy's client certificate says
// so after the handshake, on the first read).
func isUpstreamTLSError(err error) bool {
	var te *upstreamTLSError
	var ne *net.OpError
	return errors.As(err, &te) || (errors.As(err, &ne) && ne.Op == "remote error")
}

// requestURI is the request target the lean client sends.
func (o *outbound) requestURI(r *http.Request) string {
	uri := r.RequestURI
	switch {
	case o.rewritten:
		uri = (&url.URL{Path: o.path, RawQuery: r.URL.RawQuery}).RequestURI()
	case uri == "" || uri[0] != '/':
		uri = r.URL.RequestURI() // absolute-form or asterisk targets
	}
	return uri
}

// transportRequest is the request http.Transport sends: the client's,
// aimed at the endpoint, its body wrapped (innermost first) in the route's
// limit, the mirrors' tee and the send timer.
func (d *DataPlane) transportRequest(at *attempt, r *http.Request, dst destination, out *outbound) *http.Request {
	rt := dst.rt
	outreq := r.WithContext(at.ctx)
	outreq.RequestURI = ""
	outreq.Close = false
	u := *r.URL
	u.Scheme = "http"
	if dst.ep.tls != nil {
		u.Scheme = "https"
	}
	u.Host = dst.ep.addr
	if out.rewritten {
		u.Path, u.RawPath = out.path, ""
	}
	outreq.URL = &u
	outreq.Host = out.host
	outreq.Header = out.hdr.h
	if r.ContentLength == 0 {
		outreq.Body = nil
	}
	outreq.GetBody = nil
	switch {
	case out.replay != nil:
		// retry.go read the body (through the route's limit) already.
		out.replay.attach(outreq, r)
	case outreq.Body != nil && rt.maxBody > 0:
		out.limited = &limitedBody{rc: outreq.Body, left: rt.maxBody}
		outreq.Body = out.limited
	}
	if len(rt.mirrors) > 0 && !out.retried {
		d.startMirrors(outreq, rt, out.replay)
	}
	if t := rt.timeouts.UpstreamSend.D(); t > 0 && outreq.Body != nil {
		outreq.Body = &sentBody{rc: outreq.Body, timer: at.startTimer(t)}
	}
	return outreq
}

// answerUpstreamError answers a failed round trip by whose fault it was:
// the client's body (413 too large, 408 too slow), the route's timeout
// (504), the client gone (499, nothing sent), the client's body again
// (400 malformed or cut short), else the upstream (502).
func (d *DataPlane) answerUpstreamError(ex *exchange, r *http.Request, dst destination, at *attempt, out *outbound, err error) {
	rt := dst.rt
	switch {
	case out.limited != nil && out.limited.exceeded:
		answer(ex, http.StatusRequestEntityTooLarge, "request body too large")
	case bodyFailed(r, errBodyTimeout):
		ex.Header()["Connection"] = []string{"close"}
		answer(ex, http.StatusRequestTimeout, "request body timed out")
	case errors.Is(context.Cause(at.ctx), errUpstreamTimeout) || (errors.Is(err, context.DeadlineExceeded) && !isConnectFailure(err)):
		// errBackendTimeout is one too. A dial that ran out of its own
		// connect timeout (DialTimeout, ConnectTimeout) is a connect
		// failure, answered 502 below.
		ex.upstreamError(rt, "timeout")
		answer(ex, http.StatusGatewayTimeout, "upstream timed out")
	case r.Context().Err() != nil:
		ex.status = 499 // the client went away; nothing to send
	case bodyFailed(r, nil):
		// The client's body was malformed (a broken chunk) or cut
		// short: the fault is the client's, not the upstream's.
		ex.Header()["Connection"] = []string{"close"}
		answer(ex, http.StatusBadRequest, "malformed or incomplete request body")
	case isUpstreamTLSError(err):
		ex.upstreamError(rt, "tls")
		d.log.Warn("upstream TLS handshake or verification failed", "route", rt.id, "upstream", dst.ep.addr, "error", err)
		answer(ex, http.StatusBadGateway, "upstream TLS handshake or verification failed")
	default:
		kind := "protocol"
		var ne *net.OpError
		if errors.As(err, &ne) && ne.Op == "dial" {
			kind = "connect"
		}
		ex.upstreamError(rt, kind)
		d.log.Debug("upstream error", "route", rt.id, "upstream", dst.ep.addr, "error", err)
		answer(ex, http.StatusBadGateway, "upstream connect or protocol error")
	}
}

// copyResponse relays the upstream's answer: its header through the
// response filters (step 12), its body, flushed chunk by chunk when its
// length is unknown (gRPC, SSE), then its trailers.
func copyResponse(ex *exchange, r *http.Request, dst destination, at *attempt, resp *http.Response, cors corsVerdict) {
	h := responseHeader(ex, r, dst, resp, cors)
	announced := len(resp.Trailer) > 0
	ex.WriteHeader(resp.StatusCode)
	flush := resp.ContentLength == -1
	if flush {
		ex.Flush()
	}
	if err := copyBody(ex, resp.Body, flush); err != nil {
		if errors.Is(context.Cause(at.ctx), errUpstreamTimeout) {
			ex.upstreamError(dst.rt, "timeout")
		}
		if r.Context().Err() == nil {
			// The response is half sent: abort the client stream so it
			// does not mistake a truncated body for a whole one.
			panic(http.ErrAbortHandler)
		}
		return
	}
	for k, v := range resp.Trailer {
		if announced {
			h[k] = v
		} else {
			h[http.TrailerPrefix+k] = v
		}
	}
}

// responseHeader applies the response filters (step 12) and returns the
// client's response header: the upstream's end-to-end headers, the CORS
// headers, the route's then the backend's header modifier, and the
// trailers the upstream announced.
func responseHeader(ex *exchange, r *http.Request, dst destination, resp *http.Response, cors corsVerdict) http.Header {
	kept := proxySetHeaders(ex.Header(), resp.Header)
	h := endToEndHeader(ex, resp.Header)
	for _, kv := range kept {
		if kv.name == "Set-Cookie" || kv.name == "Vary" {
			h[kv.name] = append(slices.Clip(resp.Header[kv.name]), kv.values...)
		} else {
			h[kv.name] = kv.values
		}
	}
	if cors == corsAllowed {
		dst.rt.cors.actual(h, r.Header["Origin"][0])
	}
	dst.rt.respHdr.apply(h)
	dst.b.respHdr.apply(h)
	if n := len(resp.Trailer); n > 0 {
		keys := make([]string, 0, n)
		for k := range resp.Trailer {
			keys = append(keys, k)
		}
		h["Trailer"] = []string{strings.Join(keys, ", ")}
	}
	return h
}

// setHeader is one header field the proxy set on an answer.
type setHeader struct {
	name   string
	values []string
}

// proxySetHeaders are the fields already set on the client's answer
// (before the upstream's was relayed: a session affinity cookie, a policy
// filter's header) that the upstream's header also has, which
// endToEndHeader would replace. responseHeader puts them back: the
// proxy's value wins, except that Set-Cookie and Vary fields add up, the
// upstream's first.
func proxySetHeaders(set, upstream http.Header) []setHeader {
	if len(set) == 0 {
		return nil
	}
	var kept []setHeader
	for k := range upstream {
		if v, ok := set[k]; ok {
			kept = append(kept, setHeader{name: k, values: v})
		}
	}
	return kept
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyBody copies an upstream body to the client: in the kernel when it
// can (spliceBody), else through a pooled buffer.
func copyBody(w *exchange, body io.Reader, flush bool) error {
	if !flush {
		if err := spliceBody(w, body); err != nil {
			return err
		}
	}
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
