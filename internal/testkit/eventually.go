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
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually polls cond every 10 ms until it holds, failing the test after
// 10 s with what was awaited.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, 10*time.Second, what, cond)
}

// EventuallyWithin is Eventually with its own bound.
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !pollUntil(timeout, 10*time.Millisecond, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// EventuallyExplained polls check every 50 ms until it returns "", failing
// after timeout with the last explanation it gave (for conditions whose
// failure needs more words than a name).
func EventuallyExplained(t testing.TB, timeout time.Duration, check func() string) {
	t.Helper()
	var msg string
	if !pollUntil(timeout, 50*time.Millisecond, func() bool { msg = check(); return msg == "" }) {
		t.Fatalf("after %v: %s", timeout, msg)
	}
}

// EventuallyState polls cond every 50 ms until it reports done, failing
// after timeout with what was awaited and the last state cond described
// (for waits on a cluster, where what was seen last explains the failure).
func EventuallyState(t testing.TB, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	var state string
	if !pollUntil(timeout, 50*time.Millisecond, func() bool { ok, s := cond(); state = s; return ok }) {
		t.Fatalf("%s: not reached within %v (last: %s)", what, timeout, state)
	}
}

// pollUntil calls cond at once and then every interval until it holds
// (true) or timeout has passed (false).
func pollUntil(timeout, interval time.Duration, cond func() bool) bool {
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	return err == nil
}
