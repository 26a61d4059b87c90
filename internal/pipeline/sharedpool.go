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

package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/kubeapply"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// SharedPoolApplier keeps the shared pool's objects in the install
// namespace as rendered: optionally the shared proxy Deployment, its
// ServiceAccount and Services, and always one VIP Service per shared
// Gateway carrying the internal ports the translator assigned (which
// persists them across restarts). It is a provider.Sink and a leader-only
// manager.Runnable.
type SharedPoolApplier struct {
	Client client.Client
	// Informers, when set (the manager's cache, which Client reads), lets
	// Apply skip its VIP pass while no Gateway spec and no Service in the
	// install namespace changed (vipInputs).
	Informers        cache.Informers
	InstallNamespace string
	// ManagePool also applies the shared proxy Deployment and Services.
	ManagePool bool
	Image      string
	Replicas   int32
	// RateLimitRedis is the shared proxies' --rate-limit-redis.
	RateLimitRedis string
	// Tracing are the shared proxies' tracing flags.
	Tracing provision.SharedPoolOptions
	Log     logr.Logger

	latest atomic.Pointer[translator.Result]
	notify chan struct{}
	once   sync.Once

	// applied is, per VIP Service, a digest of what was last applied and
	// the resourceVersion that apply left. A Service the cache shows at
	// that resourceVersion, to be applied the same again, is not: with
	// 1,000 shared Gateways, applying every VIP Service after every
	// rebuild was 1,000 apiserver round trips per route change.
	mu      sync.Mutex
	applied map[types.NamespacedName]appliedService
	// backoff spaces the retries of a VIP Service the apiserver refused
	// (vipBackoffInitial, vipBackoffMax): a refusal (a full Service range, a quota) would
	// otherwise be tried again after every rebuild and every 2 s.
	backoff *flowcontrol.Backoff
	// retry applies the latest Result again once the soonest backoff ends.
	retry *time.Timer
	// rendered are the VIP Services last rendered, by name (render).
	rendered map[types.NamespacedName]*renderedVIP
	// vips lets an Apply skip its VIP pass while nothing it reads changed
	// (sharedpool_changes.go); vipPassesSkipped counts those it skipped.
	vips             vipInputs
	vipPassesSkipped atomic.Int64
}

// The backoff of a refused VIP Service: 1 s, doubling, at most 2 min.
const (
	vipBackoffInitial = time.Second
	vipBackoffMax     = 2 * time.Minute
)

// appliedService is what Apply last applied to one VIP Service: the
// digest and the resourceVersion the apply left or, when the apiserver
// refused it, the refusal and when to try the same content again.
type appliedService struct {
	digest          [sha256.Size]byte
	resourceVersion string
	// retryAt is set when the apiserver refused the apply.
	retryAt time.Time
}

// refused reports an apply the apiserver refused.
func (s appliedService) refused() bool { return !s.retryAt.IsZero() }

func (a *SharedPoolApplier) init() {
	a.once.Do(func() {
		a.notify = make(chan struct{}, 1)
		a.backoff = flowcontrol.NewBackOff(vipBackoffInitial, vipBackoffMax)
	})
}

// NeedLeaderElection is true: only the leader writes.
func (a *SharedPoolApplier) NeedLeaderElection() bool { return true }

// Accept stores the latest Result.
func (a *SharedPoolApplier) Accept(_ context.Context, res *translator.Result) {
	a.init()
	a.latest.Store(res)
	select {
	case a.notify <- struct{}{}:
	default:
	}
}

// Start applies after every Result until ctx ends, retrying failures.
func (a *SharedPoolApplier) Start(ctx context.Context) error {
	a.init()
	if err := a.vips.track(ctx, a.Informers, a.InstallNamespace); err != nil {
		// Every Apply then does its VIP pass in full.
		a.Log.Info("not tracking Gateway and Service changes", "error", err.Error())
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.notify:
		}
		res := a.latest.Load()
		if res == nil {
			continue
		}
		err := a.Apply(ctx, res)
		if err != nil {
			a.Log.Error(err, "applying shared pool objects; retrying")
		}
		a.scheduleRetry(ctx, err != nil)
	}
}

// scheduleRetry arms one timer that applies the latest Result again: in
// 2 s after a failed Apply, else when the soonest backoff of a refused VIP
// Service ends, else not at all.
func (a *SharedPoolApplier) scheduleRetry(ctx context.Context, failed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var at time.Time
	for _, s := range a.applied {
		if s.refused() && (at.IsZero() || s.retryAt.Before(at)) {
			at = s.retryAt
		}
	}
	if failed && (at.IsZero() || time.Until(at) > 2*time.Second) {
		at = time.Now().Add(2 * time.Second)
	}
	if at.IsZero() {
		return
	}
	if a.retry != nil {
		a.retry.Stop()
	}
	a.retry = time.AfterFunc(max(time.Until(at), 0), func() { a.Accept(ctx, a.latest.Load()) })
}

// Apply brings the shared pool objects to the state res asks for.
func (a *SharedPoolApplier) Apply(ctx context.Context, res *translator.Result) error {
	a.init()
	var errs []error
	if a.ManagePool {
		for _, obj := range provision.RenderSharedPool(a.InstallNamespace, a.Image, provision.SharedPoolOptions{
			Replicas: a.Replicas, RateLimitRedis: a.RateLimitRedis,
			TracingEndpoint: a.Tracing.TracingEndpoint, TracingInsecure: a.Tracing.TracingInsecure, TracingSamplingRatio: a.Tracing.TracingSamplingRatio,
		}) {
			if _, ok := obj.(*corev1.ServiceAccount); ok {
				// The install (config/rbac) owns the shared proxy's
				// ServiceAccount; applying it here too would make two
				// managers fight over its labels.
				continue
			}
			if err := a.apply(ctx, obj); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if a.vips.begin(res) {
		a.vipPassesSkipped.Add(1)
		return errors.Join(errs...)
	}
	vipErrs, skippable := a.applyVIPs(ctx, res)
	a.vips.end(res, skippable && len(vipErrs) == 0)
	return errors.Join(append(errs, vipErrs...)...)
}

// applyVIPs is Apply's VIP pass: every shared Gateway's VIP Service
// applied as rendered, the stale ones deleted. skippable says whether the
// next pass may be skipped while nothing it read changes (vipInputs): no
// Service was refused, and none is rendered every time.
func (a *SharedPoolApplier) applyVIPs(ctx context.Context, res *translator.Result) (errs []error, skippable bool) {
	skippable = true
	byGateway := map[types.NamespacedName][]portalloc.Assignment{}
	var order []types.NamespacedName
	for _, as := range res.InternalPorts {
		k := types.NamespacedName{Namespace: as.Namespace, Name: as.Name}
		if _, ok := byGateway[k]; !ok {
			order = append(order, k)
		}
		byGateway[k] = append(byGateway[k], as)
	}
	// The VIP Services as the cache has them (read only): the live
	// resourceVersions, and what is stale once the desired ones are
	// applied.
	existing := &corev1.ServiceList{}
	listErr := a.Client.List(ctx, existing, client.InNamespace(a.InstallNamespace),
		client.MatchingLabels(names.SharedVIPSelector()), client.UnsafeDisableDeepCopy)
	live := make(map[string]*corev1.Service, len(existing.Items))
	for i := range existing.Items {
		live[existing.Items[i].Name] = &existing.Items[i]
	}
	vips := make(map[types.NamespacedName]bool, len(order))
	gws, err := a.gateways(ctx)
	if err != nil {
		return append(errs, err), false
	}
	for _, k := range order {
		gw := gws[k]
		if gw == nil {
			continue
		}
		// The ListenerSets the Gateway takes add ports to its VIP Service.
		var extra []gwv1.Listener
		for _, gl := range res.ListenerSetListeners {
			if gl.NamespacedName == k {
				extra = append(extra, gl.Listeners...)
			}
		}
		vip, err := a.render(ctx, gw, extra, byGateway[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if vip.volatile {
			skippable = false
		}
		vips[client.ObjectKeyFromObject(vip.svc)] = true
		if err := a.applyVIP(ctx, vip, live); err != nil {
			errs = append(errs, err)
		}
	}
	a.keepOnly(vips)
	if listErr != nil {
		return append(errs, listErr), false
	}
	ptrs := make([]*corev1.Service, len(existing.Items))
	for i := range existing.Items {
		ptrs[i] = &existing.Items[i]
	}
	for _, stale := range provision.StaleVIPServices(ptrs, order) {
		a.forget(client.ObjectKeyFromObject(stale))
		if err := a.Client.Delete(ctx, stale.DeepCopy()); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	a.mu.Lock()
	for _, s := range a.applied {
		if s.refused() {
			skippable = false
		}
	}
	a.mu.Unlock()
	return errs, skippable
}

// keepOnly forgets the VIP Services not in vips, and their backoffs: a
// Gateway gone (or no longer shared) is not retried.
func (a *SharedPoolApplier) keepOnly(vips map[types.NamespacedName]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.applied {
		if !vips[k] {
			delete(a.applied, k)
			a.backoff.DeleteEntry(k.String())
		}
	}
	maps.DeleteFunc(a.rendered, func(k types.NamespacedName, _ *renderedVIP) bool { return !vips[k] })
}

// renderedVIP is a VIP Service as rendered, with the digest of its
// applied form, and what it was rendered from (a Gateway's spec, by
// generation, and its internal ports).
type renderedVIP struct {
	uid         types.UID
	generation  int64
	assignments []portalloc.Assignment
	svc         *corev1.Service
	digest      [sha256.Size]byte
	// volatile: rendered every time (a pinned ClusterIP, whose live use
	// it reads, or ListenerSet listeners).
	volatile bool
}

// gateways are the Gateways as the cache holds them, by name: read only
// (render copies one it has to change).
func (a *SharedPoolApplier) gateways(ctx context.Context) (map[types.NamespacedName]*gwv1.Gateway, error) {
	list := &gwv1.GatewayList{}
	if err := a.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Gateways: %w", err)
	}
	out := make(map[types.NamespacedName]*gwv1.Gateway, len(list.Items))
	for i := range list.Items {
		gw := &list.Items[i]
		out[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = gw
	}
	return out, nil
}

// render is the VIP Service of gw with the extra listeners of its
// ListenerSets and its assignments. It renders again only what changed:
// with 1,000 shared Gateways, rendering and digesting every VIP Service
// after every rebuild was a third of the controller's CPU per route
// change. A Service with a pinned ClusterIP (PrepareClusterIP reads the
// live one) or ListenerSet listeners is rendered every time.
func (a *SharedPoolApplier) render(ctx context.Context, gw *gwv1.Gateway, extra []gwv1.Listener, assignments []portalloc.Assignment) (*renderedVIP, error) {
	k := types.NamespacedName{Namespace: a.InstallNamespace, Name: names.VIPServiceName(gw.Namespace, gw.Name)}
	a.mu.Lock()
	last := a.rendered[k]
	a.mu.Unlock()
	if last != nil && len(extra) == 0 && last.uid == gw.UID && last.generation == gw.Generation &&
		slices.Equal(last.assignments, assignments) {
		return last, nil
	}
	if len(extra) > 0 {
		gw = gw.DeepCopy()
		gw.Spec.Listeners = append(gw.Spec.Listeners, extra...)
	}
	svc := provision.RenderVIPService(gw, a.InstallNamespace, assignments)
	pinned := svc.Spec.ClusterIP != ""
	if err := kubeapply.PrepareClusterIP(ctx, a.Client, svc); err != nil {
		// The translator reports the address as not usable; the VIP
		// Service keeps the address it has.
		a.Log.Info("static Gateway address not usable", "gateway", gw.Namespace+"/"+gw.Name, "error", err.Error())
		svc.Spec.ClusterIP = ""
	}
	u, err := provision.ToUnstructured(svc)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	vip := &renderedVIP{uid: gw.UID, generation: gw.Generation, assignments: slices.Clone(assignments), svc: svc, digest: sha256.Sum256(body),
		volatile: pinned || len(extra) > 0}
	if !pinned && len(extra) == 0 {
		a.mu.Lock()
		if a.rendered == nil {
			a.rendered = map[types.NamespacedName]*renderedVIP{}
		}
		a.rendered[k] = vip
		a.mu.Unlock()
	}
	return vip, nil
}

// applyVIP applies a rendered VIP Service unless the last apply of the
// same content left it at the resourceVersion live (the cache's, by name)
// has, or the apiserver refused the same content and its backoff has not
// ended. Any other writer changes that resourceVersion, and a Service
// missing from live, or without the ClusterIP it pins (PrepareClusterIP
// may have just replaced it), is applied: the apply stays the owner of
// the object.
func (a *SharedPoolApplier) applyVIP(ctx context.Context, vip *renderedVIP, live map[string]*corev1.Service) error {
	svc, digest := vip.svc, vip.digest
	k := client.ObjectKeyFromObject(svc)
	now := time.Now()
	a.mu.Lock()
	last, ok := a.applied[k]
	a.mu.Unlock()
	if ok && last.refused() && last.digest == digest && now.Before(last.retryAt) {
		// Refused before and unchanged since: wait out the backoff
		// (scheduleRetry tries again when it ends).
		return nil
	}
	if cur := live[svc.Name]; ok && !last.refused() && cur != nil && cur.ResourceVersion != "" && last.digest == digest &&
		last.resourceVersion == cur.ResourceVersion && (svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == cur.Spec.ClusterIP) {
		return nil
	}
	a.forget(k)
	// A fresh copy: the apply writes the apiserver's answer into it.
	u, err := provision.ToUnstructured(svc)
	if err != nil {
		return err
	}
	err = a.applyUnstructured(ctx, u)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.applied == nil {
		a.applied = map[types.NamespacedName]appliedService{}
	}
	id := k.String()
	if err != nil {
		a.backoff.Next(id, now)
		a.applied[k] = appliedService{digest: digest, retryAt: now.Add(a.backoff.Get(id))}
		return err
	}
	a.backoff.Reset(id)
	a.applied[k] = appliedService{digest: digest, resourceVersion: u.GetResourceVersion()}
	return nil
}

// forget drops what Apply last applied to the VIP Service named k (its
// backoff stays: applyVIP is about to try it, and a refusal goes on
// doubling).
func (a *SharedPoolApplier) forget(k types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.applied, k)
}

func (a *SharedPoolApplier) apply(ctx context.Context, obj client.Object) error {
	u, err := provision.ToUnstructured(obj)
	if err != nil {
		return err
	}
	return a.applyUnstructured(ctx, u)
}

// applyUnstructured applies u, which then holds the object the apiserver
// returned.
func (a *SharedPoolApplier) applyUnstructured(ctx context.Context, u *unstructured.Unstructured) error {
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(names.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
