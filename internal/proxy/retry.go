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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Retries (HTTPRoute rule retry, step 11 of the request path, serve.go).
// A try is sent again, up to Attempts more times, when its response status
// is one of Codes, when (ConnectionErrors) its connection failed before a
// response head arrived (dial error, reset, EOF, TLS handshake), or when
// (BackendTimeouts) it ran past Timeouts.Backend. Each retry picks its
// destination again by weight, and another endpoint than the failed one
// when the set has more than one (nor one ejected or unhealthy,
// balance.go), after the route's backoff (delay). Timeouts.Request
// bounds the whole exchange, backoffs included.
//
// A retry is only sent when the route's retry budget (Retry.Budget)
// allows it: the route's requests that are retrying (from their first
// retry to their end) stay within max(MinConcurrent, Percent% of the
// route's requests in flight); and when the circuit breaker of its
// endpoint set admits it (backendpolicy.go; a retry to the set the
// request already holds needs nothing more). Otherwise the try's answer
// goes to the client as it is. The budget's counts are those of the
// compiled route: a snapshot swap starts them afresh.
//
// A request is only sent twice if its body can be replayed: a bodiless one
// always can; a body of at most RetryBodyBufferBytes is read whole before
// the first try and replayed from memory; a larger one is streamed as it
// comes and the request is never retried. A failed try's answer is
// discarded (at most retryDrainBytes, for at most retryDrainTimeout, so
// its connection may be reused); the last try's goes to the client as it
// is. Routes without a Retry never come here (forward, forward.go).

// retryDrainBytes and retryDrainTimeout bound the discard of the answer of
// a try that is retried.
const (
	retryDrainBytes   = 64 << 10
	retryDrainTimeout = time.Second
)

// retryPolicy is a route's compiled Retry.
type retryPolicy struct {
	attempts   int
	backoff    time.Duration
	maxBackoff time.Duration
	jitter     bool
	connErrors bool
	timeouts   bool
	// codes has bit c-400 set for each retried status c (400-599).
	codes [4]uint64
	// budget bounds the route's concurrent retries (nil: unbounded).
	budget *retryBudget
}

// retryBudget is a route's compiled RetryBudget with its counts.
type retryBudget struct {
	percent, minConcurrent int64
	// active counts the route's requests in flight, retrying those of
	// them past their first try.
	active, retrying atomic.Int64
}

// compileRetry compiles a route's Retry; nil for none, or for no retries.
// validateRetry checked it.
func compileRetry(in *snapshot.Retry) *retryPolicy {
	if in == nil || in.Attempts <= 0 {
		return nil
	}
	p := &retryPolicy{attempts: int(in.Attempts), backoff: in.Backoff.D(), maxBackoff: in.MaxBackoff.D(), jitter: in.Jitter,
		connErrors: in.ConnectionErrors, timeouts: in.BackendTimeouts}
	if b := in.Budget; b != nil {
		p.budget = &retryBudget{percent: int64(b.Percent), minConcurrent: int64(b.MinConcurrent)}
	}
	for _, c := range in.Codes {
		if c >= 400 && c <= 599 {
			p.codes[(c-400)/64] |= 1 << ((c - 400) % 64)
		}
	}
	return p
}

// validateRetry checks the RetryPolicy extensions of a route's Retry
// (validateBackendPolicies).
func validateRetry(in *snapshot.Retry) error {
	switch {
	case in == nil:
		return nil
	case in.Backoff < 0 || in.MaxBackoff < 0:
		return errors.New("backoff and maxBackoff must not be negative")
	case in.Budget != nil && (in.Budget.Percent < 0 || in.Budget.Percent > 100):
		return fmt.Errorf("budget: percent %d is not in [0, 100]", in.Budget.Percent)
	case in.Budget != nil && in.Budget.MinConcurrent < 0:
		return errors.New("budget: minConcurrent must not be negative")
	}
	return nil
}

// retriesStatus reports whether a response status is retried.
func (p *retryPolicy) retriesStatus(code int) bool {
	if code < 400 || code > 599 {
		return false
	}
	return p.codes[(code-400)/64]&(1<<((code-400)%64)) != 0
}

// retryReason is why a try is retried; it labels
// coxswain_proxy_retries_total.
type retryReason uint8

const (
	retryNone retryReason = iota
	retryStatus
	retryConnect
	retryTimeout
)

func (r retryReason) String() string {
	return [...]string{"", "status", "connect", "timeout"}[r]
}

// classify tells why a try's outcome is retried (retryNone: it is not).
// ctx is the whole exchange's: once it is over (the request timeout, the
// client gone) nothing is retried.
func (p *retryPolicy) classify(ctx context.Context, r *http.Request, at *attempt, out *outbound, resp *http.Response, err error) retryReason {
	if err == nil {
		if p.retriesStatus(resp.StatusCode) {
			return retryStatus
		}
		return retryNone
	}
	switch cause := context.Cause(at.ctx); {
	case ctx.Err() != nil || r.Context().Err() != nil:
		return retryNone
	case out.limited != nil && out.limited.exceeded, bodyFailed(r, nil):
		return retryNone // the client's body, not the upstream, failed
	case errors.Is(cause, errBackendTimeout):
		if p.timeouts {
			return retryTimeout
		}
		return retryNone
	case errors.Is(cause, errUpstreamTimeout):
		return retryNone // a read or send timer (Ingress), never retried
	case p.connErrors && isConnectionError(err):
		return retryConnect
	}
	return retryNone
}

// isConnectionError reports a try whose connection failed before a
// response head arrived: it could not connect (or complete its TLS
// handshake), or the connection was reset or closed. A response the
// upstream did send, however malformed or large, is not one.
func isConnectionError(err error) bool {
	var ne *net.OpError
	switch {
	case isUpstreamTLSError(err), errors.Is(err, errStaleConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne):
		return true
	}
	// net/http's unexported errServerClosedIdle: the upstream closed an
	// idle connection as the request went out.
	return strings.Contains(err.Error(), "server closed idle connection")
}

// delay is the pause before retry n (0 for the first retry). With
// MaxBackoff it is Backoff times 2^n, capped at MaxBackoff (exponential
// backoff); without, Backoff times 2^min(n, 3). Jitter draws it uniformly
// in [0, that] (full jitter); without Jitter and MaxBackoff it is that
// plus up to a quarter more, never less than Backoff.
func (p *retryPolicy) delay(n int) time.Duration {
	if p.backoff <= 0 {
		return 0
	}
	var d time.Duration
	if p.maxBackoff > 0 {
		d = expBackoff(p.backoff, p.maxBackoff, n)
	} else if d = p.backoff << min(n, 3); d < p.backoff {
		d = p.backoff // overflow
	}
	switch {
	case p.jitter:
		return rand.N(d + 1) //nolint:gosec // G404: backoff jitter needs spread, not unpredictability
	case p.maxBackoff > 0:
		return d
	}
	return d + rand.N(d/4+1) //nolint:gosec // G404: backoff jitter needs spread, not unpredictability
}

// expBackoff is base times 2^n, capped at limit (which it is when base
// exceeds it).
func expBackoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for range n {
		if d >= limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// budgetAllows reports whether a retry budget lets one more request
// retry: retrying of active requests of the route retry already, and
// they may be at most max(minConcurrent, percent% of active).
func budgetAllows(retrying, active, percent, minConcurrent int64) bool {
	return retrying+1 <= max(minConcurrent, percent*active/100)
}

// take counts a request of the route as retrying; false, counting
// nothing, when the budget is spent.
func (b *retryBudget) take() bool {
	for {
		n := b.retrying.Load()
		if !budgetAllows(n, b.active.Load(), b.percent, b.minConcurrent) {
			return false
		}
		if b.retrying.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// retryRun is one request's hold on the limits of its retries: the
// endpoint set whose circuit breaker counts it and whether it counts as
// retrying in the route's budget.
type retryRun struct {
	pol      *retryPolicy
	held     *endpointSet
	budgeted bool
}

// begin counts the request in the route's budget; held is the set that
// admitted its first try.
func (run *retryRun) begin(pol *retryPolicy, held *endpointSet) {
	run.pol, run.held = pol, held
	if pol.budget != nil {
		pol.budget.active.Add(1)
	}
}

// admit reports whether the request may retry to next: within the
// route's budget and next's circuit breaker, which it then holds.
func (run *retryRun) admit(next destination) bool {
	b := run.pol.budget
	took := false
	if b != nil && !run.budgeted {
		if !b.take() {
			return false
		}
		run.budgeted, took = true, true
	}
	if es := next.b.set; es != run.held {
		if !es.admit() {
			if took {
				b.retrying.Add(-1)
				run.budgeted = false
			}
			return false
		}
		run.held.done()
		run.held = es
	}
	return true
}

// end gives back what the request held.
func (run *retryRun) end() {
	run.held.done()
	if b := run.pol.budget; b != nil {
		b.active.Add(-1)
		if run.budgeted {
			b.retrying.Add(-1)
		}
	}
}

// replayBody is a retried request's body as readReplay read it.
type replayBody struct {
	buf []byte
	// whole says buf is the whole body, which can be sent again;
	// otherwise rest is the remainder of the client's body, streamed
	// after buf once, and the request is not retried.
	whole bool
	rest  io.ReadCloser
}

// readReplay reads the body of a request whose route retries: nil for a
// bodiless one, the whole of it when it fits RetryBodyBufferBytes, else
// the first bytes read and the rest to stream. The route's body limit
// applies (limited, nil without one); an error is the client's body
// failing, answered by answerUpstreamError.
func (d *DataPlane) readReplay(r *http.Request, rt *route) (*replayBody, *limitedBody, error) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil, nil, nil
	}
	body := r.Body
	var limited *limitedBody
	if rt.maxBody > 0 {
		limited = &limitedBody{rc: body, left: rt.maxBody}
		body = limited
	}
	limit := d.opts.RetryBodyBufferBytes
	if r.ContentLength > int64(limit) {
		return &replayBody{rest: body}, limited, nil
	}
	buf, err := io.ReadAll(io.LimitReader(body, int64(limit)+1))
	if err != nil {
		return nil, limited, err
	}
	if len(buf) > limit {
		return &replayBody{buf: buf, rest: body}, limited, nil
	}
	return &replayBody{buf: buf, whole: true}, limited, nil
}

// attach makes rb the body of one try's request.
func (rb *replayBody) attach(outreq, r *http.Request) {
	if !rb.whole {
		outreq.Body = &prefixedBody{prefix: rb.buf, rc: rb.rest}
		return
	}
	if len(rb.buf) == 0 && len(r.Trailer) == 0 {
		outreq.Body, outreq.ContentLength = nil, 0
		return
	}
	outreq.Body = io.NopCloser(bytes.NewReader(rb.buf))
	outreq.ContentLength = int64(len(rb.buf))
	if r.ContentLength < 0 && len(r.Trailer) > 0 {
		outreq.ContentLength = -1 // chunked, so the trailers can follow
	}
}

// prefixedBody is bytes already read, then the rest of a body.
type prefixedBody struct {
	prefix []byte
	rc     io.ReadCloser
}

func (p *prefixedBody) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.rc.Read(b)
}

func (p *prefixedBody) Close() error { return p.rc.Close() }

// forwardRetrying is forward for a route with a Retry policy: the body
// made replayable, then tries until one is not retried or the attempts
// are spent, each after its backoff, all within the request timeout.
// dst's set admitted the request (forward); forwardRetrying ends that.
func (d *DataPlane) forwardRetrying(ex *exchange, r *http.Request, dst destination, isTLS bool, cors corsVerdict) {
	rt, pol := dst.rt, dst.rt.retry
	var run retryRun
	run.begin(pol, dst.b.set)
	defer run.end()
	ctx := r.Context()
	if t := rt.timeouts.Request.D(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t, errUpstreamTimeout)
		defer cancel()
	}
	rb, limited, err := d.readReplay(r, rt)
	if err != nil {
		d.answerUpstreamError(ex, r, dst, &attempt{ctx: ctx}, &outbound{limited: limited}, err)
		return
	}
	left := pol.attempts
	if rb != nil && !rb.whole {
		left = 0 // streamed: it cannot be sent twice
	}
	for n := 0; ; n++ {
		ex.upstream = dst.ep.addr
		next, reason := d.try(ctx, ex, r, dst, isTLS, cors, tryBody{rb: rb, limited: limited, retried: n > 0}, left > 0, &run)
		if reason == retryNone {
			return
		}
		rt.stats.m.retries.WithLabelValues(rt.id, reason.String()).Inc()
		ex.retries++
		left--
		if wait := pol.delay(n); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		if ctx.Err() != nil {
			// The request timeout (504) or the client (499) ended it
			// during the backoff.
			d.answerUpstreamError(ex, r, next, &attempt{ctx: ctx}, &outbound{limited: limited}, context.Cause(ctx))
			return
		}
		dst = next
	}
}

// tryBody is what every try of one request shares: its replayable body,
// the route's limit around the client's body, and whether this try is a
// retry.
type tryBody struct {
	rb      *replayBody
	limited *limitedBody
	retried bool
}

// try sends one try and records its outcome for outlier detection. When
// the outcome is retried (canRetry, the policy says so, a destination can
// be picked and run admits it), it discards the answer and returns the
// next destination and the reason; otherwise it relays the outcome to the
// client and returns retryNone.
func (d *DataPlane) try(ctx context.Context, ex *exchange, r *http.Request, dst destination, isTLS bool, cors corsVerdict, tb tryBody, canRetry bool, run *retryRun) (destination, retryReason) {
	dst.ep.inflight.Add(1)
	defer dst.ep.inflight.Add(-1)
	out := d.buildRequest(ex, r, dst, isTLS)
	out.replay, out.limited, out.retried = tb.rb, tb.limited, tb.retried
	var at attempt
	// The lean client's body drains under a deadline of its own
	// (h1Body.discard); http.Transport's needs the cancel.
	at.arm(ctx, dst.rt.timeouts, true, !out.lean)
	defer at.stop()
	resp, err := d.roundTrip(&at, r, dst, &out)
	d.recordOutcome(dst, r, &out, resp, err)
	if canRetry {
		if reason := dst.rt.retry.classify(ctx, r, &at, &out, resp, err); reason != retryNone {
			if next, ok := dst.rt.repick(dst, r, ex, d.currentSets()); ok && run.admit(next) {
				if err != nil {
					d.log.Debug("retrying after an upstream error", "route", dst.rt.id, "upstream", dst.ep.addr, "reason", reason.String(), "error", err)
				}
				discardResponse(&at, resp)
				return next, reason
			}
		}
	}
	d.respond(ex, r, dst, &at, &out, resp, err, cors)
	return destination{}, retryNone
}

// discardResponse reads away (bounded) and closes the answer of a try
// that is retried, so its connection may serve again.
func discardResponse(at *attempt, resp *http.Response) {
	if resp == nil {
		return
	}
	switch body := resp.Body.(type) {
	case *h1Body:
		body.discard(retryDrainBytes, retryDrainTimeout)
		return
	default:
		if at.cancel != nil {
			at.startTimer(retryDrainTimeout)
			_, _ = io.CopyN(io.Discard, body, retryDrainBytes)
		}
	}
	_ = resp.Body.Close()
}

// repick picks the destination of a retry of r: a backend by weight,
// then one of its endpoints, another than the failed one when the set has
// more than one (pickInput.avoid), hashing on the same key as the first
// pick. false when the pick lands on an invalid backend or one without
// endpoints: the failed try's outcome then stands.
//
// The endpoint comes from the namesake of the backend's set in sets (the
// state in force now; nil: the route's own): a request that outlived a
// snapshot is retried among the endpoints known now, not those of its
// start, which a rollout may have replaced.
func (rt *route) repick(prev destination, r *http.Request, ex *exchange, sets endpointSets) (destination, bool) {
	in := pickInput{r: r, ex: ex, avoid: prev.ep, cookie: prev.cookie}
	b := rt.pickBackend()
	if b == nil || b.invalid {
		return destination{}, false
	}
	set := b.set
	if fresh := sets.get(set.name); fresh != nil {
		set = fresh
	}
	ep := set.pickFor(&in)
	if ep == nil {
		return destination{}, false
	}
	return destination{rt: rt, b: b, ep: ep, cookie: in.cookie}, true
}

// currentSets are the endpoint sets of the state in force (nil before the
// first snapshot).
func (d *DataPlane) currentSets() endpointSets {
	if st := d.state.Load(); st != nil {
		return st.sets
	}
	return endpointSets{}
}
