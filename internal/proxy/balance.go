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
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// backend is one weighted backendRef of a route.
type backend struct {
	set             *endpointSet
	invalid         bool
	reqHdr, respHdr *headerMod
}

// endpointSet is the compiled endpoints of one Service port with its load
// balancer.
type endpointSet struct {
	name         string
	h2c          bool
	leastRequest bool
	// tls is how its endpoints are reached over TLS (nil: cleartext;
	// upstreamtls.go).
	tls *upstreamTLS
	eps []*endpoint
	rr  *atomic.Uint64
}

// endpoint is one upstream address with its requests in flight (for
// least-request balancing).
type endpoint struct {
	addr string
	// key names the upstream connection pools of this endpoint: its
	// address, and for a TLS set the fingerprint of the set's TLS
	// settings, so that no connection opened under other settings (another
	// CA, SNI, client certificate) is ever reused (poolKey).
	key string
	// tls is the set's, nil for cleartext.
	tls      *upstreamTLS
	inflight atomic.Int64
}

// compileEndpointSets compiles the snapshot's endpoint sets, each lent
// the state of its namesake in prev (may be nil); certs resolves the
// client certificates of upstream TLS.
func compileEndpointSets(in []snapshot.EndpointSet, prev *state, certs map[string]*parsedCert) map[string]*endpointSet {
	sets := make(map[string]*endpointSet, len(in))
	for i := range in {
		var old *endpointSet
		if prev != nil {
			old = prev.sets[in[i].Name]
		}
		sets[in[i].Name] = newEndpointSet(&in[i], old, certs)
	}
	return sets
}

// newEndpointSet compiles an endpoint set; old (may be nil) lends its
// round-robin position, its compiled TLS settings when they are the same,
// and the in-flight counts of endpoints that stay under the same pool key.
func newEndpointSet(in *snapshot.EndpointSet, old *endpointSet, certs map[string]*parsedCert) *endpointSet {
	es := &endpointSet{
		name:         in.Name,
		h2c:          in.AppProtocol == snapshot.AppProtocolH2C,
		leastRequest: in.LoadBalancer == snapshot.LeastRequest,
		rr:           new(atomic.Uint64),
	}
	var keep map[string]*endpoint
	if old != nil {
		es.rr = old.rr
		keep = make(map[string]*endpoint, len(old.eps))
		for _, e := range old.eps {
			keep[e.key] = e
		}
	}
	if in.TLS != nil {
		var prevTLS *upstreamTLS
		if old != nil {
			prevTLS = old.tls
		}
		es.tls = compileUpstreamTLS(in.TLS, es.h2c, certs, prevTLS)
	}
	for _, e := range in.Endpoints {
		addr := net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))
		key := poolKey(addr, es.tls)
		if ke := keep[key]; ke != nil {
			es.eps = append(es.eps, ke)
			continue
		}
		es.eps = append(es.eps, &endpoint{addr: addr, key: key, tls: es.tls})
	}
	return es
}

// weightedBackends are the backends of a route with the cumulative
// weights a pick draws from; HTTP routes and stream routes (stream.go)
// share them.
type weightedBackends struct {
	backends    []backend
	cumWeights  []int64
	totalWeight int64
}

// compileBackends compiles a route's backends with their header filters
// and the cumulative weights pickBackend draws from.
func (wb *weightedBackends) compileBackends(in []snapshot.Backend, sets map[string]*endpointSet) error {
	for _, b := range in {
		cb := backend{invalid: b.Invalid, reqHdr: compileHeaderMod(b.RequestHeaders), respHdr: compileHeaderMod(b.ResponseHeaders)}
		if !b.Invalid {
			cb.set = sets[b.EndpointSet]
			if cb.set == nil {
				return fmt.Errorf("unknown endpoint set %q", b.EndpointSet)
			}
		}
		wb.totalWeight += int64(b.Weight)
		wb.backends = append(wb.backends, cb)
		wb.cumWeights = append(wb.cumWeights, wb.totalWeight)
	}
	return nil
}

// destination is where a request is forwarded: its route, the backend
// picked by weight and the endpoint picked by the backend's balancer.
type destination struct {
	rt *route
	b  *backend
	ep *endpoint
}

// pickDestination picks the route's backend, then one of its endpoints
// (step 9 of the request path, serve.go). Without one it answers, 500 for
// an invalid backend and 503 for no endpoints, and returns false.
func pickDestination(w http.ResponseWriter, rt *route) (destination, bool) {
	b, ep := rt.pick()
	if b == nil || b.invalid {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "invalid_backend").Inc()
		answer(w, http.StatusInternalServerError, "no valid backend for this route")
		return destination{}, false
	}
	if ep == nil {
		rt.stats.m.upstreamErrors.WithLabelValues(rt.id, "no_endpoints").Inc()
		answer(w, http.StatusServiceUnavailable, "no healthy upstream")
		return destination{}, false
	}
	return destination{rt: rt, b: b, ep: ep}, true
}

// pick picks a backend by weight, then one of its endpoints. The backend
// is nil when no weight is set, and the endpoint nil when the backend is
// invalid or has no endpoints.
func (wb *weightedBackends) pick() (*backend, *endpoint) {
	b := wb.pickBackend()
	if b == nil || b.invalid {
		return b, nil
	}
	return b, b.set.pick()
}

// pickBackend picks a backend by weight (nil when no weight is set).
func (wb *weightedBackends) pickBackend() *backend {
	switch {
	case len(wb.backends) == 0 || wb.totalWeight <= 0:
		return nil
	case len(wb.backends) == 1:
		return &wb.backends[0]
	}
	n := rand.Int64N(wb.totalWeight) //nolint:gosec // G404: weighted backend choice needs spread, not unpredictability
	for i, c := range wb.cumWeights {
		if n < c {
			return &wb.backends[i]
		}
	}
	return &wb.backends[len(wb.backends)-1]
}

// pick picks an endpoint: round robin, or the less loaded of two random
// ones for least request (nil when there is none).
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
		i, j := rand.IntN(n), rand.IntN(n-1) //nolint:gosec // G404: load balancing needs spread, not unpredictability
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
