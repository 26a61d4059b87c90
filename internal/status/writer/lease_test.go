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

// leaseFixture is a Lease on the suite's apiserver, a running LeaseWatch
// for identity "us" on it, and a clock the test moves.
type leaseFixture struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	watch *writer.LeaseWatch

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
	f.watch = writer.NewLeaseWatch(lock, f.clock)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.watch.Start(wctx)
	}()
	t.Cleanup(func() { stop(); <-done })
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

// cancelled is a context a live read fails with: a check that answers
// under it answered from the watch.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// fromWatch reports whether the check answers "held" without a live read.
func (f *leaseFixture) fromWatch() bool {
	held, err := f.watch.Check(cancelled())
	return err == nil && held
}

// eventually waits up to 5 s for cond.
func (f *leaseFixture) eventually(cond func() bool, what string) {
	f.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatalf("after 5 s: %s", what)
		}
	}
}

// live is the check's answer with a live context.
func (f *leaseFixture) live() (bool, error) { return f.watch.Check(f.ctx) }

// TestLeaseWatchAnswersFromTheWatchAndSeesATakeover: a Lease this replica
// holds, recently renewed, is answered from the watch (no read); a
// takeover by hand is seen as soon as the watch delivers it, and from then
// on the check reads live and says no.
func TestLeaseWatchAnswersFromTheWatchAndSeesATakeover(t *testing.T) {
	f := newLeaseFixture(t, "lease-watch")
	f.hold("us", 0)
	f.eventually(f.fromWatch, "the watch shows the Lease held")
	f.hold("them", 0)
	f.eventually(func() bool { return !f.fromWatch() }, "the watch shows the takeover")
	if held, err := f.live(); err != nil || held {
		t.Fatalf("after a takeover: held=%v err=%v, want false", held, err)
	}
	f.hold("us", 0)
	f.eventually(f.fromWatch, "the watch shows the Lease held again")
}

// TestLeaseWatchTrustsOnlyARecentRenewal: a watched renewal older than a
// third of the lease duration is not trusted (a watch that stopped
// delivering is not believed for long), and the check reads live: still
// held until expiry, not after.
func TestLeaseWatchTrustsOnlyARecentRenewal(t *testing.T) {
	f := newLeaseFixture(t, "lease-watch-age")
	f.hold("us", 0)
	f.eventually(f.fromWatch, "the watch shows the Lease held")
	f.advance(4 * time.Second)
	if !f.fromWatch() {
		t.Fatal("a renewal 4 s old (of 15) is not trusted")
	}
	f.advance(2 * time.Second)
	if f.fromWatch() {
		t.Fatal("a renewal 6 s old (of 15) is trusted from the watch")
	}
	if held, err := f.live(); err != nil || !held {
		t.Fatalf("6 s after the renewal: held=%v err=%v, want a live read saying true", held, err)
	}
	f.advance(10 * time.Second)
	if held, err := f.live(); err != nil || held {
		t.Fatalf("after expiry: held=%v err=%v, want false", held, err)
	}
}

// TestLeaseWatchDeletedLease: a deleted Lease is not held; the check reads
// live and reports the read's error.
func TestLeaseWatchDeletedLease(t *testing.T) {
	f := newLeaseFixture(t, "lease-watch-deleted")
	f.hold("us", 0)
	f.eventually(f.fromWatch, "the watch shows the Lease held")
	if err := clients.CoordinationV1().Leases(f.ns).Delete(f.ctx, "leader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually(func() bool { return !f.fromWatch() }, "the watch shows the Lease gone")
	if held, err := f.live(); err == nil || held {
		t.Fatalf("deleted Lease: held=%v err=%v, want an error", held, err)
	}
}
