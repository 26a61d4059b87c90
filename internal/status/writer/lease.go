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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseLeaderCheck reads the Lease live (no cache) and reports whether
// lock's identity holds it and the lease has not expired. A Lease lock is
// read through its client, never through lock.Get, which stores what it
// read in the lock the leader elector updates from: the writer checks from
// several goroutines while the elector renews.
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
	return func(ctx context.Context) (bool, error) {
		rec, err := read(ctx)
		if err != nil {
			return false, err
		}
		if rec.HolderIdentity != lock.Identity() {
			return false, nil
		}
		expiry := rec.RenewTime.Add(time.Duration(rec.LeaseDurationSeconds) * time.Second)
		return now().Before(expiry), nil
	}
}
