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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// backend is one weighted backendRef of a route.
type backend struct {
	set             *endpointSet
	invalid         bool
	reqHdr, respHdr *headerMod
}

// endpointSet is the compiled endpoints of one Service port with its load
// balancer and its backend policies (backendpolicy.go).
type endpointSet struct {
	name string
	h2c  bool
	lb   snapshot.LoadBalancer
	// hash is the key of ConsistentHash (hashing.go), nil for the other
	// balancers.
	hash *hashPolicy
	// outlier ejects failing endpoints (outlier.go); health probes them
	// (healthcheck.go). Either makes a pick skip the endpoints they
	// exclude.
	outlier *outlierPolicy
	health  *healthPolicy
	// maxInflight > 0 is the circuit breaker's bound on load, the set's
	// requests in flight on this proxy (backendpolicy.go).
	maxInflight int64
	load        *atomic.Int64
	// tls is how its endpoints are reached over TLS (nil: cleartext;
	// upstreamtls.go).
	tls *upstreamTLS
	eps []*endpoint
	rr  *atomic.Uint64
	// ejectMu serialises outlier ejections, so MaxEjectionPercent holds
	// (outlier.go).
	ejectMu *sync.Mutex
	// src is the input it was compiled from, the snapshot's (reusableSet);
	// requests never read it.
	src *snapshot.EndpointSet
}

// endpoint is one upstream address with its requests in flight (for
// least-request balancing) and its outlier and health state, which
// survive snapshot swaps with the endpoint (newEndpointSet).
type endpoint struct {
	addr string
	// key names the upstream connection pools of this endpoint: its
	// address, for a TLS set the fingerprint of the set's TLS settings,
	// and the set's connect and idle timeouts when it has its own, so that
	// no connection opened under other settings (another CA, SNI, client
	// certificate, timeout) is ever reused (poolKey, timeoutsKey).
	key string
	// tls is the set's, nil for cleartext.
	tls *upstreamTLS
	// dialer connects with the set's ConnectTimeout (nil: the data
	// plane's); idleTimeout > 0 is the set's IdleTimeout.
	dialer      *net.Dialer
	idleTimeout time.Duration
	// addrHash is the address's hash, for rendezvous hashing (hashing.go).
	addrHash uint64
	inflight atomic.Int64
	// outlier counts failures and holds the ejection (outlier.go).
	outlier outlierState
	// health is the endpoint's health-check status (nil: unchecked, or
	// healthy; healthcheck.go).
	health atomic.Pointer[healthStatus]
}

// compileEndpointSets compiles the snapshot's endpoint sets, each lent
// the state of its namesake in prev (may be nil); certs resolves the
// client certificates of upstream TLS. The backend policies were checked
// by validateBackendPolicies.
//
// changed names the sets that are not prev's compiled set of the same
// name: those compiled anew and those prev had that in lacks (nil for
// none). A virtual host whose routes looked up none of them resolves its
// sets as it did (patchListener).
//
// The sets come in name order, as the snapshot's (a copy is sorted when
// they are not), and are matched with prev's by walking both lists: the
// very snapshot set prev compiled is taken without a look at its name,
// and prev's sets are prev's when the snapshot's list is the very one
// prev was compiled from (a route change). At 10,000 sets, a map of them
// all made at every swap was most of an endpoint refresh's work in the
// proxy.
func compileEndpointSets(in []*snapshot.EndpointSet, prev *state, certs map[string]*parsedCert) (sets endpointSets, changed map[string]bool) {
	if prev != nil && len(in) > 0 && lists.Same(in, prev.sets.srcs) && !prev.sets.tls {
		return prev.sets, nil
	}
	if sets, changed, ok := compileSortedSets(in, prev, certs, true); ok {
		return sets, changed
	}
	sets, changed, _ = compileSortedSets(sortedSets(in), prev, certs, false)
	return sets, changed
}

// compileSortedSets is compileEndpointSets of sets in name order; when
// check is set, ok is false when they are not in strict name order.
func compileSortedSets(in []*snapshot.EndpointSet, prev *state, certs map[string]*parsedCert, check bool) (sets endpointSets, changed map[string]bool, ok bool) {
	var old, oldSrcs = []*endpointSet(nil), []*snapshot.EndpointSet(nil) // prev's, from the first not yet passed
	// plain: prev's sets have no upstream TLS, so the very input of one
	// of them is compiled as it was, without a look at the set (a load
	// from memory each, at 10,000 sets scattered over the heap).
	plain := false
	if prev != nil {
		old, oldSrcs, plain = prev.sets.list, prev.sets.srcs, !prev.sets.tls
	}
	note := func(name string) {
		if changed == nil {
			changed = map[string]bool{}
		}
		changed[name] = true
	}
	sets = endpointSets{list: make([]*endpointSet, len(in)), srcs: in}
	taken := false // in[i-1] was old's very input
	for i, es := range in {
		var o *endpointSet
		if len(old) > 0 && oldSrcs[0] == es {
			o, old, oldSrcs = old[0], old[1:], oldSrcs[1:]
			if check && i > 0 && !taken && in[i-1].Name >= es.Name {
				return endpointSets{}, nil, false
			}
			taken = true
			if plain {
				sets.list[i] = o // reusableSet's verdict, without its loads
				continue
			}
		} else {
			if check && i > 0 && in[i-1].Name >= es.Name {
				return endpointSets{}, nil, false
			}
			for len(old) > 0 && old[0].name < es.Name {
				note(old[0].name) // gone
				old, oldSrcs = old[1:], oldSrcs[1:]
			}
			if len(old) > 0 && old[0].name == es.Name {
				o, old, oldSrcs = old[0], old[1:], oldSrcs[1:]
			}
			taken = false
		}
		if es.TLS != nil {
			sets.tls = true
		}
		if r := reusableSet(es, o); r != nil {
			sets.list[i] = r
			continue
		}
		sets.list[i] = newEndpointSet(es, o, certs)
		note(es.Name)
	}
	for _, o := range old {
		note(o.name) // gone
	}
	return sets, changed, true
}

// sortedSets is a copy of in in name order (names are unique: validated).
func sortedSets(in []*snapshot.EndpointSet) []*snapshot.EndpointSet {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b *snapshot.EndpointSet) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// endpointSets are a state's compiled endpoint sets, in name order, and
// the list they were compiled from (the snapshot's, or a sorted copy when
// it was not in name order): list[i] is srcs[i] compiled, or a set taken
// over for it (whose src is then an equal set), walked without loading
// each compiled set. tls says whether a set opens upstream TLS.
type endpointSets struct {
	list []*endpointSet
	srcs []*snapshot.EndpointSet
	tls  bool
}

// get is the set of name (nil: none).
func (s endpointSets) get(name string) *endpointSet {
	i, found := slices.BinarySearchFunc(s.list, name, func(es *endpointSet, name string) int { return strings.Compare(es.name, name) })
	if !found {
		return nil
	}
	return s.list[i]
}

// newEndpointSet compiles an endpoint set; old (may be nil) lends its
// round-robin position, its circuit breaker's count, its compiled TLS
// settings when they are the same, and the endpoints that stay under the
// same pool key, with their in-flight counts, outlier ejections and
// health.
func newEndpointSet(in *snapshot.EndpointSet, old *endpointSet, certs map[string]*parsedCert) *endpointSet {
	es := &endpointSet{
		src:         in,
		name:        in.Name,
		h2c:         in.AppProtocol == snapshot.AppProtocolH2C,
		lb:          in.LoadBalancer,
		hash:        compileHash(in),
		outlier:     compileOutlier(in.Outlier),
		health:      compileHealthCheck(in.HealthCheck),
		maxInflight: circuitLimit(in.CircuitBreaker),
		load:        new(atomic.Int64),
		rr:          new(atomic.Uint64),
		ejectMu:     new(sync.Mutex),
	}
	var keep map[string]*endpoint
	if old != nil {
		es.rr, es.load, es.ejectMu = old.rr, old.load, old.ejectMu
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
	dialer := connectDialer(in.ConnectTimeout.D())
	tk := timeoutsKey(in)
	for _, e := range in.Endpoints {
		addr := net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port)))
		key := poolKey(addr, es.tls) + tk
		if ke := keep[key]; ke != nil {
			es.eps = append(es.eps, ke)
			continue
		}
		es.eps = append(es.eps, &endpoint{addr: addr, key: key, tls: es.tls, dialer: dialer, idleTimeout: in.IdleTimeout.D(), addrHash: hashString(addr)})
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
func (wb *weightedBackends) compileBackends(in []snapshot.Backend, set func(name string) *endpointSet) error {
	for _, b := range in {
		cb := backend{invalid: b.Invalid, reqHdr: compileHeaderMod(b.RequestHeaders), respHdr: compileHeaderMod(b.ResponseHeaders)}
		if !b.Invalid {
			cb.set = set(b.EndpointSet)
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
	// cookie is the session affinity cookie the pick generated (nil for
	// none), which a retry's pick hashes on again (hashing.go).
	cookie *affinityCookie
}

// pickInput is what a request's endpoint pick may look at: the request
// and its exchange (a ConsistentHash key; nil for the L4 path and
// mirrors, which then balance round robin), the endpoint a retry avoids,
// and the affinity cookie generated by an earlier pick of the request.
type pickInput struct {
	r      *http.Request
	ex     *exchange
	avoid  *endpoint
	cookie *affinityCookie
}

// pickDestination picks the route's backend, then one of its endpoints
// (step 9 of the request path, serve.go). Without one it answers, 500 for
// an invalid backend and 503 for no endpoints, and returns false.
func pickDestination(ex *exchange, r *http.Request, rt *route) (destination, bool) {
	in := pickInput{r: r, ex: ex}
	b, ep := rt.pickFor(&in)
	if b == nil || b.invalid {
		ex.upstreamError(rt, "invalid_backend")
		answer(ex, http.StatusInternalServerError, "no valid backend for this route")
		return destination{}, false
	}
	if ep == nil {
		ex.upstreamError(rt, "no_endpoints")
		answer(ex, http.StatusServiceUnavailable, "no healthy upstream")
		return destination{}, false
	}
	return destination{rt: rt, b: b, ep: ep, cookie: in.cookie}, true
}

// pick picks a backend by weight, then one of its endpoints, with no
// request to hash on (the L4 path). The backend is nil when no weight is
// set, and the endpoint nil when the backend is invalid or has no
// endpoints.
func (wb *weightedBackends) pick() (*backend, *endpoint) { return wb.pickFor(nil) }

// pickFor is pick for a request (in may be nil).
func (wb *weightedBackends) pickFor(in *pickInput) (*backend, *endpoint) {
	b := wb.pickBackend()
	if b == nil || b.invalid {
		return b, nil
	}
	return b, b.set.pickFor(in)
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

// pick picks an endpoint with no request to hash on (mirrors; nil when
// there is none).
func (es *endpointSet) pick() *endpoint { return es.pickFor(nil) }

// pickFor picks an endpoint for a request (in may be nil; nil when the
// set has none). ConsistentHash with a key hashes it over the available
// endpoints; without a key, and for RoundRobin, it is round robin;
// Random picks uniformly; LeastRequest takes the less loaded of two
// random ones. Only available endpoints are candidates (not ejected by
// outlier detection, not failing health checks, not the one a retry
// avoids); when none is, every endpoint but the avoided one is (panic
// mode).
func (es *endpointSet) pickFor(in *pickInput) *endpoint {
	n := len(es.eps)
	if n == 0 {
		return nil
	}
	key, hashed := es.hash.key(in)
	var avoid *endpoint
	if in != nil {
		avoid = in.avoid
	}
	if n == 1 {
		return es.eps[0]
	}
	cands := es.eps
	if es.outlier != nil || es.health != nil || avoid != nil {
		var buf [16]*endpoint
		cands = es.available(buf[:0], avoid)
	}
	if hashed {
		return rendezvous(cands, key)
	}
	return es.balance(cands)
}

// balance picks one of cands, which are not empty, by the set's balancer
// (ConsistentHash without a key: round robin).
func (es *endpointSet) balance(cands []*endpoint) *endpoint {
	n := len(cands)
	switch {
	case n == 1:
		return cands[0]
	case es.lb == snapshot.Random:
		return cands[rand.IntN(n)] //nolint:gosec // G404: load balancing needs spread, not unpredictability
	case es.lb == snapshot.LeastRequest:
		// Power of two choices: two distinct random endpoints, the one with
		// fewer requests in flight wins.
		i, j := rand.IntN(n), rand.IntN(n-1) //nolint:gosec // G404: load balancing needs spread, not unpredictability
		if j >= i {
			j++
		}
		a, b := cands[i], cands[j]
		if b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
	return cands[es.rr.Add(1)%uint64(n)]
}

// available appends to buf the endpoints a pick may take: neither
// ejected nor unhealthy, nor avoid. When that leaves none, it is every
// endpoint but avoid (panic mode: rather some traffic to endpoints
// believed bad than none), and avoid itself in a set of one.
func (es *endpointSet) available(buf []*endpoint, avoid *endpoint) []*endpoint {
	now := time.Now().UnixNano()
	for _, ep := range es.eps {
		if ep != avoid && !es.excluded(ep, now) {
			buf = append(buf, ep)
		}
	}
	if len(buf) > 0 {
		return buf
	}
	for _, ep := range es.eps {
		if ep != avoid {
			buf = append(buf, ep)
		}
	}
	if len(buf) == 0 {
		buf = append(buf, es.eps...)
	}
	return buf
}

// excluded reports whether the set's policies keep ep out of picks at
// now (unix nanoseconds): ejected by outlier detection, or unhealthy.
func (es *endpointSet) excluded(ep *endpoint, now int64) bool {
	if es.outlier != nil && ep.outlier.ejectedAt(now) {
		return true
	}
	if es.health != nil {
		if hs := ep.health.Load(); hs != nil && hs.unhealthy.Load() {
			return true
		}
	}
	return false
}
