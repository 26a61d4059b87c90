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

// Package infra holds the infra Project health prober. Its subpackages hold
// the pieces shard services share: trust (signatures), membership (the
// Project list/watch), relay (snapshot file and agent mTLS) and lifecycle
// (setup, CA rotation and teardown tooling).
package infra

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

const (
	// FailureThreshold is the number of consecutive failed probes that set
	// Ready=False.
	FailureThreshold = 3
	// HealthyTimestampPeriod is the least time between two persisted
	// lastHealthyProbeTime values.
	HealthyTimestampPeriod = time.Minute
	// DetailWritePeriod is the least time between two status writes of a
	// Project that carry only details (see StatusTransition): the growing
	// consecutiveFailures of an ongoing outage and the last error in a
	// condition message.
	DetailWritePeriod = time.Minute

	// ReasonProbeSucceeded (Ready=True): the last probe of the endpoint
	// answered.
	ReasonProbeSucceeded = "ProbeSucceeded"
	// ReasonProbeFailed (Ready=False): FailureThreshold consecutive probes
	// failed.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonEndpointChanged (Ready=Unknown): the endpoint changed and the new
	// one has not been probed yet.
	ReasonEndpointChanged = "EndpointChanged"
	// ReasonAwaitingProbe (Ready=Unknown): the first endpoint has not been
	// probed yet.
	ReasonAwaitingProbe = "AwaitingProbe"

	// maxMessage bounds the condition message (the API allows 32768).
	maxMessage = 1024
)

// Target is what a probe was made against: the Project's generation and
// spec.apiServerEndpoint when the probe started.
type Target struct {
	Generation int64
	Endpoint   string
}

// ProbeResult is the outcome of one probe of Target.Endpoint: Err is nil on
// success.
type ProbeResult struct {
	Target Target
	Err    error
}

// NextStatus is the health state machine. Given the current status, the
// Project's current generation and endpoint, the result of a probe (nil when
// no probe was made) and the time, it returns the next status. It is pure:
// the caller patches the status only when the result differs from cur.
//
//   - An endpoint that differs from status.observedEndpoint (including the
//     first observation) resets health: Ready=Unknown, no failures, no
//     healthy timestamp, until the new endpoint answers.
//   - A probe of an endpoint that is no longer the current one is ignored.
//   - A success sets Ready=True immediately and clears the failure count.
//   - A failure counts; the FailureThreshold-th consecutive one sets
//     Ready=False with the last error in the message.
//   - lastHealthyProbeTime is refreshed on success only when unset or at least
//     HealthyTimestampPeriod old.
//   - Spec is never an input that is written: only status is returned.
func NextStatus(cur infrav1alpha1.ProjectStatus, now Target, res *ProbeResult, at time.Time) infrav1alpha1.ProjectStatus {
	next := *cur.DeepCopy()
	ts := metav1.NewTime(at.UTC().Truncate(time.Second))

	if next.ObservedEndpoint != now.Endpoint {
		reason, msg := ReasonEndpointChanged, fmt.Sprintf("endpoint changed to %s; waiting for it to answer", now.Endpoint)
		if cur.ObservedEndpoint == "" {
			reason, msg = ReasonAwaitingProbe, fmt.Sprintf("waiting for %s to answer", now.Endpoint)
		}
		next.ObservedEndpoint = now.Endpoint
		next.ObservedGeneration = now.Generation
		next.ConsecutiveFailures = 0
		next.LastHealthyProbeTime = nil
		setReady(&next, metav1.ConditionUnknown, reason, msg, now.Generation, ts)
	}
	if res == nil || res.Target.Endpoint != now.Endpoint {
		return next
	}
	// The observation belongs to the generation the probe was made for.
	gen := res.Target.Generation
	if gen < next.ObservedGeneration {
		gen = next.ObservedGeneration
	}
	next.ObservedGeneration = gen

	if res.Err == nil {
		next.ConsecutiveFailures = 0
		setReady(&next, metav1.ConditionTrue, ReasonProbeSucceeded,
			fmt.Sprintf("https://%s/readyz answered", now.Endpoint), gen, ts)
		if next.LastHealthyProbeTime == nil || !at.Before(next.LastHealthyProbeTime.Add(HealthyTimestampPeriod)) {
			next.LastHealthyProbeTime = &ts
		}
		return next
	}

	if next.ConsecutiveFailures < math.MaxInt32 {
		next.ConsecutiveFailures++
	}
	if next.ConsecutiveFailures >= FailureThreshold {
		msg := fmt.Sprintf("%d consecutive probes of https://%s/readyz failed; last error: %v", FailureThreshold, now.Endpoint, res.Err)
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		setReady(&next, metav1.ConditionFalse, ReasonProbeFailed, msg, gen, ts)
	} else if c := meta.FindStatusCondition(next.Conditions, infrav1alpha1.ConditionReady); c != nil {
		c.ObservedGeneration = gen
	}
	return next
}

// StatusChanged reports whether next differs from cur.
func StatusChanged(cur, next infrav1alpha1.ProjectStatus) bool {
	return !equality.Semantic.DeepEqual(cur, next)
}

// StatusTransition reports whether next differs from cur in more than
// details. A transition is a change of endpoint, generation, condition
// status, reason or presence, of lastHealthyProbeTime (itself refreshed at
// most once per HealthyTimestampPeriod), or the start or end of a failure
// streak (consecutiveFailures turning non-zero or zero). Details are the
// value of a non-zero consecutiveFailures and condition messages.
func StatusTransition(cur, next infrav1alpha1.ProjectStatus) bool {
	return StatusChanged(withoutDetails(cur), withoutDetails(next))
}

// WriteNeeded is the prober's write policy: a transition is written at once;
// a change of details only when the last write of this Project is at least
// DetailWritePeriod old (lastWrite zero: never written by this process).
// During an outage this makes one write per minute per Project, not one per
// probe.
func WriteNeeded(cur, next infrav1alpha1.ProjectStatus, lastWrite, now time.Time) bool {
	if !StatusChanged(cur, next) {
		return false
	}
	return StatusTransition(cur, next) || lastWrite.IsZero() || !now.Before(lastWrite.Add(DetailWritePeriod))
}

func withoutDetails(s infrav1alpha1.ProjectStatus) infrav1alpha1.ProjectStatus {
	out := *s.DeepCopy()
	if out.ConsecutiveFailures > 0 {
		out.ConsecutiveFailures = 1
	}
	for i := range out.Conditions {
		out.Conditions[i].Message = ""
	}
	return out
}

func setReady(s *infrav1alpha1.ProjectStatus, status metav1.ConditionStatus, reason, msg string, gen int64, ts metav1.Time) {
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type:               infrav1alpha1.ConditionReady,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: gen,
		LastTransitionTime: ts,
	})
}
