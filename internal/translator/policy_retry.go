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

package translator

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The RetryPolicy defaults: retry connect failures, resets and 502/503/504,
// after 25ms doubling up to 250ms with full jitter, while at most 20% of
// the route's requests in flight (at least 3) are retries.
const (
	defaultRetryBackoff       = 25 * time.Millisecond
	defaultRetryBudgetPercent = 20
	defaultRetryBudgetMin     = 3
)

// compileRetryPolicies compiles every RetryPolicy. A rule's own HTTPRoute
// retry and timeouts.backendRequest win over a policy's.
func compileRetryPolicies(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindRetryPolicy, t.res.RetryPolicies,
		func(p *gatewayv1alpha1.RetryPolicy) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.RetryPolicy, p *policy) {
			rt, perTry, msg := retryPolicy(&o.Spec)
			if msg != "" {
				p.invalidf("%s", msg)
				return
			}
			p.route = func(r *snapshot.Route) {
				if r.Retry != nil {
					return
				}
				v := rt
				r.Retry = &v
				if perTry > 0 && (r.Timeouts == nil || r.Timeouts.Backend == 0) {
					to := snapshot.Timeouts{}
					if r.Timeouts != nil {
						to = *r.Timeouts
					}
					to.Backend = perTry
					r.Timeouts = &to
				}
			}
		})
}

// retryPolicy validates a RetryPolicy spec; the message names the bad
// field.
func retryPolicy(s *gatewayv1alpha1.RetryPolicySpec) (snapshot.Retry, snapshot.Duration, string) {
	rt := snapshot.Retry{Attempts: s.Attempts, Backoff: snapshot.Duration(defaultRetryBackoff), Jitter: true,
		Budget: &snapshot.RetryBudget{Percent: defaultRetryBudgetPercent, MinConcurrent: defaultRetryBudgetMin}}
	if s.Attempts < 1 || s.Attempts > snapshot.MaxRetryAttempts {
		return rt, 0, "spec.attempts: must be 1-10"
	}
	var perTry snapshot.Duration
	for field, d := range map[string]*gwv1.Duration{"spec.perTryTimeout": s.PerTryTimeout, "spec.backoff": s.Backoff, "spec.maxBackoff": s.MaxBackoff} {
		if d == nil {
			continue
		}
		v, err := policyDuration(*d)
		if err != nil {
			return rt, 0, field + ": " + string(*d) + " is not a duration"
		}
		switch field {
		case "spec.perTryTimeout":
			perTry = v
		case "spec.backoff":
			rt.Backoff = v
		default:
			rt.MaxBackoff = v
		}
	}
	if rt.MaxBackoff == 0 {
		rt.MaxBackoff = 10 * rt.Backoff
	}
	if rt.MaxBackoff < rt.Backoff {
		return rt, 0, "spec.maxBackoff: must not be below backoff"
	}
	on := s.RetryOn
	if len(on) == 0 {
		on = []gatewayv1alpha1.RetryOn{"connect-failure", "reset", "gateway-error"}
	}
	for _, c := range on {
		switch c {
		case "5xx":
			for code := int32(500); code <= 599; code++ {
				rt.Codes = append(rt.Codes, code)
			}
		case "gateway-error":
			rt.Codes = append(rt.Codes, 502, 503, 504)
		case "reset", "connect-failure":
			rt.ConnectionErrors = true
		case "timeout":
			rt.BackendTimeouts = true
		case "retriable-status-codes":
			if len(s.StatusCodes) == 0 {
				return rt, 0, "spec.statusCodes: retriable-status-codes needs status codes"
			}
		default:
			return rt, 0, "spec.retryOn: " + string(c) + " is not a known condition"
		}
	}
	for _, c := range s.StatusCodes {
		if c < 500 || c > 599 {
			return rt, 0, "spec.statusCodes: codes must be 500-599"
		}
		if slices.Contains(on, "retriable-status-codes") {
			rt.Codes = append(rt.Codes, c)
		}
	}
	slices.Sort(rt.Codes)
	rt.Codes = slices.Compact(rt.Codes)
	if b := s.Budget; b != nil {
		if b.Percent < 1 || b.Percent > 100 {
			return rt, 0, "spec.budget.percent: must be 1-100"
		}
		rt.Budget = &snapshot.RetryBudget{Percent: b.Percent, MinConcurrent: ptr.Deref(b.MinConcurrent, defaultRetryBudgetMin)}
	}
	return rt, perTry, ""
}
