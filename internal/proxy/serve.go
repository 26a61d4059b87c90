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
	"strconv"
	"strings"
	"sync"
	"time"
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
