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

package testkit

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// after is a condition that holds from its n-th call on.
func after(n int32) func() bool {
	var calls atomic.Int32
	return func() bool { return calls.Add(1) >= n }
}

func TestEventuallyWithinReturnsOnceTheConditionHolds(t *testing.T) {
	cond := after(3)
	if r := record(t, func(tb testing.TB) { EventuallyWithin(tb, 10*time.Second, "the third call", cond) }); r.failed {
		t.Fatalf("failed although the condition came to hold: %s", r.message())
	}
}

func TestEventuallyWithinFailsNamingWhatAndTheBound(t *testing.T) {
	r := record(t, func(tb testing.TB) {
		EventuallyWithin(tb, 30*time.Millisecond, "the impossible", func() bool { return false })
	})
	if !r.failed || !strings.Contains(r.message(), "waiting for the impossible") || !strings.Contains(r.message(), "30ms") {
		t.Fatalf("failure = %s", r.message())
	}
}

func TestEventuallyExplainedFailsWithTheLastExplanation(t *testing.T) {
	n := 0
	r := record(t, func(tb testing.TB) {
		EventuallyExplained(tb, 120*time.Millisecond, func() string { n++; return "attempt " + strings.Repeat("I", n) })
	})
	if !r.failed || !strings.Contains(r.message(), "after 120ms: attempt "+strings.Repeat("I", n)+"]") {
		t.Fatalf("failure after %d attempts = %s", n, r.message())
	}
	if ok := record(t, func(tb testing.TB) { EventuallyExplained(tb, 10*time.Second, func() string { return "" }) }); ok.failed {
		t.Fatalf("an empty explanation must pass: %s", ok.message())
	}
}

func TestEventuallyStateFailsWithWhatAndTheLastState(t *testing.T) {
	n := 0
	r := record(t, func(tb testing.TB) {
		EventuallyState(tb, 120*time.Millisecond, "two pods", func() (bool, string) { n++; return false, strings.Repeat("x", n) })
	})
	if want := "two pods: not reached within 120ms (last: " + strings.Repeat("x", n) + ")"; !r.failed || !strings.Contains(r.message(), want) {
		t.Fatalf("failure = %s, want %q", r.message(), want)
	}
	cond := after(2)
	if ok := record(t, func(tb testing.TB) {
		EventuallyState(tb, 10*time.Second, "second call", func() (bool, string) { return cond(), "" })
	}); ok.failed {
		t.Fatalf("failed although the condition came to hold: %s", ok.message())
	}
}
