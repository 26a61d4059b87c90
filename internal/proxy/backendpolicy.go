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
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Backend policies (CoxswainBackendPolicy, on snapshot.EndpointSet), each
// compiled with its set in newEndpointSet (balance.go):
//
//   - load balancing: RoundRobin, LeastRequest, Random and ConsistentHash
//     (hashing.go) over the set's available endpoints (balance.go);
//   - ConnectTimeout and IdleTimeout of the set's upstream connections
//     (connectDialer and timeoutsKey, transports.go; h1client.go);
//   - the circuit breaker, below;
//   - passive outlier detection (outlier.go) and active health checks
//     (healthcheck.go), whose state survives snapshot swaps on the
//     endpoints and, for the checkers' goroutines, in backendState.
//
// validateBackendPolicies checks all of them (and the RetryPolicy
// extensions of routes, retry.go) before anything is compiled: a bad
// value fails the snapshot.
//
// The circuit breaker bounds the requests one proxy has in flight to one
// endpoint set, across its endpoints, from the moment a try is sent until
// its answer was relayed (or discarded, for a retried try). The proxy
// keeps no queue of requests waiting for a connection (a request that
// finds no idle one dials a new one), so the three bounds all apply to
// that one count: MaxRequests bounds it; MaxConnections plus
// MaxPendingRequests bounds it too (an HTTP/1.1 request in flight holds
// one connection, and the pending ones are those Envoy would let wait for
// one; idle pooled connections are not counted, and on h2c a request is a
// stream rather than a connection, so the bound is stricter there);
// MaxPendingRequests without MaxConnections bounds nothing, as no request
// ever waits for a connection. The smallest bound wins. A request over it
// is answered 503 at once with the header "X-Coxswain-Overloaded: true"
// and counted in coxswain_proxy_upstream_errors_total{kind="overloaded"};
// a retry over it is not sent (the last try's answer goes to the client).

// overloadedHeader marks an answer of the circuit breaker.
const overloadedHeader = "X-Coxswain-Overloaded"

// backendState is what backend policies keep across snapshots beyond
// the endpoints themselves: the health checkers' goroutines.
type backendState struct {
	d        *DataPlane
	mu       sync.Mutex
	closed   bool
	checkers map[checkerKey]*checker
	wg       sync.WaitGroup
	// running counts the health check goroutines running, started every
	// one ever started (tests).
	running, started atomic.Int64
}

// newBackendState builds the backend policies' state of a data plane.
func newBackendState(d *DataPlane) *backendState {
	return &backendState{d: d, checkers: map[checkerKey]*checker{}}
}

// close stops every health checker and waits for them to return.
func (b *backendState) close() {
	b.mu.Lock()
	b.closed = true
	for k, c := range b.checkers {
		c.cancel()
		delete(b.checkers, k)
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// validateBackendPolicies checks the backend policies of every endpoint
// set and the retry extensions of every route of s. Routes validated (the
// snapshot of the state in force, nil when none) holds already were
// checked then and are not read again: a listener whose host list is the
// very one of the same listener there, and, in a listener that changed, a
// host whose route list is the very one its hostname had there (snapshots
// are never changed once built, and discovery's Assembler hands the
// unchanged hosts over as they were). At 10,000 hosts, reading every
// route of a listener in which one host changed was the largest part of
// the proxy's work on a route change.
func validateBackendPolicies(s, validated *snapshot.Snapshot) error {
	var oldSets []*snapshot.EndpointSet // validated's, by name, from the first not yet passed
	if validated != nil {
		oldSets = validated.EndpointSets
	}
	for i, es := range s.EndpointSets {
		if len(oldSets) > 0 && oldSets[0] == es {
			oldSets = oldSets[1:]
			continue // checked then, and never modified since
		}
		for len(oldSets) > 0 && oldSets[0].Name < es.Name {
			oldSets = oldSets[1:]
		}
		if len(oldSets) > 0 && oldSets[0] == es {
			oldSets = oldSets[1:]
			continue
		}
		if err := validateEndpointSetPolicies(es); err != nil {
			return fmt.Errorf("endpointSets[%d] (%s): %w", i, es.Name, err)
		}
	}
	for li := range s.Listeners {
		hosts := s.Listeners[li].VirtualHosts
		var old []*snapshot.VirtualHost // validated's, by hostname, from the first not yet passed
		if validated != nil && li < len(validated.Listeners) {
			old = validated.Listeners[li].VirtualHosts
			if lists.Same(old, hosts) {
				continue
			}
		}
		for _, vh := range hosts {
			// The very host in force first: checked then, and never
			// modified since (no look at 10,000 hosts scattered over the
			// heap).
			if len(old) > 0 && old[0] == vh {
				old = old[1:]
				continue
			}
			// Equal first: an unchanged host's name is the very string,
			// which equality tells at once.
			for len(old) > 0 && old[0].Hostname != vh.Hostname && old[0].Hostname < vh.Hostname {
				old = old[1:]
			}
			if len(old) > 0 && old[0].Hostname == vh.Hostname {
				same := lists.Same(old[0].Routes, vh.Routes)
				old = old[1:]
				if same {
					continue
				}
			}
			for ri := range vh.Routes {
				r := &vh.Routes[ri]
				if err := validateRetry(r.Retry); err != nil {
					return fmt.Errorf("route %s: retry: %w", r.ID, err)
				}
			}
		}
	}
	return nil
}

// validateEndpointSetPolicies checks one set's backend policies.
func validateEndpointSetPolicies(es *snapshot.EndpointSet) error {
	if es.ConnectTimeout < 0 || es.IdleTimeout < 0 {
		return errors.New("connectTimeout and idleTimeout must not be negative")
	}
	if cb := es.CircuitBreaker; cb != nil && (cb.MaxConnections < 0 || cb.MaxPendingRequests < 0 || cb.MaxRequests < 0) {
		return errors.New("circuitBreaker: bounds must not be negative")
	}
	if err := validateHash(es); err != nil {
		return err
	}
	if err := validateOutlier(es.Outlier); err != nil {
		return err
	}
	return validateHealthCheck(es.HealthCheck)
}

// circuitLimit is the circuit breaker's bound on a set's requests in
// flight (0: none).
func circuitLimit(cb *snapshot.CircuitBreaker) int64 {
	if cb == nil {
		return 0
	}
	limit := int64(cb.MaxRequests)
	if cb.MaxConnections > 0 {
		if c := int64(cb.MaxConnections) + int64(cb.MaxPendingRequests); limit <= 0 || c < limit {
			limit = c
		}
	}
	return limit
}

// admit counts a request in flight to the set; false, counting nothing,
// when the circuit breaker is open. Each admit is followed by one done.
func (es *endpointSet) admit() bool {
	if es.maxInflight <= 0 {
		return true
	}
	if es.load.Add(1) > es.maxInflight {
		es.load.Add(-1)
		return false
	}
	return true
}

// done ends a request admit counted.
func (es *endpointSet) done() {
	if es.maxInflight > 0 {
		es.load.Add(-1)
	}
}

// answerOverloaded answers a request the circuit breaker refused.
func answerOverloaded(ex *exchange, rt *route) {
	ex.upstreamError(rt, "overloaded")
	ex.Header()[overloadedHeader] = []string{"true"}
	answer(ex, http.StatusServiceUnavailable, "upstream overloaded")
}
