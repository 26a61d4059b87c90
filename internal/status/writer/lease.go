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

package writer

import (
	"context"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseTrustFor is the longest a live read showing this replica as holder
// is trusted before the Lease is read again. A bulk round of thousands of
// status patches then reads the Lease about once a second instead of once
// per patch, which had doubled the requests of every round.
const leaseTrustFor = time.Second

// LeaseLeaderCheck reports whether lock's identity holds the Lease and the
// lease has not expired.
//
// The Lease is read live (no cache). A positive read is trusted for
// leaseTrustFor, and never past the lease's expiry less a third of its
// duration: this replica wrote RenewTime with its own clock, and no other
// replica may take the Lease before RenewTime + LeaseDurationSeconds,
// because a standby counts the duration from when it saw the last renewal.
// The margin covers a patch still in flight and clock-rate drift. A
// negative read or an error is never remembered, and a cancelled context
// (the manager stopping, which releases the Lease after its runnables
// stop) always reads again.
//
// A Lease lock is read through its client, never through lock.Get, which
// stores what it read in the lock the leader elector updates from: the
// writer checks from several goroutines while the elector renews.
func LeaseLeaderCheck(lock resourcelock.Interface, now func() time.Time) LeaderCheck {
	if now == nil {
		now = time.Now
	}
	read := func(ctx context.Context) (*resourcelock.LeaderElectionRecord, error) {
		rec, _, err := lock.Get(ctx)
		return rec, err
	}
	if ll, ok := lock.(*resourcelock.LeaseLock); ok {
		read = func(ctx context.Context) (*resourcelock.LeaderElectionRecord, error) {
			lease, err := ll.Client.Leases(ll.LeaseMeta.Namespace).Get(ctx, ll.LeaseMeta.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec), nil
		}
	}
	var trustedUntil atomic.Pointer[time.Time]
	return func(ctx context.Context) (bool, error) {
		start := now()
		if t := trustedUntil.Load(); t != nil && ctx.Err() == nil && start.Before(*t) {
			return true, nil
		}
		rec, err := read(ctx)
		if err != nil {
			trustedUntil.Store(nil)
			return false, err
		}
		if rec.HolderIdentity != lock.Identity() {
			trustedUntil.Store(nil)
			return false, nil
		}
		duration := time.Duration(rec.LeaseDurationSeconds) * time.Second
		expiry := rec.RenewTime.Add(duration)
		if !now().Before(expiry) {
			trustedUntil.Store(nil)
			return false, nil
		}
		// start keeps its monotonic reading; the wall-clock expiry only
		// bounds how far past start the read is trusted.
		if trust := min(leaseTrustFor, expiry.Sub(start)-duration/3); trust > 0 {
			until := start.Add(trust)
			trustedUntil.Store(&until)
		}
		return true, nil
	}
}
