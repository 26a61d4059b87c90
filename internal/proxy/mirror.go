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
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// mirror is one RequestMirror filter: its endpoints and the fraction of
// requests it receives (all when denom is 0).
type mirror struct {
	set        *endpointSet
	num, denom int32
}

// compileMirrors resolves a route's mirrors to their endpoint sets.
func compileMirrors(in []snapshot.Mirror, set func(name string) *endpointSet) []mirror {
	var out []mirror
	for _, mi := range in {
		out = append(out, mirror{set: set(mi.EndpointSet), num: mi.Numerator, denom: mi.Denominator})
	}
	return out
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

// Read reads the body, keeps a copy while it fits the cap, and sends the
// mirrors at its end.
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

// startMirrors sends copies of the upstream request to the route's
// mirrors (step 11 of the request path, serve.go): at once for a request
// without a body or whose body a retry policy read already (rb, may be
// nil), else once the body was read to its end, and not at all when it
// was larger than MirrorBodyCap. A retried request mirrors its first try
// only.
func (d *DataPlane) startMirrors(outreq *http.Request, rt *route, rb *replayBody) {
	targets := rt.mirrorTargets()
	if len(targets) == 0 {
		return
	}
	mc := &mirrorCopy{
		method: outreq.Method, host: outreq.Host, path: outreq.URL.Path, query: outreq.URL.RawQuery,
		hdr: outreq.Header.Clone(),
	}
	send := func(body []byte, truncated bool) { d.sendMirrors(targets, mc, body, truncated) }
	switch {
	case outreq.Body == nil:
		send(nil, false)
		return
	case rb != nil && rb.whole:
		send(rb.buf, len(rb.buf) > d.opts.MirrorBodyCap)
		return
	}
	outreq.Body = &mirrorBody{rc: outreq.Body, cap: d.opts.MirrorBodyCap, send: send}
}

// mirrorTargets draws the mirrors this request goes to: each with
// endpoints, by its fraction.
func (rt *route) mirrorTargets() []*endpointSet {
	var targets []*endpointSet
	for _, mi := range rt.mirrors {
		if mi.set == nil || len(mi.set.eps) == 0 {
			continue
		}
		if mi.denom > 0 && rand.Int32N(mi.denom) >= mi.num { //nolint:gosec // G404: mirror sampling needs spread, not unpredictability
			continue
		}
		targets = append(targets, mi.set)
	}
	return targets
}

// mirrorCopy is what every mirror of one request receives besides the
// body: the upstream request's method, Host, path, query and header.
type mirrorCopy struct {
	method, host, path, query string
	hdr                       http.Header
}

// sendMirrors sends a request's copies, each on its own goroutine within
// MirrorConcurrency; copies beyond it, or of a truncated body, are dropped
// and counted.
func (d *DataPlane) sendMirrors(targets []*endpointSet, mc *mirrorCopy, body []byte, truncated bool) {
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
			d.sendMirror(es, ep, mc, body)
		}(es, ep)
	}
}

// sendMirror sends one copy and discards the answer.
func (d *DataPlane) sendMirror(es *endpointSet, ep *endpoint, mc *mirrorCopy, body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.MirrorTimeout)
	defer cancel()
	scheme := "http://"
	if ep.tls != nil {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, mc.method, scheme+ep.addr, nil)
	if err != nil {
		return
	}
	req.URL.Path, req.URL.RawQuery, req.Host, req.Header = mc.path, mc.query, mc.host, mc.hdr.Clone()
	if len(body) > 0 {
		req.Body = io.NopCloser(strings.NewReader(string(body)))
		req.ContentLength = int64(len(body))
	}
	resp, err := d.transports(es).roundTrip(req, ep)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}
