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

package discovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Run bootstraps and streams until ctx ends. It never gives up: while the
// controller speaks another wire version it keeps the last good snapshot
// in force, degraded, and asks again every WireMismatchRetry.
func (c *Client) Run(ctx context.Context) error {
	c.setReadiness(false, "")
	bo := &backoff{}
	failures := 0 // consecutive failed dials since the last bootstrap
	next := 0     // endpoint index
	for ctx.Err() == nil {
		c.mu.Lock()
		needBootstrap := c.svid == nil || !time.Now().Before(c.renewAt) || failures >= 3
		c.mu.Unlock()
		if needBootstrap {
			if err := c.doBootstrap(ctx); err != nil {
				if errors.Is(err, ErrWireVersion) {
					if !c.waitOutWireMismatch(ctx, err) {
						break
					}
					continue
				}
				c.log.Error(err, "bootstrap failed")
				c.metrics.bootstrapFailures.Inc()
				if !c.postponeRenewal() {
					if !sleep(ctx, bo.next(c.Version() != "")) {
						break
					}
					continue
				}
				// The current SVID is still valid: keep streaming with it
				// and try to renew again later.
			}
			failures = 0
		}
		endpoint := c.endpoints[next%len(c.endpoints)]
		got, err := c.stream(ctx, endpoint)
		if ctx.Err() != nil {
			break
		}
		if got {
			bo.reset()
			failures = 0
		}
		if errors.Is(err, errRenew) {
			continue // SVID half-life: re-bootstrap and reconnect at once
		}
		c.setReadiness(false, errString(err))
		var wait time.Duration
		switch {
		case errors.Is(err, ErrWireVersion):
			if !c.waitOutWireMismatch(ctx, err) {
				return nil
			}
			continue
		case isNotLeader(err):
			next++ // try the next endpoint; the Service converges on the leader
			wait = bo.notLeader()
		default:
			bo.notLeaderN = 0
			if code := status.Code(err); code == codes.Unavailable || code == codes.Unauthenticated || code == codes.DeadlineExceeded {
				failures++
			}
			next++
			wait = bo.next(c.Version() != "")
		}
		c.metrics.reconnects.Inc()
		c.log.V(1).Info("discovery stream ended; retrying", "endpoint", endpoint, "err", errString(err), "wait", wait.String())
		if !sleep(ctx, wait) {
			break
		}
	}
	return nil
}

// waitOutWireMismatch reports a wire version mismatch (the proxy stays
// ready and degraded if it has a snapshot, else not ready, with the reason
// on /readyz) and waits WireMismatchRetry; false when ctx ended.
func (c *Client) waitOutWireMismatch(ctx context.Context, err error) bool {
	c.metrics.wireMismatch.Set(1)
	c.setReadiness(false, err.Error())
	c.log.Error(err, "the controller speaks another discovery wire version; serving the last good snapshot until this proxy or the controller is upgraded or rolled back",
		"retryIn", c.opts.WireMismatchRetry.String())
	return sleep(ctx, c.opts.WireMismatchRetry)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// errRenew ends a stream when the SVID is due for renewal.
var errRenew = errors.New("SVID reached half of its lifetime")

// isNotLeader reports whether err is a standby's refusal: the client tries
// the next endpoint quickly.
func isNotLeader(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), NotLeaderMessage)
}

// wireMismatch is ErrWireVersion, with the server's words, when err is the
// server refusing this client's wire version; else nil.
func wireMismatch(err error) error {
	st, ok := status.FromError(err)
	if ok && st.Code() == codes.FailedPrecondition && strings.Contains(st.Message(), WireMismatchMessage) {
		return fmt.Errorf("%w (the server said: %s)", ErrWireVersion, st.Message())
	}
	return nil
}

// sleep waits d, reporting false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
