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

// Package writer is the one status writer: it takes the translator's desired
// status, gates Programmed on the data plane, and patches only what changed.
// It writes only while this replica holds the Lease, and re-checks the Lease
// immediately before every patch.
package writer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/promreg"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// LeaderCheck answers whether this replica still holds the Lease:
// LeaseLeaderCheck with a live read, LeaseWatch from a watch on the Lease
// that shows it held and recently renewed, else with a live read.
type LeaderCheck func(ctx context.Context) (bool, error)

// DataPlane reports what the proxies of a Gateway's scope did with one
// generation of it: how many are connected, how many bound its ports and
// acked it, and which refused it.
type DataPlane interface {
	Gateway(namespace, name string, generation int64) GatewayDataPlane
}

// EventRecorder records Kubernetes Events (the manager's recorder fits).
type EventRecorder interface {
	Event(object runtime.Object, eventtype, reason, message string)
}

// ErrNotLeader stops a write round when the Lease was lost.
var ErrNotLeader = errors.New("not the leader: status not written")

// Writer is a manager.Runnable that needs leader election.
type Writer struct {
	Client   client.Client
	Leader   LeaderCheck
	Recorder EventRecorder
	// DataPlane gates Programmed; nil means Programmed follows the
	// published snapshot.
	DataPlane DataPlane
	Now       func() time.Time
	Log       logr.Logger
	// Registerer receives the writer's metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Informers, when set (the manager's cache, which Client reads),
	// lets a round read routes and Gateways from the informers' stores
	// without copying them (store.go).
	Informers cache.Informers
	// AfterRound, when set, is called after every round (the pipeline
	// returns free memory once rounds and rebuilds stop).
	AfterRound func()

	store storeReader

	patches    *prometheus.CounterVec
	programmed *programmedMetric
	// settled and settledGateways let a round skip the routes and
	// Gateways whose status is known to be what it desires (settled.go).
	settled, settledGateways settledStatuses
	// changes are the routes the informers saw change (changes.go);
	// unread counts the routes the last route walk settled without a read.
	changes routeChanges
	unread  atomic.Int64
	// Of the current round (Write's goroutine only): the route changes
	// routes took and the kinds tracked in full; and the route kinds whose
	// last stale sweep was a full one, complete and tracked, after which
	// a sweep need only look at what changed or was forgotten since
	// (staleEntries).
	roundChanged map[settledKey]struct{}
	roundTracked map[string]bool
	sweptFully   map[string]bool
	// gatewayChanges are the Gateways the informer saw change, and
	// gatewaysDone what the last Gateway round that tried every Gateway
	// without an error did (gatewayWalk).
	gatewayChanges routeChanges
	gatewaysDone   *gatewayRound
	// routesDone is the Result whose routes the last route walk brought
	// in full, without an error (nil: none), for the next walk to go by
	// (walkRoutes).
	routesDone *translator.Result
	// gatewayDigests are the latest Result's (desiredDigests).
	gatewayDigests atomic.Pointer[desiredDigests]

	latest atomic.Pointer[translator.Result]
	// written is the last Result a round wrote without an error.
	written atomic.Pointer[translator.Result]
	// skippedRouteRounds counts the rounds that skipped the routes
	// (sameRoutes; tests read it).
	skippedRouteRounds atomic.Int64
	// classesSettled are the GatewayClasses whose status the last look
	// found to be what it desired (class_stamp.go; Write's goroutine
	// only), and skippedClassReads counts the looks they spared (tests).
	classesSettled    map[types.NamespacedName]classStamp
	skippedClassReads atomic.Int64
	notify            chan struct{}
	once              sync.Once

	mu         sync.Mutex
	lastEvents map[string]bool
	// rejectionsSeen dedupes SnapshotRejected Events: key → when the
	// rejection was last seen standing.
	rejectionsSeen map[string]time.Time
}

func newPatchesMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	return promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coxswain_controller_status_patches_total",
		Help: "Status patches by kind and result.",
	}, []string{"kind", "result"}))
}

func (w *Writer) init() {
	w.once.Do(func() {
		w.notify = make(chan struct{}, 1)
		if w.Now == nil {
			w.Now = time.Now
		}
		w.patches = newPatchesMetric(w.Registerer)
		w.programmed = newProgrammedMetric(w.Registerer)
		w.store.informers = w.Informers
		w.lastEvents = map[string]bool{}
		w.rejectionsSeen = map[string]time.Time{}
		w.settled.collectForgotten()
	})
}

// NeedLeaderElection is true: standbys never write.
func (w *Writer) NeedLeaderElection() bool { return true }

// Accept stores the latest Result (provider.Sink).
func (w *Writer) Accept(_ context.Context, res *translator.Result) {
	w.init()
	w.latest.Store(res)
	w.Notify()
}

// Notify asks for a write round (e.g. when the data plane acks).
func (w *Writer) Notify() {
	w.init()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// Start writes after every notification until ctx ends. Failed rounds are
// retried with a bounded backoff.
func (w *Writer) Start(ctx context.Context) error {
	w.init()
	for _, kind := range routeStatuses(&translator.Result{}) {
		w.changes.watch(ctx, w.Informers, kind.name, kind.newObj())
	}
	w.gatewayChanges.watch(ctx, w.Informers, "Gateway", &gwv1.Gateway{})
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.notify:
		}
		res := w.latest.Load()
		if res == nil {
			continue
		}
		err := w.Write(ctx, res)
		if w.AfterRound != nil {
			w.AfterRound()
		}
		if err != nil {
			w.Log.Info("status round incomplete, retrying", "error", err.Error(), "in", backoff)
			time.AfterFunc(backoff, w.Notify)
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// Write brings every object's status to the desired state. It returns the
// first error after trying every object (ErrNotLeader stops at once).
func (w *Writer) Write(ctx context.Context, res *translator.Result) error {
	w.init()
	// A Result this writer already brought in full (the last round had no
	// error, not even a lost Lease) gets its Gateways again (a proxy acked:
	// Programmed may change), not its routes: their status does not
	// depend on the data plane, and at 10,000 routes comparing them took
	// tens of milliseconds a round.
	prev := w.written.Swap(nil)
	again := prev == res
	// A Result that reports the very route and policy lists of the last
	// one written in full (an endpoint refresh hands them on: its routes'
	// status cannot have changed) gets no route round either while the
	// informers saw no route change since: at 10,000 routes that round
	// was a tenth of the controller's CPU under endpoint churn. A change
	// seen (another writer's edit of a status) brings the round back.
	sameRoutes := !again && prev != nil && w.sameRoutes(prev, res)
	if sameRoutes {
		w.skippedRouteRounds.Add(1)
	}
	var errs []error
	record := func(err error) bool {
		if errors.Is(err, ErrNotLeader) {
			errs = append(errs, err)
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	}
	for i := range res.GatewayClasses {
		if !record(w.gatewayClass(ctx, &res.GatewayClasses[i])) {
			return errors.Join(errs...)
		}
	}
	// The Gateways of this round keep their coxswain_gateway_programmed
	// series (one that failed to read keeps its last value); the others
	// are dropped once every Gateway was tried.
	w.settledGateways.begin()
	readGateway := w.reader(ctx, func() client.Object { return &gwv1.Gateway{} })
	desired := w.desiredDigests(res)
	walk, epoch := w.gatewayWalk(readGateway)
	w.gatewaysDone = nil
	settled := make([]bool, len(res.Gateways))
	for i := range res.Gateways {
		d := &res.Gateways[i]
		if walk != nil && walk.skip(&w.settledGateways, d) {
			settled[i] = true
			continue
		}
		ok, err := w.gateway(ctx, readGateway, d, desired.digests[i])
		settled[i] = ok
		if !record(err) {
			w.settledGateways.end(false, true)
			return errors.Join(errs...)
		}
	}
	if walk != nil {
		walk.forgetRest(&w.settledGateways)
	}
	// A walk forgot what it no longer desires itself (gatewayWalk).
	w.settledGateways.end(len(errs) == 0, walk == nil)
	if len(errs) == 0 {
		w.gatewaysDone = &gatewayRound{res: res, epoch: epoch, settled: settled}
	}
	w.programmed.prune(res.Gateways)
	if !again && !sameRoutes && !record(w.routes(ctx, res)) {
		return errors.Join(errs...)
	}
	for i := range res.BackendTLSPolicies {
		if !record(w.backendTLSPolicy(ctx, &res.BackendTLSPolicies[i])) {
			return errors.Join(errs...)
		}
	}
	for i := range res.Policies {
		if !record(w.policy(ctx, &res.Policies[i])) {
			return errors.Join(errs...)
		}
	}
	for i := range res.ListenerSets {
		if !record(w.listenerSet(ctx, &res.ListenerSets[i])) {
			return errors.Join(errs...)
		}
	}
	for i := range res.Ingresses {
		if !record(w.ingress(ctx, &res.Ingresses[i])) {
			return errors.Join(errs...)
		}
	}
	if !again && !sameRoutes && !record(w.staleEntries(ctx, res)) {
		return errors.Join(errs...)
	}
	if !record(w.parameters(ctx, res)) {
		return errors.Join(errs...)
	}
	if err := w.events(ctx, res.Events); err != nil {
		errs = append(errs, err)
	}
	w.forgetRejections()
	if len(errs) == 0 {
		w.written.Store(res)
	}
	return errors.Join(errs...)
}

// sameRoutes reports whether res reports the very route and policy lists
// of prev, a Result written in full, and the informers saw no route
// change since (every kind res reports routes of tracked in full).
func (w *Writer) sameRoutes(prev, res *translator.Result) bool {
	if !lists.Same(prev.Policies, res.Policies) {
		return false
	}
	var kinds []string
	before := routeStatuses(prev)
	for i, kind := range routeStatuses(res) {
		if !lists.Same(before[i].reported, kind.reported) {
			return false
		}
		if len(kind.reported) > 0 {
			kinds = append(kinds, kind.name)
		}
	}
	return w.changes.quiet(kinds)
}

// desiredDigests are res's, taken at its first round.
func (w *Writer) desiredDigests(res *translator.Result) *desiredDigests {
	prev := w.gatewayDigests.Load()
	if prev != nil && prev.of == res {
		return prev
	}
	dd := newDesiredDigests(res, prev)
	w.gatewayDigests.Store(dd)
	return dd
}

// patch re-checks leadership, then patches obj's status from orig with an
// optimistic lock, so a concurrent writer's entries are never overwritten
// blindly: a conflict retries next round from fresh state.
func (w *Writer) patch(ctx context.Context, kind string, obj, orig client.Object) error {
	if w.Leader != nil {
		ok, err := w.Leader(ctx)
		if err != nil {
			return fmt.Errorf("checking the Lease: %w", err)
		}
		if !ok {
			w.patches.WithLabelValues(kind, "not_leader").Inc()
			return ErrNotLeader
		}
	}
	err := w.patchStatus(ctx, obj, orig)
	switch {
	case err == nil:
		w.patches.WithLabelValues(kind, "ok").Inc()
		return nil
	case apierrors.IsNotFound(err):
		w.patches.WithLabelValues(kind, "gone").Inc()
		return nil
	default:
		w.patches.WithLabelValues(kind, "error").Inc()
		return fmt.Errorf("patch %s %s status: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
}

// patchStatus patches obj's status from orig with an optimistic lock and
// sets obj's resourceVersion to the one the patch made (all the writer
// reads of the result). The apiserver answers with the object's metadata
// only (PartialObjectMetadata): at 1,000 Gateways, decoding the whole
// Gateway and route it sent back was half of the writer's CPU per route
// change, and encoding it was work for the apiserver.
func (w *Writer) patchStatus(ctx context.Context, obj, orig client.Object) error {
	data, err := statusPatch(orig, obj)
	if err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, w.Client.Scheme())
	if err != nil {
		return err
	}
	md := &metav1.PartialObjectMetadata{}
	md.SetGroupVersionKind(gvk)
	md.Namespace, md.Name = obj.GetNamespace(), obj.GetName()
	if err := w.Client.Status().Patch(ctx, md, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	obj.SetResourceVersion(md.ResourceVersion)
	return nil
}

func (w *Writer) get(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	if err := w.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (w *Writer) now() metav1.Time { return metav1.NewTime(w.Now().Truncate(time.Second)) }

func (w *Writer) gatewayClass(ctx context.Context, d *translator.GatewayClassStatus) error {
	obj := &gwv1.GatewayClass{}
	if ok, err := w.get(ctx, d.NamespacedName, obj); !ok || err != nil {
		return err
	}
	stamp := stampClass(obj.ResourceVersion, d)
	if last, ok := w.classesSettled[d.NamespacedName]; ok && obj.ResourceVersion != "" && last.same(stamp) {
		w.skippedClassReads.Add(1)
		return nil
	}
	orig := obj.DeepCopy()
	obj.Status.Conditions, _ = status.MergeConditions(obj.Status.Conditions, d.Status.Conditions, obj.Generation, w.now())
	obj.Status.SupportedFeatures = d.Status.SupportedFeatures
	if apiequality.Semantic.DeepEqual(orig.Status, obj.Status) {
		if w.classesSettled == nil {
			w.classesSettled = map[types.NamespacedName]classStamp{}
		}
		w.classesSettled[d.NamespacedName] = stamp
		return nil
	}
	delete(w.classesSettled, d.NamespacedName)
	return w.patch(ctx, "GatewayClass", obj, orig)
}

// gateway writes the status of one Gateway, read with read; desired is
// desiredGatewayDigest(d).
//
// settled says the Gateway's status is known to be what it desires: it
// was, or the patch made it so (not when a proxy's refusal stands, whose
// Events every round records).
func (w *Writer) gateway(ctx context.Context, read objectReader, d *translator.GatewayStatus, desired statusDigest) (settled bool, err error) {
	o, ok, err := read.get(ctx, d.NamespacedName)
	if !ok || err != nil {
		return false, err
	}
	cached := o.(*gwv1.Gateway)
	g := w.gateFor(d, cached.Generation)
	key := settledKey{"Gateway", d.NamespacedName}
	digest, settable := gatedDigest(desired, g)
	if settable && w.settledGateways.settled(key, cached.ResourceVersion, digest, listID{}) {
		return true, nil
	}
	obj := cached.DeepCopy()
	orig := obj.DeepCopy()
	now := w.now()
	w.recordRejections(obj, g)
	obj.Status.Conditions, _ = status.MergeConditions(obj.Status.Conditions, g.apply(orig.Status.Conditions, d.Status.Conditions), obj.Generation, now)
	w.programmed.observe(d.NamespacedName, obj.Status.Conditions, obj.Generation)
	obj.Status.Addresses = d.Status.Addresses
	obj.Status.AttachedListenerSets = d.Status.AttachedListenerSets
	obj.Status.Listeners = mergeListeners(orig.Status.Listeners, d.Status.Listeners, listenerName, listenerConditions, g.apply, obj.Generation, now)
	if apiequality.Semantic.DeepEqual(orig.Status, obj.Status) {
		if settable {
			w.settledGateways.record(key, cached.ResourceVersion, digest, listID{})
		}
		return settable, nil
	}
	if err := w.patch(ctx, "Gateway", obj, orig); err != nil {
		return false, err
	}
	if settable {
		w.settledGateways.record(key, obj.GetResourceVersion(), digest, listID{})
	}
	return settable, nil
}

// backendTLSPolicy replaces this controller's entries of status.ancestors
// with the desired ones and leaves every other controller's untouched.
func (w *Writer) backendTLSPolicy(ctx context.Context, d *translator.PolicyStatus) error {
	return writeOurs(ctx, w, backendTLSPolicyKind, d.NamespacedName, d.Status.Ancestors)
}

// policy writes the status.ancestors of one of our policy kinds, as
// backendTLSPolicy does; a kind the writer does not know is skipped.
func (w *Writer) policy(ctx context.Context, d *translator.KindPolicyStatus) error {
	k, ok := policyKindsByName[d.Kind]
	if !ok {
		w.Log.Info("skipping the status of a policy of an unknown kind", "kind", d.Kind, "policy", d.NamespacedName)
		return nil
	}
	return writeOurs(ctx, w, k, d.NamespacedName, d.Status.Ancestors)
}

func (w *Writer) listenerSet(ctx context.Context, d *translator.ListenerSetStatus) error {
	obj := &gwv1.ListenerSet{}
	if ok, err := w.get(ctx, d.NamespacedName, obj); !ok || err != nil {
		return err
	}
	orig := obj.DeepCopy()
	now := w.now()
	obj.Status.Conditions, _ = status.MergeConditions(obj.Status.Conditions, d.Status.Conditions, obj.Generation, now)
	obj.Status.Listeners = mergeListeners(orig.Status.Listeners, d.Status.Listeners, entryName, entryConditions, nil, obj.Generation, now)
	if apiequality.Semantic.DeepEqual(orig.Status, obj.Status) {
		return nil
	}
	return w.patch(ctx, "ListenerSet", obj, orig)
}

// statusKind is what the writer needs of one kind whose status holds
// per-controller entries E (a route's status.parents, a policy's
// status.ancestors): a fresh object, a list, where the entries live, and how
// to merge them (mergeOurs).
type statusKind[E any] struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
	items   func(client.ObjectList) []client.Object
	entries func(client.Object) *[]E
	entryOps[E]
}

// entryOps are mergeOurs' accessors of one entry type.
type entryOps[E any] struct {
	controller func(*E) *gwv1.GatewayController
	same       func(a, b *E) bool
	conds      func(*E) *[]metav1.Condition
}

var (
	parentOps   = entryOps[gwv1.RouteParentStatus]{parentController, sameParent, parentConditions}
	ancestorOps = entryOps[gwv1.PolicyAncestorStatus]{ancestorController, sameAncestor, ancestorConditions}
)

// routeKind is a route kind: its entries are status.parents.
type routeKind = statusKind[gwv1.RouteParentStatus]

// policyKind is a policy kind: its entries are status.ancestors.
type policyKind = statusKind[gwv1.PolicyAncestorStatus]

// newStatusKind is the statusKind of object type O with list type L, whose
// entries entries returns.
func newStatusKind[E any, O any, L any, PO interface {
	*O
	client.Object
}, PL interface {
	*L
	client.ObjectList
}](name string, ops entryOps[E], items func(PL) []O, entries func(PO) *[]E) statusKind[E] {
	return statusKind[E]{
		name:    name,
		newObj:  func() client.Object { return PO(new(O)) },
		newList: func() client.ObjectList { return PL(new(L)) },
		items: func(l client.ObjectList) []client.Object {
			src := items(l.(PL))
			out := make([]client.Object, len(src))
			for i := range src {
				out[i] = PO(&src[i])
			}
			return out
		},
		entries:  func(o client.Object) *[]E { return entries(o.(PO)) },
		entryOps: ops,
	}
}

// newRouteKind is the routeKind of route type R with list type L.
func newRouteKind[R any, L any, PR interface {
	*R
	client.Object
}, PL interface {
	*L
	client.ObjectList
}](name string, items func(PL) []R, parents func(PR) *[]gwv1.RouteParentStatus) routeKind {
	return newStatusKind(name, parentOps, items, parents)
}

// newPolicyKind is the policyKind of policy type P with list type L.
func newPolicyKind[P any, L any, PP interface {
	*P
	client.Object
}, PL interface {
	*L
	client.ObjectList
}](name string, items func(PL) []P, status func(PP) *gwv1.PolicyStatus) policyKind {
	return newStatusKind(name, ancestorOps, items, func(p PP) *[]gwv1.PolicyAncestorStatus { return &status(p).Ancestors })
}

var (
	httpRouteKind = newRouteKind("HTTPRoute", func(l *gwv1.HTTPRouteList) []gwv1.HTTPRoute { return l.Items },
		func(r *gwv1.HTTPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })
	grpcRouteKind = newRouteKind("GRPCRoute", func(l *gwv1.GRPCRouteList) []gwv1.GRPCRoute { return l.Items },
		func(r *gwv1.GRPCRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })
	tlsRouteKind = newRouteKind("TLSRoute", func(l *gwv1.TLSRouteList) []gwv1.TLSRoute { return l.Items },
		func(r *gwv1.TLSRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })
	tcpRouteKind = newRouteKind("TCPRoute", func(l *gwv1.TCPRouteList) []gwv1.TCPRoute { return l.Items },
		func(r *gwv1.TCPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })
	udpRouteKind = newRouteKind("UDPRoute", func(l *gwv1.UDPRouteList) []gwv1.UDPRoute { return l.Items },
		func(r *gwv1.UDPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })

	backendTLSPolicyKind = newPolicyKind("BackendTLSPolicy", func(l *gwv1.BackendTLSPolicyList) []gwv1.BackendTLSPolicy { return l.Items },
		func(p *gwv1.BackendTLSPolicy) *gwv1.PolicyStatus { return &p.Status })
)

// policyKinds are our policy kinds (gateway.coxswain-labs.dev), whose
// statuses Result.Policies carries.
var policyKinds = []policyKind{
	newPolicyKind(gatewayv1alpha1.KindIPAccessControl, func(l *gatewayv1alpha1.IpAccessControlList) []gatewayv1alpha1.IpAccessControl { return l.Items },
		func(p *gatewayv1alpha1.IpAccessControl) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindRateLimit, func(l *gatewayv1alpha1.RateLimitList) []gatewayv1alpha1.RateLimit { return l.Items },
		func(p *gatewayv1alpha1.RateLimit) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindBasicAuth, func(l *gatewayv1alpha1.BasicAuthList) []gatewayv1alpha1.BasicAuth { return l.Items },
		func(p *gatewayv1alpha1.BasicAuth) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindJWTAuth, func(l *gatewayv1alpha1.JwtAuthList) []gatewayv1alpha1.JwtAuth { return l.Items },
		func(p *gatewayv1alpha1.JwtAuth) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindExternalAuth, func(l *gatewayv1alpha1.CoxswainExternalAuthList) []gatewayv1alpha1.CoxswainExternalAuth {
		return l.Items
	},
		func(p *gatewayv1alpha1.CoxswainExternalAuth) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindCompression, func(l *gatewayv1alpha1.CompressionList) []gatewayv1alpha1.Compression { return l.Items },
		func(p *gatewayv1alpha1.Compression) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindRequestSizeLimit, func(l *gatewayv1alpha1.RequestSizeLimitList) []gatewayv1alpha1.RequestSizeLimit { return l.Items },
		func(p *gatewayv1alpha1.RequestSizeLimit) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindPathRewriteRegex, func(l *gatewayv1alpha1.PathRewriteRegexList) []gatewayv1alpha1.PathRewriteRegex { return l.Items },
		func(p *gatewayv1alpha1.PathRewriteRegex) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindRetryPolicy, func(l *gatewayv1alpha1.RetryPolicyList) []gatewayv1alpha1.RetryPolicy { return l.Items },
		func(p *gatewayv1alpha1.RetryPolicy) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindBackendPolicy, func(l *gatewayv1alpha1.CoxswainBackendPolicyList) []gatewayv1alpha1.CoxswainBackendPolicy {
		return l.Items
	},
		func(p *gatewayv1alpha1.CoxswainBackendPolicy) *gwv1.PolicyStatus { return &p.Status }),
	newPolicyKind(gatewayv1alpha1.KindClientTrafficPolicy, func(l *gatewayv1alpha1.ClientTrafficPolicyList) []gatewayv1alpha1.ClientTrafficPolicy { return l.Items },
		func(p *gatewayv1alpha1.ClientTrafficPolicy) *gwv1.PolicyStatus { return &p.Status }),
}

// policyKindsByName indexes policyKinds by kind name.
var policyKindsByName = func() map[string]policyKind {
	m := make(map[string]policyKind, len(policyKinds))
	for _, k := range policyKinds {
		m[k.name] = k
	}
	return m
}()

// routeStatuses pairs every route kind with its desired statuses.
func routeStatuses(res *translator.Result) []struct {
	routeKind
	reported []translator.RouteStatus
} {
	return []struct {
		routeKind
		reported []translator.RouteStatus
	}{
		{httpRouteKind, res.HTTPRoutes}, {grpcRouteKind, res.GRPCRoutes},
		{tlsRouteKind, res.TLSRoutes}, {tcpRouteKind, res.TCPRoutes}, {udpRouteKind, res.UDPRoutes},
	}
}

// setOurs replaces our entries of cached's status (k.entries) with
// desired, keeping every other controller's, and patches a copy when that
// changes anything; cached itself is never modified.
func setOurs[E any](ctx context.Context, w *Writer, k statusKind[E], cached client.Object, desired []E) error {
	patch := oursPatch(w, k, cached, desired)
	if patch == nil {
		return nil
	}
	_, err := patch(ctx)
	return err
}

// oursPatch is the patch that brings our entries of cached's status to
// desired (setOurs), or nil when they are there already. cached is the
// informer cache's own object (read without a copy): most rounds change
// nothing, and only a patch copies it.
func oursPatch[E any](w *Writer, k statusKind[E], cached client.Object, desired []E) func(context.Context) (patched client.Object, err error) {
	merge := func(obj client.Object) []E {
		return mergeOurs(*k.entries(obj), desired, k.controller, k.same, k.conds, obj.GetGeneration(), w.now())
	}
	if apiequality.Semantic.DeepEqual(*k.entries(cached), merge(cached)) {
		return nil
	}
	return func(ctx context.Context) (client.Object, error) {
		obj := cached.DeepCopyObject().(client.Object)
		// Merged again from the copy, so that no entry shares memory with
		// the cache.
		*k.entries(obj) = merge(obj)
		return obj, w.patch(ctx, k.name, obj, cached)
	}
}

// writeOurs is setOurs on the object of kind k named key, if it exists.
func writeOurs[E any](ctx context.Context, w *Writer, k statusKind[E], key types.NamespacedName, desired []E) error {
	obj, ok, err := w.cached(ctx, key, k.newObj())
	if !ok || err != nil {
		return err
	}
	return setOurs(ctx, w, k, obj, desired)
}

// routeWriters bounds the route status patches in flight in one round:
// routes are many (thousands, all new after a bulk apply), and each patch
// is a Lease read and a patch, round trips the apiserver can overlap.
const routeWriters = 8

// routes writes every route's status. The comparisons run in turn (CPU,
// one core: the rebuilds need the other); the patches they call for run
// routeWriters at a time. It returns the errors joined; after an
// ErrNotLeader it starts no more patches.
func (w *Writer) routes(ctx context.Context, res *translator.Result) error {
	var (
		mu        sync.Mutex
		errs      []error
		notLeader atomic.Bool
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		if errors.Is(err, ErrNotLeader) {
			notLeader.Store(true)
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	sem := make(chan struct{}, routeWriters)
	changed, tracked := w.changes.take()
	kinds := routeStatuses(res)
	readers := make([]objectReader, len(kinds))
	last := w.routesDone
	w.routesDone = nil
	for i, kind := range kinds {
		readers[i] = w.reader(ctx, kind.newObj)
		if len(kind.reported) > 0 && (!tracked[kind.name] || readers[i].ix == nil) {
			last = nil
		}
	}
	w.settled.begin()
	defer func() {
		complete := len(errs) == 0
		// A walk that went by the last one's list marked only what it
		// read, and forgot what that list had and this one lacks.
		w.settled.end(complete, last == nil)
		if complete {
			w.routesDone = res
		}
	}()
	w.settled.changedObjects(changed)
	w.roundChanged, w.roundTracked = changed, tracked
	unread := 0
	defer func() { w.unread.Store(int64(unread)) }()
	for ki, kind := range kinds {
		read := readers[ki]
		trusted := tracked[kind.name] && read.ix != nil
		var walk *routeWalk
		if last != nil {
			walk = newRouteWalk(kind.name, routeStatuses(last)[ki].reported, changed)
		}
		for i := range kind.reported {
			if notLeader.Load() {
				break
			}
			d := &kind.reported[i]
			if last != nil && walk.settled(&w.settled, d) {
				unread++
				continue
			}
			key, from := settledKey{kind.name, d.NamespacedName}, parentsID(d.Parents)
			if trusted && w.settled.settledUnchanged(key, from) {
				unread++
				continue
			}
			obj, ok, err := read.get(ctx, d.NamespacedName)
			if err != nil {
				fail(err)
				continue
			} else if !ok {
				continue
			}
			if w.settled.settledList(key, obj.GetResourceVersion(), from) {
				continue
			}
			digest := parentsDigest(d.Parents)
			if w.settled.settled(key, obj.GetResourceVersion(), digest, from) {
				continue
			}
			patch := oursPatch(w, kind.routeKind, obj, d.Parents)
			if patch == nil {
				w.settled.record(key, obj.GetResourceVersion(), digest, from)
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				patched, err := patch(ctx)
				if err != nil {
					fail(err)
					return
				}
				w.settled.record(key, patched.GetResourceVersion(), digest, from)
			}()
		}
		if last != nil && !notLeader.Load() {
			walk.forgetRest(&w.settled)
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		// What this round did not record is not among the forgotten.
		w.sweptFully = nil
	}
	return errors.Join(errs...)
}

// staleEntries removes this controller's status.parents entries from routes
// the translation no longer reports (their parentRefs left our Gateways),
// and its status.ancestors entries from our policies it no longer reports
// (they no longer attach to anything of ours). BackendTLSPolicies are not
// swept.
func (w *Writer) staleEntries(ctx context.Context, res *translator.Result) error {
	var errs []error
	keep := func(err error) bool {
		if errors.Is(err, ErrNotLeader) {
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	}
	forgotten := w.settled.takeForgotten()
	for _, kind := range routeStatuses(res) {
		var err error
		if w.sweptFully[kind.name] && w.roundTracked[kind.name] {
			err = dropStaleChanged(ctx, w, kind.routeKind, kind.reported, forgotten, w.roundChanged)
		} else {
			seen := make(map[types.NamespacedName]bool, len(kind.reported))
			for _, r := range kind.reported {
				seen[r.NamespacedName] = true
			}
			err = dropStale(ctx, w, kind.routeKind, seen)
		}
		if err == nil && w.roundTracked[kind.name] {
			if w.sweptFully == nil {
				w.sweptFully = map[string]bool{}
			}
			w.sweptFully[kind.name] = true
		} else {
			delete(w.sweptFully, kind.name)
		}
		if !keep(err) {
			return err
		}
	}
	seen := make(map[string]map[types.NamespacedName]bool, len(policyKinds))
	for _, p := range res.Policies {
		if seen[p.Kind] == nil {
			seen[p.Kind] = map[types.NamespacedName]bool{}
		}
		seen[p.Kind][p.NamespacedName] = true
	}
	for _, k := range policyKinds {
		if err := dropStale(ctx, w, k, seen[k.name]); !keep(err) {
			return err
		}
	}
	return errors.Join(errs...)
}

// dropStale removes our entries from every object of kind k that seen
// lacks. A kind the apiserver does not serve has none.
func dropStale[E any](ctx context.Context, w *Writer, k statusKind[E], seen map[types.NamespacedName]bool) error {
	// The cache's own objects: setOurs copies the few it changes.
	objs, ok := w.store.list(ctx, k.newObj())
	if !ok {
		list := k.newList()
		if err := w.Client.List(ctx, list, client.UnsafeDisableDeepCopy); meta.IsNoMatchError(err) {
			return nil
		} else if err != nil {
			return fmt.Errorf("list %s: %w", k.name, err)
		}
		objs = k.items(list)
	}
	var errs []error
	for _, obj := range objs {
		if seen[client.ObjectKeyFromObject(obj)] || !hasOurs(*k.entries(obj), k.controller) {
			continue
		}
		if err := setOurs(ctx, w, k, obj, nil); errors.Is(err, ErrNotLeader) {
			return err
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropStaleChanged is dropStale for the routes of kind k that can carry
// stale entries of ours after a full sweep: those a complete round forgot
// since (no longer desired, or gone) and those the informer saw change
// since (another writer, a restore), less those this round desires
// (reported: most are among the settled entries the round kept, and the
// rest are looked up in a map of reported, made only for them). At 10,000
// routes a full sweep was a map of every desired route and a walk of
// every cached one, each round.
func dropStaleChanged[E any](ctx context.Context, w *Writer, k statusKind[E], reported []translator.RouteStatus, sets ...map[settledKey]struct{}) error {
	keys := map[types.NamespacedName]struct{}{}
	var desired map[types.NamespacedName]bool
	for _, set := range sets {
		for key := range set {
			if key.kind != k.name || w.settled.has(key) {
				continue
			}
			if desired == nil {
				desired = make(map[types.NamespacedName]bool, len(reported))
				for i := range reported {
					desired[reported[i].NamespacedName] = true
				}
			}
			if !desired[key.name] {
				keys[key.name] = struct{}{}
			}
		}
	}
	read := w.reader(ctx, k.newObj)
	var errs []error
	for key := range keys {
		obj, ok, err := read.get(ctx, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok || !hasOurs(*k.entries(obj), k.controller) {
			continue
		}
		if err := setOurs(ctx, w, k, obj, nil); errors.Is(err, ErrNotLeader) {
			return err
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hasOurs reports whether any of entries is this controller's.
func hasOurs[E any](entries []E, controller func(*E) *gwv1.GatewayController) bool {
	for i := range entries {
		if string(*controller(&entries[i])) == names.ControllerName {
			return true
		}
	}
	return false
}

func (w *Writer) ingress(ctx context.Context, d *translator.IngressStatus) error {
	obj := &networkingv1.Ingress{}
	if ok, err := w.get(ctx, d.NamespacedName, obj); !ok || err != nil {
		return err
	}
	orig := obj.DeepCopy()
	obj.Status.LoadBalancer = d.LoadBalancer
	if apiequality.Semantic.DeepEqual(orig.Status, obj.Status) {
		return nil
	}
	return w.patch(ctx, "Ingress", obj, orig)
}

// events records each translation event once while it keeps being
// produced; an event that stops and comes back is recorded again.
func (w *Writer) events(ctx context.Context, evs []translator.Event) error {
	if w.Recorder == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := make(map[string]bool, len(evs))
	keys := make([]string, 0, len(evs))
	byKey := map[string]translator.Event{}
	for _, e := range evs {
		k := e.Kind + "/" + e.Namespace + "/" + e.Name + "/" + e.Type + "/" + e.Reason + "/" + e.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
		byKey[k] = e
	}
	sort.Strings(keys)
	for _, k := range keys {
		if w.lastEvents[k] {
			continue
		}
		e := byKey[k]
		obj := objectFor(e.Kind)
		if obj == nil {
			continue
		}
		if ok, err := w.get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, obj); err != nil {
			return err
		} else if !ok {
			continue
		}
		w.Recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
	w.lastEvents = seen
	return nil
}

func objectFor(kind string) client.Object {
	switch kind {
	case "GatewayClass":
		return &gwv1.GatewayClass{}
	case "Gateway":
		return &gwv1.Gateway{}
	case "HTTPRoute":
		return &gwv1.HTTPRoute{}
	case "GRPCRoute":
		return &gwv1.GRPCRoute{}
	case "ListenerSet":
		return &gwv1.ListenerSet{}
	case "TLSRoute":
		return &gwv1.TLSRoute{}
	case "TCPRoute":
		return &gwv1.TCPRoute{}
	case "UDPRoute":
		return &gwv1.UDPRoute{}
	case "Ingress":
		return &networkingv1.Ingress{}
	case "Service":
		return &corev1.Service{}
	case "BackendTLSPolicy":
		return &gwv1.BackendTLSPolicy{}
	}
	if k, ok := policyKindsByName[kind]; ok {
		return k.newObj()
	}
	return nil
}
