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

package writer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/status/writer"
)

// leaseFixture is a Lease on the suite's apiserver, a lock for identity
// "us" on it, and a clock the test moves.
type leaseFixture struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	check writer.LeaderCheck

	mu  sync.Mutex
	now time.Time
}

func newLeaseFixture(t *testing.T, ns string) *leaseFixture {
	t.Helper()
	ctx := t.Context()
	if _, err := clients.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, "leader",
		clients.CoreV1(), clients.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "us"})
	if err != nil {
		t.Fatal(err)
	}
	f := &leaseFixture{t: t, ctx: ctx, ns: ns, now: time.Now()}
	f.check = writer.LeaseLeaderCheck(lock, f.clock)
	return f
}

func (f *leaseFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *leaseFixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// hold makes holder the Lease's holder, renewed renewedAgo before the
// fixture's clock, for 15 s.
func (f *leaseFixture) hold(holder string, renewedAgo time.Duration) {
	f.t.Helper()
	leases := clients.CoordinationV1().Leases(f.ns)
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(holder),
		LeaseDurationSeconds: ptr.To[int32](15),
		RenewTime:            &metav1.MicroTime{Time: f.clock().Add(-renewedAgo)},
	}
	lease, err := leases.Get(f.ctx, "leader", metav1.GetOptions{})
	if err != nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"}, Spec: spec}
		if _, err := leases.Create(f.ctx, lease, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	lease.Spec = spec
	if _, err := leases.Update(f.ctx, lease, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *leaseFixture) want(ctx context.Context, want bool, why string) {
	f.t.Helper()
	got, err := f.check(ctx)
	if err != nil {
		f.t.Fatalf("%s: %v", why, err)
	}
	if got != want {
		f.t.Fatalf("%s: leader = %v, want %v", why, got, want)
	}
}

// TestLeaseCheckTrustsAHeldLeaseForASecond: a read showing this replica as
// holder answers the checks of the next second without a read, so a Lease
// taken over in that second is seen only after it; a lost Lease is never
// remembered.
func TestLeaseCheckTrustsAHeldLeaseForASecond(t *testing.T) {
	f := newLeaseFixture(t, "lease-trust")
	f.hold("us", 0)
	f.want(f.ctx, true, "held")
	f.hold("them", 0)
	f.advance(900 * time.Millisecond)
	f.want(f.ctx, true, "within the second after a positive read")
	f.advance(200 * time.Millisecond)
	f.want(f.ctx, false, "a second after the positive read")
	f.hold("us", 0)
	f.want(f.ctx, true, "held again: the negative read was not remembered")
}

// TestLeaseCheckReadsEveryTimeNearExpiry: with less than a third of the
// lease duration left, a positive read is not trusted at all, and an
// expired Lease is not held.
func TestLeaseCheckReadsEveryTimeNearExpiry(t *testing.T) {
	f := newLeaseFixture(t, "lease-expiry")
	f.hold("us", 11*time.Second) // 4 s of 15 left
	f.want(f.ctx, true, "held, 4 s to expiry")
	f.hold("them", 0)
	f.want(f.ctx, false, "taken over: the read near expiry was not trusted")
	f.hold("us", 16*time.Second)
	f.want(f.ctx, false, "expired")
}

// TestLeaseCheckReadsOnACancelledContext: once the manager stops (and may
// release the Lease), a trusted read no longer answers.
func TestLeaseCheckReadsOnACancelledContext(t *testing.T) {
	f := newLeaseFixture(t, "lease-cancel")
	f.hold("us", 0)
	f.want(f.ctx, true, "held")
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	if ok, err := f.check(ctx); err == nil || ok {
		t.Fatalf("cancelled context: leader = %v, err = %v; want a failed read", ok, err)
	}
}
