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
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// The proxy has two paths. The L7 path, below, serves the requests of HTTP
// and HTTPS listeners. The L4 path serves the stream listeners: TLS
// (routed by the SNI of the ClientHello, passed through unopened or
// terminated), TCP and UDP. It reads no HTTP and has no filters: a TLS or
// TCP connection loads the state once, is routed (TLS: by SNI, read by
// crypto/tls over a recording connection, stream_sni.go), picks a backend
// by weight and an endpoint (balance.go, shared with step 9 below), dials
// it and is spliced both ways until each side has closed its direction or
// it was idle for StreamIdleTimeout; what cannot be routed (a TLS
// ClientHello no route serves included), picked or dialed is reset.
// stream_tcp.go lists its steps in order; stream_udp.go does the same for
// UDP datagrams, in sessions keyed by the client's address. stream.go
// compiles both.
//
// The request path. Every request, whichever server parsed it (the fast
// path of fastpath.go, or net/http through portHandler), is served by
// DataPlane.serve, which applies these steps in this order; a step that
// answers ends the request.
//
//  0. at accept, a port whose ClientTraffic asks for PROXY protocol reads
//     the header from trusted peers and refuses the others
//     (proxyprotocol.go); at parse, header fields whose names hold "_"
//     are dropped unless the port's ClientTraffic allows or rejects them
//     (dropUnderscoreHeaders; parseSimpleRequest on the fast path), and
//     a request body gets its read timeout (timedBody, body.go);
//  1. method refusal: CONNECT and TRACE get 405 (refuseMethod);
//  2. asterisk form: OPTIONS * gets 200, any other method 400
//     (answerAsterisk);
//  3. normalisation of the path: a malformed one gets 400, encoded
//     slashes a 307, a 400, or are decoded or kept as the port's
//     ClientTraffic says (normalizeOn, normalize.go); underscore header
//     fields a port rejects get 400;
//  4. HTTPS only: a request whose Host selects another listener of the
//     port than its connection's SNI did gets 421 (misdirected,
//     misdirected.go); then host and route match, else 404
//     (listenerRouter.lookup, router.go); then the policy filters of
//     policies.go: client IP, IP access (403), and after the CORS
//     preflight rate limit (429), basic auth, JWT and external auth;
//  5. CORS: a preflight is answered 204 (corsPolicy.check, cors.go);
//  6. redirect, with the route's response header filter (writeRedirect,
//     redirect.go);
//  7. direct response, with the route's response header filter
//     (writeDirect, direct.go);
//  8. body limit on a declared Content-Length: 413 (handle; a body
//     without one is cut in step 11 by limitedBody, body.go);
//  9. backend pick by weight, then endpoint pick: 500 for an invalid
//     backend, 503 for no endpoints (pickDestination, balance.go);
// 10. request header filters (buildRequest, forward.go): URL rewrite
//     (rewrite.go); hop-by-hop and client-set forwarding headers out
//     (X-SSL-Client-Cert among them), X-Forwarded-* in (hopheaders.go),
//     the verified client certificate in X-SSL-Client-Cert
//     (clientauth.go); the route's, then the backend's header modifier
//     (headers.go);
// 11. forward (roundTrip, forward.go): mirrors (mirror.go), the route's
//     timeouts, the round trip, over TLS to a set with upstream TLS
//     (upstreamtls.go). A route with a retry policy (retry.go) reads a
//     body that fits the replay buffer first; while a try's status,
//     connection error or backend timeout is one the policy retries,
//     attempts are left and the request timeout allows, the try's answer
//     is discarded and, after the backoff, steps 9 to 11 run again
//     (another endpoint preferred); the last try's outcome goes on. A
//     failure is answered 413, 408, 504, 400 or 502 by whose fault it
//     was (answerUpstreamError; 502 too for a failed upstream TLS
//     handshake or verification); a 101 answer is spliced (upgrade.go);
// 12. response header filters (responseHeader, forward.go): hop-by-hop
//     headers out, CORS headers (cors.go), the route's, then the
//     backend's header modifier; then the body and its trailers
//     (copyResponse).

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
	if h.d.portTraffic(h.port).dropsUnderscores() {
		dropUnderscoreHeaders(r.Header) // else step 3 applies the port's policy (clienttraffic.go)
	}
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
			if awaitsContinue(r) {
				w = &continueGuard{ResponseWriter: w, body: body}
			}
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

// exchange is the per-request bookkeeping, pooled.
type exchange struct {
	w           http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	upstream    string
	// retries counts the tries sent again (retry.go).
	retries int32
	// clientIP is the client address the policies see (clientip.go).
	clientIP netip.Addr
	// authForwarded are forwarding headers (X-Forwarded-User, ...) an
	// authorization server set for the upstream: the proxy strips every
	// client-sent header of those names, so they are applied after that
	// (buildRequest).
	authForwarded http.Header
	// upstreamName is the endpoint set the request went to, errKind why no
	// upstream answered it (the access log's upstream and error fields).
	upstreamName, errKind string
	// requestID is the request's X-Request-Id (requestid.go).
	requestID string
	// traceID is the trace of the request's sampled span (tracing.go).
	traceID trace.TraceID
}

// upstreamError counts an upstream failure of kind under rt and records it
// for the access log.
func (e *exchange) upstreamError(rt *route, kind string) {
	e.errKind = kind
	if rt.stats != nil && rt.stats.m != nil {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, kind).Inc()
	}
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

func (e *exchange) Header() http.Header { return e.w.Header() }

// WriteHeader records the status; informational answers (except 101)
// pass through without being the status.
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

// serve serves one request: steps 1 to 4 of the request path, then the
// route's (handle); the deferred record counts and logs it either way,
// and ends its span when it is traced (tracing.go).
func (d *DataPlane) serve(w http.ResponseWriter, r *http.Request, port int32, isTLS bool) {
	start := time.Now()
	ex := exchangePool.Get().(*exchange)
	*ex = exchange{w: w, requestID: requestID(r)}
	var span trace.Span
	if d.tracer != nil {
		span = d.startSpan(start, r, ex)
	}
	var lr *listenerRouter
	if st := d.state.Load(); st != nil {
		lr = st.router.ports[port]
	}
	var rt *route
	defer func() {
		d.record(start, r, ex, lr, rt)
		if span != nil {
			endSpan(span, r, ex, lr, rt, port, isTLS)
		}
		ex.w = nil
		exchangePool.Put(ex)
	}()
	if refuseMethod(ex, r) || answerAsterisk(ex, r) || !d.normalizeOn(ex, r, lr) || (isTLS && misdirected(ex, r, lr)) {
		return
	}
	if rt = lr.lookup(r); rt == nil {
		ex.errKind = "no_route"
		answer(ex, http.StatusNotFound, "no route matches this request")
		return
	}
	d.handle(ex, r, rt, isTLS)
}

// record counts and logs one finished request: under its route, else
// under its listener's not-found route.
func (d *DataPlane) record(start time.Time, r *http.Request, ex *exchange, lr *listenerRouter, rt *route) {
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
		stats.observe(time.Since(start).Seconds())
	}
	if d.alog != nil && !logOff {
		d.alog.log(start, listener, r, ex, id)
	}
}

// refuseMethod answers CONNECT and TRACE (step 1). Neither is relayed:
// CONNECT would open a tunnel past the routes, TRACE echoes credentials
// back (nginx refuses both).
func refuseMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodConnect && r.Method != http.MethodTrace {
		return false
	}
	answer(w, http.StatusMethodNotAllowed, "method not allowed")
	return true
}

// answerAsterisk answers a request in asterisk form (step 2). The form
// belongs to OPTIONS alone (RFC 9112 §3.2.4), which is answered here: it
// asks about the server, not a route.
func answerAsterisk(w http.ResponseWriter, r *http.Request) bool {
	if r.RequestURI != "*" && r.URL.Path != "*" {
		return false
	}
	if r.Method == http.MethodOptions {
		w.Header()["Content-Length"] = []string{"0"}
		w.WriteHeader(http.StatusOK)
		return true
	}
	w.Header()["Connection"] = []string{"close"}
	answer(w, http.StatusBadRequest, "the asterisk form is for OPTIONS only")
	return true
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

// handle runs a matched route's filters, steps 5 to 12.
func (d *DataPlane) handle(ex *exchange, r *http.Request, rt *route, isTLS bool) {
	if !d.admitBeforeCORS(ex, r, rt) {
		return
	}
	cors := rt.cors.check(ex, r)
	if cors == corsPreflightAnswered || !d.admitAfterCORS(ex, r, rt) {
		return
	}
	switch {
	case rt.redirect != nil:
		writeRedirect(ex, r, rt, isTLS)
		return
	case rt.direct != nil:
		writeDirect(ex, rt)
		return
	case rt.maxBody > 0 && r.ContentLength > rt.maxBody:
		answer(ex, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	dst, ok := pickDestination(ex, r, rt)
	if !ok {
		return
	}
	ex.upstream, ex.upstreamName = dst.ep.addr, dst.b.set.name
	if c := rt.policies.compression; c != nil {
		defer c.wrap(ex, r)()
	}
	d.forward(ex, r, dst, isTLS, cors)
}
