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

package infra

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

func ready(s infrav1alpha1.ProjectStatus) (metav1.ConditionStatus, string) {
	c := meta.FindStatusCondition(s.Conditions, infrav1alpha1.ConditionReady)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

// step is one observation in a health scenario: the Project's endpoint and
// generation, the probe outcome (nil: no probe), and how far the fake clock
// moves before it.
type step struct {
	advance    time.Duration
	endpoint   string
	generation int64
	probe      *error // nil: no probe; pointer to nil error: success
	probedFor  string // endpoint the probe was made against; "" means endpoint

	wantReady    metav1.ConditionStatus
	wantReason   string
	wantFailures int32
	wantChanged  bool
	wantHealthy  *time.Duration // offset from start of lastHealthyProbeTime; nil means unset
	wantMsgHas   string
}

func ok() *error                        { var e error; return &e }
func fail(msg string) *error            { e := errors.New(msg); return &e }
func at(d time.Duration) *time.Duration { return &d }

func TestNextStatusTable(t *testing.T) {
	const a, b = "a.svc:443", "b.svc:443"
	cases := []struct {
		name  string
		steps []step
	}{
		{"first observation is Unknown until a probe succeeds", []step{
			{endpoint: a, generation: 1, wantReady: metav1.ConditionUnknown, wantReason: ReasonAwaitingProbe, wantChanged: true},
			{endpoint: a, generation: 1, wantReady: metav1.ConditionUnknown, wantReason: ReasonAwaitingProbe, wantChanged: false},
		}},
		{"first success sets Ready=True", []step{
			{endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
		}},
		{"three consecutive failures set Ready=False with the last error", []step{
			{endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
			{advance: 10 * time.Second, endpoint: a, generation: 1, probe: fail("e1"), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantFailures: 1, wantChanged: true, wantHealthy: at(0)},
			{advance: 10 * time.Second, endpoint: a, generation: 1, probe: fail("e2"), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantFailures: 2, wantChanged: true, wantHealthy: at(0)},
			{advance: 10 * time.Second, endpoint: a, generation: 1, probe: fail("connection refused"), wantReady: metav1.ConditionFalse, wantReason: ReasonProbeFailed, wantFailures: 3, wantChanged: true, wantHealthy: at(0), wantMsgHas: "last error: connection refused"},
		}},
		{"one success recovers immediately", []step{
			{endpoint: a, generation: 1, probe: fail("x"), wantReady: metav1.ConditionUnknown, wantReason: ReasonAwaitingProbe, wantFailures: 1, wantChanged: true},
			{endpoint: a, generation: 1, probe: fail("x"), wantReady: metav1.ConditionUnknown, wantReason: ReasonAwaitingProbe, wantFailures: 2, wantChanged: true},
			{endpoint: a, generation: 1, probe: fail("x"), wantReady: metav1.ConditionFalse, wantReason: ReasonProbeFailed, wantFailures: 3, wantChanged: true},
			{advance: time.Second, endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(time.Second)},
		}},
		{"endpoint change resets to Unknown until the new endpoint answers", []step{
			{endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
			{advance: time.Second, endpoint: b, generation: 2, wantReady: metav1.ConditionUnknown, wantReason: ReasonEndpointChanged, wantChanged: true},
			// A late result for the old endpoint does not count.
			{advance: time.Second, endpoint: b, generation: 2, probe: ok(), probedFor: a, wantReady: metav1.ConditionUnknown, wantReason: ReasonEndpointChanged, wantChanged: false},
			{advance: time.Second, endpoint: b, generation: 2, probe: fail("x"), wantReady: metav1.ConditionUnknown, wantReason: ReasonEndpointChanged, wantFailures: 1, wantChanged: true},
			{advance: time.Second, endpoint: b, generation: 2, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(4 * time.Second)},
		}},
		{"healthy timestamps are written at most once a minute; no change, no patch", []step{
			{endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
			{advance: 10 * time.Second, endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: false, wantHealthy: at(0)},
			{advance: 49 * time.Second, endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: false, wantHealthy: at(0)},
			{advance: time.Second, endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(time.Minute)},
			{advance: 30 * time.Second, endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: false, wantHealthy: at(time.Minute)},
		}},
		{"a generation change without an endpoint change keeps health", []step{
			{endpoint: a, generation: 1, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
			{advance: time.Second, endpoint: a, generation: 2, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: true, wantHealthy: at(0)},
			{advance: time.Second, endpoint: a, generation: 2, probe: ok(), wantReady: metav1.ConditionTrue, wantReason: ReasonProbeSucceeded, wantChanged: false, wantHealthy: at(0)},
		}},
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			var st infrav1alpha1.ProjectStatus
			for i, s := range c.steps {
				clk.SetTime(clk.Now().Add(s.advance))
				target := Target{Generation: s.generation, Endpoint: s.endpoint}
				var res *ProbeResult
				if s.probe != nil {
					pt := target
					if s.probedFor != "" {
						pt.Endpoint = s.probedFor
					}
					res = &ProbeResult{Target: pt, Err: *s.probe}
				}
				next := NextStatus(st, target, res, clk.Now())
				if got := StatusChanged(st, next); got != s.wantChanged {
					t.Fatalf("step %d: changed=%v, want %v\nfrom %+v\nto   %+v", i, got, s.wantChanged, st, next)
				}
				st = next
				gotReady, gotReason := ready(st)
				if gotReady != s.wantReady || gotReason != s.wantReason {
					t.Fatalf("step %d: Ready=%s/%s, want %s/%s", i, gotReady, gotReason, s.wantReady, s.wantReason)
				}
				if st.ConsecutiveFailures != s.wantFailures {
					t.Fatalf("step %d: failures=%d, want %d", i, st.ConsecutiveFailures, s.wantFailures)
				}
				if st.ObservedEndpoint != s.endpoint || st.ObservedGeneration != s.generation {
					t.Fatalf("step %d: observed %s@%d, want %s@%d", i, st.ObservedEndpoint, st.ObservedGeneration, s.endpoint, s.generation)
				}
				switch {
				case s.wantHealthy == nil && st.LastHealthyProbeTime != nil:
					t.Fatalf("step %d: lastHealthyProbeTime=%v, want unset", i, st.LastHealthyProbeTime)
				case s.wantHealthy != nil && (st.LastHealthyProbeTime == nil || !st.LastHealthyProbeTime.Time.Equal(start.Add(*s.wantHealthy))):
					t.Fatalf("step %d: lastHealthyProbeTime=%v, want %v", i, st.LastHealthyProbeTime, start.Add(*s.wantHealthy))
				}
				if s.wantMsgHas != "" {
					c := meta.FindStatusCondition(st.Conditions, infrav1alpha1.ConditionReady)
					if !strings.Contains(c.Message, s.wantMsgHas) {
						t.Fatalf("step %d: message %q lacks %q", i, c.Message, s.wantMsgHas)
					}
				}
			}
		})
	}
}

// TestNextStatusDoesNotAliasInput guards the purity of NextStatus.
func TestNextStatusDoesNotAliasInput(t *testing.T) {
	cur := NextStatus(infrav1alpha1.ProjectStatus{}, Target{1, "a:1"}, &ProbeResult{Target: Target{1, "a:1"}}, time.Unix(0, 0))
	snapshot := *cur.DeepCopy()
	_ = NextStatus(cur, Target{2, "b:1"}, &ProbeResult{Target: Target{2, "b:1"}, Err: errors.New("x")}, time.Unix(100, 0))
	if StatusChanged(snapshot, cur) {
		t.Fatal("NextStatus modified its input")
	}
}
