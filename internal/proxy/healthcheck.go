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
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Active health checks (EndpointSet.HealthCheck). Each endpoint of a set
// with a health check has a goroutine of its own (owned by backendState)
// that sends GET Path, with Host Hostname (else the endpoint's address)
// and User-Agent coxswain-health-check, every Interval, the first at
// once, each bounded by Timeout. It goes through the data plane's
// upstream transports, so a TLS set is probed over TLS and an h2c set
// over h2c. A probe passes when the answer's status is one of
// ExpectedStatuses (default 200-399); a timeout, connect failure or other
// status fails it. An endpoint starts healthy; after UnhealthyThreshold
// failed probes in a row it is unhealthy and gets no requests from any
// balancer, until HealthyThreshold passed probes in a row make it healthy
// again. While every endpoint of a set is unhealthy (or ejected), picks
// use them all (panic mode, balance.go).
//
// The checkers follow the snapshots (backendState.sync, after each
// Apply): one keeps running while its set keeps the same health check
// settings and the endpoint the same pool key; a checker whose set,
// settings or endpoint went away is stopped, and a new one starts from
// the endpoint's last status. Shutdown stops them all (policyEnv.close).

// healthBodyLimit bounds the part of a probe's answer that is read (so
// its connection can be reused).
const healthBodyLimit = 4 << 10

// healthPolicy is a set's compiled HealthCheck.
type healthPolicy struct {
	path, host         string
	interval, timeout  time.Duration
	healthy, unhealthy int32
	// expected has bit c set for each passing status c (nil: 200-399).
	expected []uint64
	// fp identifies the settings: a checker with other settings is
	// replaced.
	fp string
}

// healthStatus is one checker's verdict on its endpoint.
type healthStatus struct {
	unhealthy atomic.Bool
}

// compileHealthCheck compiles a set's health check (nil for none).
func compileHealthCheck(in *snapshot.HealthCheck) *healthPolicy {
	if in == nil {
		return nil
	}
	p := &healthPolicy{
		path: in.Path, host: in.Hostname,
		interval: in.Interval.D(), timeout: in.Timeout.D(),
		healthy: in.HealthyThreshold, unhealthy: in.UnhealthyThreshold,
	}
	if len(in.ExpectedStatuses) > 0 {
		p.expected = make([]uint64, 600/64+1)
		for _, c := range in.ExpectedStatuses {
			p.expected[c/64] |= 1 << (c % 64)
		}
	}
	p.fp = fmt.Sprintf("%q|%q|%d|%d|%d|%d|%v", p.path, p.host, p.interval, p.timeout, p.healthy, p.unhealthy, in.ExpectedStatuses)
	return p
}

// validateHealthCheck checks a set's health check.
func validateHealthCheck(in *snapshot.HealthCheck) error {
	if in == nil {
		return nil
	}
	switch {
	case in.Path == "" || in.Path[0] != '/':
		return fmt.Errorf("healthCheck: path %q does not start with /", in.Path)
	case strings.ContainsFunc(in.Path+in.Hostname, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("healthCheck: path and hostname must not hold spaces or control characters")
	case in.Interval <= 0:
		return errors.New("healthCheck: interval must be positive")
	case in.Timeout <= 0:
		return errors.New("healthCheck: timeout must be positive")
	case in.HealthyThreshold < 1 || in.UnhealthyThreshold < 1:
		return errors.New("healthCheck: healthyThreshold and unhealthyThreshold must be at least 1")
	}
	if _, err := url.ParseRequestURI(in.Path); err != nil {
		return fmt.Errorf("healthCheck: path: %w", err)
	}
	for _, c := range in.ExpectedStatuses {
		if c < 100 || c > 599 {
			return fmt.Errorf("healthCheck: expected status %d is not in [100, 599]", c)
		}
	}
	return nil
}

// passes reports whether a probe's answer status passes.
func (p *healthPolicy) passes(code int) bool {
	if p.expected == nil {
		return code >= 200 && code <= 399
	}
	return code >= 0 && code < 600 && p.expected[code/64]&(1<<(code%64)) != 0
}

// checkerKey identifies a running checker: its set, its settings and its
// endpoint's pool key.
type checkerKey struct {
	set, fp, ep string
}

// checker is one endpoint's running health check.
type checker struct {
	ep     *endpoint
	cancel context.CancelFunc
}

// healthTarget is an endpoint a snapshot wants checked.
type healthTarget struct {
	es *endpointSet
	ep *endpoint
}

// sync makes the running checkers those st wants, prev being the state
// they were made for (nil: none): it stops the ones whose set, settings
// or endpoint left, starts the new ones, and clears the status of
// endpoints no longer checked. A checker belongs to one set (its key
// names it), so only the sets that are not the very ones of prev are
// looked at (changedSets).
func (b *backendState) sync(prev, st *state) {
	var old []*endpointSet
	if prev != nil {
		old = prev.sets.list
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for o, n := range changedSets(old, st.sets.list) {
		b.syncSet(o, n)
	}
}

// syncSet makes the checkers of one set's name those of es (nil: the set
// left) where they were those of old (nil: the set came).
func (b *backendState) syncSet(old, es *endpointSet) {
	var want map[checkerKey]healthTarget
	if es != nil {
		for _, ep := range es.eps {
			if es.health == nil {
				ep.health.Store(nil)
				continue
			}
			if want == nil {
				want = make(map[checkerKey]healthTarget, len(es.eps))
			}
			want[checkerKey{set: es.name, fp: es.health.fp, ep: ep.key}] = healthTarget{es: es, ep: ep}
		}
	}
	if old != nil && old.health != nil {
		for _, ep := range old.eps {
			k := checkerKey{set: old.name, fp: old.health.fp, ep: ep.key}
			c, ok := b.checkers[k]
			if !ok {
				continue
			}
			if t, ok := want[k]; !ok || t.ep != c.ep {
				c.cancel()
				delete(b.checkers, k)
			}
		}
	}
	for k, t := range want {
		if _, ok := b.checkers[k]; !ok {
			b.checkers[k] = b.startChecker(t)
		}
	}
}

// startChecker starts the checker of one endpoint, its status carried
// over from the endpoint's previous checker.
func (b *backendState) startChecker(t healthTarget) *checker {
	hs := new(healthStatus)
	if prev := t.ep.health.Load(); prev != nil {
		hs.unhealthy.Store(prev.unhealthy.Load())
	}
	t.ep.health.Store(hs)
	ctx, cancel := context.WithCancel(context.Background())
	b.running.Add(1)
	b.started.Add(1)
	b.wg.Go(func() {
		defer b.running.Add(-1)
		b.check(ctx, t.es.health, t.es.h2c, t.ep, hs)
	})
	return &checker{ep: t.ep, cancel: cancel}
}

// check probes ep every interval until ctx ends, keeping hs up to date.
func (b *backendState) check(ctx context.Context, p *healthPolicy, h2c bool, ep *endpoint, hs *healthStatus) {
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	var passes, fails int32
	for {
		ok := b.probe(ctx, p, h2c, ep)
		if ctx.Err() != nil {
			return
		}
		if ok {
			passes, fails = passes+1, 0
			if passes >= p.healthy && hs.unhealthy.CompareAndSwap(true, false) {
				b.d.log.Info("health check passed: endpoint healthy", "endpoint", ep.addr)
			}
		} else {
			passes, fails = 0, fails+1
			if fails >= p.unhealthy && hs.unhealthy.CompareAndSwap(false, true) {
				b.d.log.Warn("health check failed: endpoint unhealthy", "endpoint", ep.addr)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probe sends one health check request to ep; true when it passed.
func (b *backendState) probe(ctx context.Context, p *healthPolicy, h2c bool, ep *endpoint) bool {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	scheme := "http://"
	if ep.tls != nil {
		scheme = "https://"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+ep.addr+p.path, nil)
	if err != nil {
		return false
	}
	if p.host != "" {
		req.Host = p.host
	}
	req.Header["User-Agent"] = []string{"coxswain-health-check"}
	tr := b.d.h1
	if h2c {
		tr = b.d.h2c
	}
	resp, err := tr.roundTrip(req, ep)
	if err != nil {
		return false
	}
	_, _ = io.CopyN(io.Discard, resp.Body, healthBodyLimit)
	_ = resp.Body.Close()
	return p.passes(resp.StatusCode)
}
