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
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Outlier detection (passive, EndpointSet.Outlier). Every try's outcome
// is recorded on its endpoint where it becomes known (forward and try,
// after the round trip): an answer of 500-599, a failed round trip the
// upstream is to blame for (502 and 504: connect failures, resets,
// protocol errors, timeouts) counts as a 5xx; a failed connect (dial or
// TLS handshake) is also a connect failure; any other answer resets both
// counts. What the client is to blame for (its body too large, slow or
// broken, the client gone) is not recorded. When an endpoint reaches
// Consecutive5xx 5xx in a row, or ConsecutiveConnectFailures connect
// failures in a row, it is ejected for BaseEjectionTime times the number
// of its ejections, capped at MaxEjectionTime (default 300s, and never
// less than BaseEjectionTime); the count is forgotten once the endpoint
// stayed in for a whole cap. An ejected endpoint gets no requests from
// any balancer (pickFor, balance.go) and records nothing; it returns by
// itself when its time is up. An ejection that would take the set's
// ejected endpoints over MaxEjectionPercent of its endpoints does not
// happen (the endpoint stays in and is ejected at a later failure once
// there is room), except that one endpoint may always be ejected from a
// set of two or more; a set of one is only ever emptied at 100%. The
// state lives on the endpoint, which snapshot swaps carry over.

// defaultMaxEjectionTime caps ejections when MaxEjectionTime is unset.
const defaultMaxEjectionTime = 300 * time.Second

// outlierPolicy is a set's compiled OutlierDetection.
type outlierPolicy struct {
	consecutive5xx     int32
	consecutiveConnect int32
	base, max          time.Duration
	maxPercent         int32
}

// outlierState is one endpoint's failure counts and ejection.
type outlierState struct {
	mu           sync.Mutex
	fails5xx     int32
	failsConnect int32
	ejections    int32
	// ejectedUntil is when the current (or last) ejection ends, in unix
	// nanoseconds; zero for never ejected.
	ejectedUntil atomic.Int64
}

// outcome is what one try tells outlier detection.
type outcome uint8

const (
	// outcomeNone is not recorded (the client's fault).
	outcomeNone outcome = iota
	outcomeSuccess
	outcome5xx
	// outcomeConnect is a failed connect, a 5xx too.
	outcomeConnect
)

// compileOutlier compiles a set's outlier detection (nil for none).
func compileOutlier(in *snapshot.OutlierDetection) *outlierPolicy {
	if in == nil {
		return nil
	}
	p := &outlierPolicy{
		consecutive5xx:     in.Consecutive5xx,
		consecutiveConnect: in.ConsecutiveConnectFailures,
		base:               in.BaseEjectionTime.D(),
		max:                in.MaxEjectionTime.D(),
		maxPercent:         in.MaxEjectionPercent,
	}
	if p.max <= 0 {
		p.max = defaultMaxEjectionTime
	}
	p.max = max(p.max, p.base)
	return p
}

// validateOutlier checks a set's outlier detection.
func validateOutlier(in *snapshot.OutlierDetection) error {
	switch {
	case in == nil:
		return nil
	case in.Consecutive5xx < 0 || in.ConsecutiveConnectFailures < 0:
		return errors.New("outlierDetection: consecutive counts must not be negative")
	case in.Consecutive5xx == 0 && in.ConsecutiveConnectFailures == 0:
		return errors.New("outlierDetection: consecutive5xx or consecutiveConnectFailures must be set")
	case in.BaseEjectionTime <= 0:
		return errors.New("outlierDetection: baseEjectionTime must be positive")
	case in.MaxEjectionTime < 0:
		return errors.New("outlierDetection: maxEjectionTime is negative")
	case in.MaxEjectionPercent < 0 || in.MaxEjectionPercent > 100:
		return fmt.Errorf("outlierDetection: maxEjectionPercent %d is not in [0, 100]", in.MaxEjectionPercent)
	}
	return nil
}

// ejectedAt reports whether the endpoint is ejected at now (unix
// nanoseconds).
func (s *outlierState) ejectedAt(now int64) bool { return s.ejectedUntil.Load() > now }

// outcomeOf classifies one try's outcome: its answer, or the error of its
// round trip.
func outcomeOf(r *http.Request, out *outbound, resp *http.Response, err error) outcome {
	switch {
	case err == nil && resp.StatusCode >= 500 && resp.StatusCode <= 599:
		return outcome5xx
	case err == nil:
		return outcomeSuccess
	case out.limited != nil && out.limited.exceeded, bodyFailed(r, nil), r.Context().Err() != nil:
		return outcomeNone // the client's fault, or the client gone
	case isConnectFailure(err):
		return outcomeConnect
	}
	return outcome5xx
}

// isConnectFailure reports a round trip that could not connect: the dial
// failed (refused, unreachable, ConnectTimeout) or the TLS handshake did.
func isConnectFailure(err error) bool {
	var ne *net.OpError
	var te *upstreamTLSError
	return (errors.As(err, &ne) && ne.Op == "dial") || errors.As(err, &te)
}

// recordOutcome records a try's outcome on its endpoint when its set
// detects outliers, ejecting the endpoint when it reached a threshold.
func (d *DataPlane) recordOutcome(dst destination, r *http.Request, out *outbound, resp *http.Response, err error) {
	es := dst.b.set
	if es.outlier == nil {
		return
	}
	if o := outcomeOf(r, out, resp, err); o != outcomeNone {
		if until, ok := es.record(dst.ep, o, time.Now()); ok {
			d.log.Info("outlier detection ejected an endpoint", "endpointSet", es.name, "endpoint", dst.ep.addr, "until", until)
		}
	}
}

// record counts an outcome on ep and ejects it when it reached a
// threshold; it returns the end of the ejection and true when it ejected.
func (es *endpointSet) record(ep *endpoint, o outcome, now time.Time) (time.Time, bool) {
	p, s := es.outlier, &ep.outlier
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ejectedAt(now.UnixNano()) {
		return time.Time{}, false // answers still in flight when it was ejected
	}
	switch o {
	case outcomeSuccess:
		s.fails5xx, s.failsConnect = 0, 0
		return time.Time{}, false
	case outcomeConnect:
		s.failsConnect++
	}
	s.fails5xx++
	if (p.consecutive5xx <= 0 || s.fails5xx < p.consecutive5xx) && (p.consecutiveConnect <= 0 || s.failsConnect < p.consecutiveConnect) {
		return time.Time{}, false
	}
	return es.eject(ep, now)
}

// eject ejects ep (whose state is locked) unless that would take the set
// over MaxEjectionPercent.
func (es *endpointSet) eject(ep *endpoint, now time.Time) (time.Time, bool) {
	p, s := es.outlier, &ep.outlier
	es.ejectMu.Lock()
	defer es.ejectMu.Unlock()
	n, ejected := len(es.eps), 0
	for _, other := range es.eps {
		if other != ep && other.outlier.ejectedAt(now.UnixNano()) {
			ejected++
		}
	}
	if (ejected+1)*100 > int(p.maxPercent)*n && (ejected > 0 || n < 2) {
		return time.Time{}, false
	}
	if last := s.ejectedUntil.Load(); last != 0 && now.Sub(time.Unix(0, last)) > p.max {
		s.ejections = 0 // back for a whole cap: a first offence again
	}
	s.ejections++
	d := min(p.base*time.Duration(s.ejections), p.max)
	if d < p.base { // overflow
		d = p.max
	}
	until := now.Add(d)
	s.ejectedUntil.Store(until.UnixNano())
	s.fails5xx, s.failsConnect = 0, 0
	return until, true
}
