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
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestRouteStatusSettledOnlyWhileUnchanged: a round that desires what a
// route already carries writes nothing; but when someone else rewrites
// the route's status, or what we desire changes, the next round writes
// ours again, though the rounds before had found it settled.
//
// It runs twice: with a writer reading through a plain client, and with
// one reading the informers' stores, as the controller's does.
func TestRouteStatusSettledOnlyWhileUnchanged(t *testing.T) {
	t.Run("client", func(t *testing.T) { routeStatusSettled(t, newFixture(t, "settled"), func() {}) })
	t.Run("informers", func(t *testing.T) {
		f, synced := informerFixture(t, "settled-informers")
		routeStatusSettled(t, f, synced)
	})
}

// informerFixture is newFixture(t, ns) with a writer that reads the
// informers' stores, as the controller's does, and a func that returns once
// the cache has caught up with the apiserver's routes (as the
// controller's has, long before its next round).
func informerFixture(t *testing.T, ns string) (*fixture, func()) {
	f := newFixture(t, ns)
	c, err := cache.New(restCfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(f.ctx) }()
	if _, err := c.GetInformer(f.ctx, &gwv1.HTTPRoute{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(f.ctx, &gwv1.Gateway{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(f.ctx) {
		t.Fatal("cache did not sync")
	}
	cached, err := client.New(restCfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	f.w.Client, f.w.Informers = cached, c
	synced := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var live, seen gwv1.HTTPRouteList
			if err := kube.List(f.ctx, &live, client.InNamespace(f.key.Namespace)); err != nil {
				t.Fatal(err)
			}
			if err := c.List(f.ctx, &seen, client.InNamespace(f.key.Namespace)); err != nil {
				t.Fatal(err)
			}
			if len(live.Items) == len(seen.Items) && (len(live.Items) == 0 || live.Items[0].ResourceVersion == seen.Items[0].ResourceVersion) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the cache did not catch up")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return f, synced
}

func routeStatusSettled(t *testing.T, f *fixture, synced func()) {
	route := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: "app"},
		Spec:       gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}}},
	}
	if err := kube.Create(f.ctx, route); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: route.Namespace, Name: route.Name}
	desired := func(msg string) *translator.Result {
		return &translator.Result{HTTPRoutes: []translator.RouteStatus{{RouteState: &translator.RouteState{NamespacedName: key, Generation: 1, Parents: []gwv1.RouteParentStatus{{
			ParentRef: gwv1.ParentReference{Name: "web"}, ControllerName: names.ControllerName,
			Conditions: []metav1.Condition{status.Accepted(true, status.ReasonAccepted, msg, 1)},
		}}}}}}
	}
	get := func() *gwv1.HTTPRoute {
		t.Helper()
		r := &gwv1.HTTPRoute{}
		if err := kube.Get(f.ctx, key, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	accepted := func(r *gwv1.HTTPRoute) string {
		if len(r.Status.Parents) != 1 {
			return ""
		}
		if c := meta.FindStatusCondition(r.Status.Parents[0].Conditions, status.TypeAccepted); c != nil {
			return c.Message
		}
		return ""
	}
	write := func(res *translator.Result) {
		t.Helper()
		synced()
		if err := f.w.Write(f.ctx, res); err != nil {
			t.Fatal(err)
		}
	}

	write(desired("accepted"))
	r := get()
	if accepted(r) != "accepted" {
		t.Fatalf("first round: status %+v", r.Status)
	}
	write(desired("accepted"))
	if again := get(); again.ResourceVersion != r.ResourceVersion {
		t.Fatal("a round that desired what the route carries wrote it")
	}

	r.Status.Parents[0].Conditions[0].Message = "tampered"
	if err := kube.Status().Update(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	write(desired("accepted"))
	if got := accepted(get()); got != "accepted" {
		t.Fatalf("after another writer changed the status, the round left %q", got)
	}

	write(desired("accepted again"))
	if got := accepted(get()); got != "accepted again" {
		t.Fatalf("after the desired status changed, the route says %q", got)
	}

	// A round that no longer reports the route drops our entry
	// (staleEntries).
	write(&translator.Result{})
	if r := get(); len(r.Status.Parents) != 0 {
		t.Fatalf("a route no longer reported keeps our status: %+v", r.Status.Parents)
	}
}

// trackedRoute is a running writer (Start) that tracks the routes'
// informer events, reading the informers' stores, and one HTTPRoute
// "app" in its namespace; parents is the status we desire for it.
type trackedRoute struct {
	*fixture
	synced  func()
	key     types.NamespacedName
	parents []gwv1.RouteParentStatus
}

func newTrackedRoute(t *testing.T, ns string) *trackedRoute {
	t.Helper()
	f, synced := informerFixture(t, ns)
	go func() { _ = f.w.Start(f.ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !writer.ChangesTracked(f.w, "HTTPRoute"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer does not track HTTPRoute changes")
		}
	}
	route := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: "app"},
		Spec:       gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}}},
	}
	if err := kube.Create(f.ctx, route); err != nil {
		t.Fatal(err)
	}
	return &trackedRoute{fixture: f, synced: synced, key: types.NamespacedName{Namespace: route.Namespace, Name: route.Name},
		parents: []gwv1.RouteParentStatus{{
			ParentRef: gwv1.ParentReference{Name: "web"}, ControllerName: names.ControllerName,
			Conditions: []metav1.Condition{status.Accepted(true, status.ReasonAccepted, "accepted", 1)},
		}}}
}

// get reads the route from the apiserver.
func (tr *trackedRoute) get(t *testing.T) *gwv1.HTTPRoute {
	t.Helper()
	r := &gwv1.HTTPRoute{}
	if err := kube.Get(tr.ctx, tr.key, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// waitEvent returns once the writer saw the route's last change.
func (tr *trackedRoute) waitEvent(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !writer.ChangePending(tr.w, "HTTPRoute", tr.key); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer saw no event for the route")
		}
	}
}

// TestRouteStatusUnreadUntilItChanges: a running writer (Start) tracks the
// routes' informer events, and a round whose desired list for a route is
// the very list it settled (the Memo hands an unchanged route the same
// one) skips that route without reading it, until the route changes:
// another writer's edit of its status is still undone by the next round.
func TestRouteStatusUnreadUntilItChanges(t *testing.T) {
	tr := newTrackedRoute(t, "settled-unread")
	f, synced, key, parents := tr.fixture, tr.synced, tr.key, tr.parents
	// Every round gets a new Result with the same list, as the Memo's.
	write := func() {
		t.Helper()
		synced()
		if err := f.w.Write(f.ctx, &translator.Result{HTTPRoutes: []translator.RouteStatus{{RouteState: &translator.RouteState{NamespacedName: key, Generation: 1, Parents: parents}}}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func() *gwv1.HTTPRoute { t.Helper(); return tr.get(t) }
	waitEvent := func() { t.Helper(); tr.waitEvent(t) }

	write() // reads and patches
	r := get()
	if len(r.Status.Parents) != 1 {
		t.Fatalf("first round: status %+v", r.Status)
	}
	waitEvent() // our own patch
	write()     // reads once more: the patch was an event
	if n := writer.LastUnread(f.w); n != 0 {
		t.Fatalf("the round after our patch settled %d routes unread, want 0", n)
	}
	write()
	if n := writer.LastUnread(f.w); n != 1 {
		t.Fatalf("a round with nothing changed settled %d routes unread, want 1", n)
	}
	if again := get(); again.ResourceVersion != r.ResourceVersion {
		t.Fatal("a round that desired what the route carries wrote it")
	}

	r.Status.Parents[0].Conditions[0].Message = "tampered"
	if err := kube.Status().Update(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	waitEvent()
	write()
	if n := writer.LastUnread(f.w); n != 0 {
		t.Fatalf("the round after another writer's edit settled %d routes unread, want 0", n)
	}
	if c := meta.FindStatusCondition(get().Status.Parents[0].Conditions, status.TypeAccepted); c == nil || c.Message != "accepted" {
		t.Fatalf("after another writer changed the status, the round left %+v", c)
	}

	// Stale entries: after full sweeps, a sweep looks only at the routes
	// no longer desired and those that changed, and still finds both.
	if !writer.SweptFully(f.w, "HTTPRoute") {
		t.Fatal("no full stale sweep while the changes are tracked")
	}
	none := func() {
		t.Helper()
		synced()
		if err := f.w.Write(f.ctx, &translator.Result{}); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent() // our restoring patch
	write()     // takes that change: the next sweep finds the route only among the forgotten
	if writer.ChangePending(f.w, "HTTPRoute", key) {
		t.Fatal("a round with nothing to write made a change")
	}
	none()
	if r := get(); len(r.Status.Parents) != 0 {
		t.Fatalf("a route no longer desired keeps our status: %+v", r.Status.Parents)
	}
	waitEvent() // our removing patch
	none()
	r = get()
	r.Status.Parents = []gwv1.RouteParentStatus{*parents[0].DeepCopy()}
	r.Status.Parents[0].Conditions[0].LastTransitionTime = metav1.Now()
	if err := kube.Status().Update(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	waitEvent()
	if !writer.SweptFully(f.w, "HTTPRoute") {
		t.Fatal("the sweeps since were not the short ones")
	}
	none()
	if r := get(); len(r.Status.Parents) != 0 {
		t.Fatalf("our entry another writer put on a route we do not desire stayed: %+v", r.Status.Parents)
	}
}

// TestRouteRoundSkippedForTheSameLists: a Result that reports the very
// route lists of the one written before (an endpoint refresh hands them
// on) gets no route round while the informers saw no route change; a
// change seen since (our own patch, another writer's edit) brings the
// round back, and another writer's edit is still undone.
func TestRouteRoundSkippedForTheSameLists(t *testing.T) {
	tr := newTrackedRoute(t, "same-lists")
	f := tr.fixture
	first := &translator.Result{HTTPRoutes: []translator.RouteStatus{{RouteState: &translator.RouteState{NamespacedName: tr.key, Generation: 1, Parents: tr.parents}}}}
	// Every round gets a copy of first: a new Result with its lists.
	write := func() {
		t.Helper()
		tr.synced()
		res := *first
		if err := f.w.Write(f.ctx, &res); err != nil {
			t.Fatal(err)
		}
	}
	get := func() *gwv1.HTTPRoute { t.Helper(); return tr.get(t) }
	waitEvent := func() { t.Helper(); tr.waitEvent(t) }
	skipped := func(want int64) {
		t.Helper()
		if got := writer.SkippedRouteRounds(f.w); got != want {
			t.Fatalf("%d route rounds skipped, want %d", got, want)
		}
	}

	write() // reads and patches
	skipped(0)
	r := get()
	if len(r.Status.Parents) != 1 {
		t.Fatalf("first round: status %+v", r.Status)
	}
	waitEvent() // our own patch
	write()     // a change seen: the round runs
	skipped(0)
	write() // nothing seen since: skipped
	write()
	skipped(2)
	if again := get(); again.ResourceVersion != r.ResourceVersion {
		t.Fatal("a skipped round wrote the route")
	}

	r.Status.Parents[0].Conditions[0].Message = "tampered"
	if err := kube.Status().Update(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	waitEvent()
	write()
	skipped(2)
	if c := meta.FindStatusCondition(get().Status.Parents[0].Conditions, status.TypeAccepted); c == nil || c.Message != "accepted" {
		t.Fatalf("after another writer changed the status, the round left %+v", c)
	}
	waitEvent() // our restoring patch
	write()
	write()
	skipped(3)

	// A Result with a list of its own is no refresh: its round runs.
	if err := f.w.Write(f.ctx, &translator.Result{HTTPRoutes: slices.Clone(first.HTTPRoutes)}); err != nil {
		t.Fatal(err)
	}
	skipped(3)
}
