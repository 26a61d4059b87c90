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

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseLeaderCheck reads the Lease live through lock (no cache) and reports
// whether lock's identity holds it and the lease has not expired.
func LeaseLeaderCheck(lock resourcelock.Interface, now func() time.Time) LeaderCheck {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context) (bool, error) {
		rec, _, err := lock.Get(ctx)
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
