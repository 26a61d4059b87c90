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

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
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

// LeaseWatch is a LeaderCheck that answers from a watch on the one Lease
// when the watch shows this replica holding it, renewed recently, and
// reads the Lease live otherwise. A bulk round patches thousands of
// routes, and a live read before each patch was half its apiserver round
// trips; the watch sees a takeover as soon as the apiserver sends it.
//
// A watched record is trusted only while the renewal it shows is less than
// a third of the lease duration old. The leader elector renews far more
// often than that (controller-runtime: every 2 s of 15), so a healthy watch
// always shows a recent renewal; a watch that stopped delivering is
// trusted for at most that third, and never near the lease's expiry. Every
// other case (not synced yet, no Lease, another holder, an old renewal)
// reads live, as LeaseLeaderCheck does. Add it to the manager (it runs on
// every replica, so a new leader finds it synced) and use Check.
type LeaseWatch struct {
	identity string
	live     LeaderCheck
	now      func() time.Time
	informer toolscache.SharedIndexInformer // nil: lock is no Lease lock
	key      string
}

// NewLeaseWatch returns the LeaseWatch of lock; now defaults to time.Now.
func NewLeaseWatch(lock resourcelock.Interface, now func() time.Time) *LeaseWatch {
	if now == nil {
		now = time.Now
	}
	l := &LeaseWatch{identity: lock.Identity(), live: LeaseLeaderCheck(lock, now), now: now}
	ll, ok := lock.(*resourcelock.LeaseLock)
	if !ok {
		return l
	}
	leases := ll.Client.Leases(ll.LeaseMeta.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", ll.LeaseMeta.Name).String()
	l.key = ll.LeaseMeta.Namespace + "/" + ll.LeaseMeta.Name
	l.informer = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return leases.Watch(ctx, o)
		},
	}, &coordinationv1.Lease{}, 0, toolscache.Indexers{})
	return l
}

// NeedLeaderElection is false: the watch runs on standbys too.
func (l *LeaseWatch) NeedLeaderElection() bool { return false }

// Start runs the watch until ctx ends.
func (l *LeaseWatch) Start(ctx context.Context) error {
	if l.informer != nil {
		l.informer.RunWithContext(ctx)
	}
	return nil
}

// Check is the LeaderCheck: the watch's answer when it shows this replica
// holding a recently renewed Lease, else a live read.
func (l *LeaseWatch) Check(ctx context.Context) (bool, error) {
	if l.watchedHeld() {
		return true, nil
	}
	return l.live(ctx)
}

// watchedHeld reports whether the synced watch shows this replica holding
// the Lease, renewed less than a third of its duration ago.
func (l *LeaseWatch) watchedHeld() bool {
	if l.informer == nil || !l.informer.HasSynced() {
		return false
	}
	item, ok, err := l.informer.GetStore().GetByKey(l.key)
	if err != nil || !ok {
		return false
	}
	lease, ok := item.(*coordinationv1.Lease)
	if !ok {
		return false
	}
	rec := resourcelock.LeaseSpecToLeaderElectionRecord(&lease.Spec)
	if rec.HolderIdentity != l.identity || rec.LeaseDurationSeconds <= 0 {
		return false
	}
	age := l.now().Sub(rec.RenewTime.Time)
	return age >= 0 && age < time.Duration(rec.LeaseDurationSeconds)*time.Second/3
}
