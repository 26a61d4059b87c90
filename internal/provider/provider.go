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

// Package provider watches every input of a routing rebuild, paces
// rebuilds on their events, gathers one translator.Resources value from the informer
// caches, translates it, and hands the Result to the sinks (discovery
// dispatch, the status writer, the shared VIP applier). Data flows one way:
// nothing here writes to Kubernetes.
package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/cachestore"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/promreg"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// Pacing bounds: a change that comes more than Quiet after the end of the
// last rebuild rebuilds at once, a sooner one waits until Quiet has passed.
// When changes came during the last rebuild (a steady stream of them), the
// gap is as long as that rebuild took, at most MaxDelay. Every change of a
// wait coalesces into one rebuild: under a steady stream a change waits at
// most one gap plus one rebuild, and rebuilding keeps at most about half
// of one CPU busy. While only EndpointSlices changed since the last
// rebuild, EndpointsQuiet replaces Quiet: refreshing endpoints alone costs
// a fraction of a translation, so a shorter gap brings a new endpoint to
// the proxies sooner for a little more CPU. With 10,000 routes each with a
// Service of its own, a refresh costs the controller about 1 ms and a
// proxy under 1 ms; make bench-scale's churn at 100 updates/s
// (BACKENDS=1), two runs each of one build, 10 -> 5 ms: probe p50 17.6 ->
// 13.4-15.8 ms (the first request after the update call returned: 10.3
// -> 6.2-7.3 ms), p99 60-68 -> 47-77 ms (the shared VM's noise),
// controller CPU 22.8-23.2 -> 25.0-27.4 %, 78 -> 98-102 rebuilds a
// second.
const (
	DefaultQuiet          = 20 * time.Millisecond
	DefaultEndpointsQuiet = 5 * time.Millisecond
	DefaultMaxDelay       = 500 * time.Millisecond
)

// Sink receives every Result, in order, from one goroutine. A sink must not
// block for long: stateful sinks keep the latest Result and work in their
// own loop.
type Sink interface {
	Accept(ctx context.Context, res *translator.Result)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, res *translator.Result)

// Accept calls f.
func (f SinkFunc) Accept(ctx context.Context, res *translator.Result) { f(ctx, res) }

// Options configure a Provider.
type Options struct {
	// Cache is where objects are read from and informers are found.
	Cache cache.Cache
	// InstallNamespace holds the shared proxy Service and VIP Services.
	InstallNamespace string
	Quiet            time.Duration
	MaxDelay         time.Duration
	// EndpointsQuiet replaces Quiet while only EndpointSlices changed
	// since the last rebuild (DefaultEndpointsQuiet when zero).
	EndpointsQuiet time.Duration
	// Translate defaults to a translator.NewStoreMemo's (each route
	// compiled again only when it or what it reads changed; the gather's
	// objects are the informer stores', never changed in place, or fresh
	// copies), and Refresh then to
	// translator.RefreshEndpoints: the rebuild after changes to
	// EndpointSlices alone (nil: always Translate).
	Translate func(*translator.Resources) *translator.Result
	Refresh   func(prev *translator.Result, res *translator.Resources) (*translator.Result, bool)
	Sinks     []Sink
	Log       logr.Logger
	// Registerer receives the rebuild metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// APIReader reads the HTTPRoute CRD's release channel
	// (Resources.GatewayAPIChannel) live; nil leaves it unknown.
	APIReader client.Reader
	// IngressProxyProtocol becomes Resources.IngressProxyProtocol.
	IngressProxyProtocol []string
}

// Provider is a manager.Runnable. Every replica runs it, so a standby has
// warm results; only the sinks decide what a non-leader may do.
type Provider struct {
	opts    Options
	memo    *translator.Memo // the default Translate's, for its counts
	channel *channelReader
	trigger chan struct{}
	m       metrics

	mu   sync.Mutex
	last *translator.Result
	// lastEnd and lastTook are when the last rebuild ended and how long
	// it took; busy is whether changes came while it ran (pace). Only
	// Start's goroutine uses them.
	lastEnd  time.Time
	lastTook time.Duration
	busy     bool
	// services sorts each gather's Services, from the last sorting when
	// they are the same objects.
	services translator.ServiceSorter
	// lists are the kinds' lists the last gather made (kindLists);
	// gathers take turns, so that each clears only marks it lists after.
	lists    kindLists
	gatherMu sync.Mutex
	// structural is set by every event but an EndpointSlice's: the next
	// rebuild translates in full; without it only endpoints changed since
	// the last rebuild, which refreshes them alone (Options.Refresh).
	structural atomic.Bool
}

// New returns a Provider; call SetupWithManager or Start it yourself.
func New(opts Options) *Provider {
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.EndpointsQuiet <= 0 {
		opts.EndpointsQuiet = DefaultEndpointsQuiet
	}
	if opts.MaxDelay < opts.Quiet {
		opts.MaxDelay = DefaultMaxDelay
	}
	var memo *translator.Memo
	if opts.Translate == nil {
		memo = translator.NewStoreMemo()
		opts.Translate = memo.Translate
		if opts.Refresh == nil {
			opts.Refresh = translator.RefreshEndpoints
		}
	}
	return &Provider{opts: opts, memo: memo, channel: &channelReader{reader: opts.APIReader}, trigger: make(chan struct{}, 1), m: newMetrics(opts.Registerer)}
}

// NeedLeaderElection is false: every replica gathers and translates.
func (p *Provider) NeedLeaderElection() bool { return false }

// watched lists one empty object of every kind a rebuild reads.
func watched() []client.Object {
	return append([]client.Object{
		&gwv1.GatewayClass{}, &gwv1.Gateway{}, &gwv1.HTTPRoute{}, &gwv1.GRPCRoute{},
		&gwv1.TLSRoute{}, &gwv1.TCPRoute{}, &gwv1.UDPRoute{}, &gwv1.ListenerSet{}, &gwv1.BackendTLSPolicy{},
		&gwv1beta1.ReferenceGrant{}, &corev1.Namespace{}, &corev1.Service{},
		&discoveryv1.EndpointSlice{}, &corev1.Secret{}, &corev1.ConfigMap{}, &networkingv1.Ingress{},
		&networkingv1.IngressClass{}, &ingressv1alpha1.CoxswainIngressClassParameters{},
		&gatewayv1alpha1.CoxswainGatewayParameters{}, &appsv1.Deployment{},
	}, policyObjects()...)
}

// policyObjects lists one empty object of every policy kind of ours
// (gateway.coxswain-labs.dev). Their CRDs may be missing (an older chart):
// such a kind reads as empty, and is not an AbsentKind (those are Gateway
// API kinds, which decide the features advertised).
func policyObjects() []client.Object {
	return []client.Object{
		&gatewayv1alpha1.IpAccessControl{}, &gatewayv1alpha1.RateLimit{}, &gatewayv1alpha1.BasicAuth{},
		&gatewayv1alpha1.JwtAuth{}, &gatewayv1alpha1.CoxswainExternalAuth{}, &gatewayv1alpha1.Compression{},
		&gatewayv1alpha1.RequestSizeLimit{}, &gatewayv1alpha1.PathRewriteRegex{}, &gatewayv1alpha1.RetryPolicy{},
		&gatewayv1alpha1.CoxswainBackendPolicy{}, &gatewayv1alpha1.ClientTrafficPolicy{},
	}
}

// metrics are the provider's rebuild counters.
type metrics struct {
	rebuilds       *prometheus.CounterVec
	rebuildSeconds prometheus.Histogram
	compilations   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) metrics {
	return metrics{
		rebuilds: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_controller_rebuilds_total",
			Help: "Routing rebuilds (gather + translate), by result: ok (a full translation), endpoints (only EndpointSlices changed: their endpoints refreshed alone), gather_error.",
		}, []string{"result"})),
		rebuildSeconds: promreg.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "coxswain_controller_rebuild_duration_seconds",
			Help:    "Time to gather and translate one rebuild.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		})),
		compilations: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_controller_route_compilations_total",
			Help: "HTTPRoutes and GRPCRoutes a full translation needed, by result: reused (the route and what it reads were unchanged since the last translation), compiled.",
		}, []string{"result"})),
	}
}

// Start registers event handlers on every informer, then rebuilds once and
// again after events, paced (pace), until ctx ends.
func (p *Provider) Start(ctx context.Context) error {
	p.structural.Store(true)
	// Every event marks its kind's list (kindLists), even one that
	// cannot change a translation: the list holds the objects themselves.
	handler := func(kl *kindList) toolscache.ResourceEventHandlerFuncs {
		return toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				kl.note(obj)
				kl.changed.Store(true)
				p.changed(obj)
			},
			UpdateFunc: func(oldObj, newObj any) {
				kl.note(newObj)
				kl.changed.Store(true)
				if statusOnly(oldObj, newObj) {
					return
				}
				p.changed(newObj)
			},
			DeleteFunc: func(obj any) {
				kl.note(obj)
				kl.changed.Store(true)
				p.changed(obj)
			},
		}
	}
	for _, obj := range watched() {
		// Start every informer first and wait for them together below:
		// waiting kind by kind costs each kind's initial list plus up to a
		// 100 ms sync poll, seconds in all at every controller start.
		inf, err := p.opts.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if meta.IsNoMatchError(err) {
			// A kind whose CRD is not installed (an older Gateway API, or
			// our CRDs missing) is read as empty rather than stopping the
			// controller.
			p.opts.Log.Info("kind not served by the apiserver; treating it as empty", "kind", fmt.Sprintf("%T", obj), "error", err.Error())
			continue
		}
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler(p.lists.add(obj))); err != nil {
			return fmt.Errorf("event handler for %T: %w", obj, err)
		}
	}
	if !p.opts.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	p.Trigger()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.trigger:
		}
		if !p.pace(ctx) {
			return nil
		}
		began := time.Now()
		p.rebuild(ctx)
		p.lastEnd = time.Now()
		p.lastTook = p.lastEnd.Sub(began)
		p.busy = len(p.trigger) > 0
	}
}

// gap is how long after the end of the last rebuild the next may start:
// Quiet (EndpointsQuiet while only endpoints changed), or, when changes
// came during the last one, as long as it took if longer, at most
// MaxDelay.
func (p *Provider) gap() time.Duration {
	quiet := p.opts.Quiet
	if !p.structural.Load() {
		quiet = p.opts.EndpointsQuiet
	}
	if !p.busy {
		return quiet
	}
	return min(max(quiet, p.lastTook), p.opts.MaxDelay)
}

// pace waits, when the last rebuild ended less than gap ago, until gap has
// passed; the triggers that come meanwhile coalesce into the rebuild that
// follows. It reports false when ctx ended.
func (p *Provider) pace(ctx context.Context) bool {
	wait := time.Until(p.lastEnd.Add(p.gap()))
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	}
	select {
	case <-p.trigger:
	default:
	}
	return true
}

// statusOnly reports an update that cannot change a translation: the status
// of a kind whose status the translator never reads
// (translator.IgnoresStatus).
func statusOnly(oldObj, newObj any) bool {
	if !translator.IgnoresStatus(newObj) {
		return false
	}
	o, ok1 := oldObj.(client.Object)
	n, ok2 := newObj.(client.Object)
	if !ok1 || !ok2 || n.GetGeneration() == 0 {
		return false
	}
	return o.GetGeneration() == n.GetGeneration() &&
		equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) &&
		equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) &&
		equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp())
}

// changed notes an event on obj and asks for a rebuild.
func (p *Provider) changed(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if _, ok := obj.(*discoveryv1.EndpointSlice); !ok {
		p.structural.Store(true)
	}
	p.Trigger()
}

// Trigger asks for a rebuild; triggers coalesce (pace).
func (p *Provider) Trigger() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

func (p *Provider) rebuild(ctx context.Context) {
	ctx, span := otel.Tracer("coxswain/controller").Start(ctx, "rebuild")
	defer span.End()
	start := time.Now()
	full := p.structural.Swap(false)
	res, err := p.Gather(ctx)
	if err != nil {
		if full {
			p.structural.Store(true)
		}
		p.m.rebuilds.WithLabelValues("gather_error").Inc()
		span.SetStatus(codes.Error, err.Error())
		p.opts.Log.Error(err, "gathering rebuild inputs; keeping the last result")
		// Retry later; the last published result stays in force.
		time.AfterFunc(time.Second, p.Trigger)
		return
	}
	var out *translator.Result
	result := "ok"
	if prev := p.Last(); !full && prev != nil && p.opts.Refresh != nil {
		if r, ok := p.opts.Refresh(prev, res); ok {
			out, result = r, "endpoints"
			span.SetAttributes(attribute.Bool("coxswain.endpoints_only", true))
		}
	}
	if out == nil {
		out = p.translate(ctx, res)
	}
	p.m.rebuildSeconds.Observe(time.Since(start).Seconds())
	p.m.rebuilds.WithLabelValues(result).Inc()
	p.mu.Lock()
	p.last = out
	p.mu.Unlock()
	for _, s := range p.opts.Sinks {
		s.Accept(ctx, out)
	}
}

// translate translates res under a "translate" span (of the global
// tracer provider) that counts the snapshots it made.
func (p *Provider) translate(ctx context.Context, res *translator.Resources) *translator.Result {
	_, span := otel.Tracer("coxswain/controller").Start(ctx, "translate")
	defer span.End()
	out := p.opts.Translate(res)
	span.SetAttributes(attribute.Int("coxswain.snapshots", len(out.Snapshots)))
	if p.memo != nil {
		reused, compiled := p.memo.LastCounts()
		p.m.compilations.WithLabelValues("reused").Add(float64(reused))
		p.m.compilations.WithLabelValues("compiled").Add(float64(compiled))
		span.SetAttributes(attribute.Int("coxswain.routes_reused", reused), attribute.Int("coxswain.routes_compiled", compiled))
	}
	return out
}

// Last returns the most recent Result (nil before the first rebuild).
func (p *Provider) Last() *translator.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Gather reads one consistent-enough view of every input from the cache.
func (p *Provider) Gather(ctx context.Context) (*translator.Resources, error) {
	p.gatherMu.Lock()
	defer p.gatherMu.Unlock()
	c := gatherReader{Reader: p.opts.Cache, lists: &p.lists}
	r := &translator.Resources{}
	var err error
	if r.GatewayClasses, err = list[gwv1.GatewayClass, gwv1.GatewayClassList](ctx, c, &gwv1.GatewayClassList{}, func(l *gwv1.GatewayClassList) []gwv1.GatewayClass { return l.Items }); err != nil {
		return nil, err
	}
	if r.Gateways, err = list(ctx, c, &gwv1.GatewayList{}, func(l *gwv1.GatewayList) []gwv1.Gateway { return l.Items }); err != nil {
		return nil, err
	}
	if r.HTTPRoutes, err = list(ctx, c, &gwv1.HTTPRouteList{}, func(l *gwv1.HTTPRouteList) []gwv1.HTTPRoute { return l.Items }); err != nil {
		return nil, err
	}
	if r.GRPCRoutes, err = listKind(ctx, c, r, "GRPCRoute", &gwv1.GRPCRouteList{}, func(l *gwv1.GRPCRouteList) []gwv1.GRPCRoute { return l.Items }); err != nil {
		return nil, err
	}
	if r.TLSRoutes, err = listKind(ctx, c, r, "TLSRoute", &gwv1.TLSRouteList{}, func(l *gwv1.TLSRouteList) []gwv1.TLSRoute { return l.Items }); err != nil {
		return nil, err
	}
	if r.TCPRoutes, err = listKind(ctx, c, r, "TCPRoute", &gwv1.TCPRouteList{}, func(l *gwv1.TCPRouteList) []gwv1.TCPRoute { return l.Items }); err != nil {
		return nil, err
	}
	if r.UDPRoutes, err = listKind(ctx, c, r, "UDPRoute", &gwv1.UDPRouteList{}, func(l *gwv1.UDPRouteList) []gwv1.UDPRoute { return l.Items }); err != nil {
		return nil, err
	}
	if r.ListenerSets, err = listKind(ctx, c, r, "ListenerSet", &gwv1.ListenerSetList{}, func(l *gwv1.ListenerSetList) []gwv1.ListenerSet { return l.Items }); err != nil {
		return nil, err
	}
	if r.BackendTLSPolicies, err = listKind(ctx, c, r, "BackendTLSPolicy", &gwv1.BackendTLSPolicyList{}, func(l *gwv1.BackendTLSPolicyList) []gwv1.BackendTLSPolicy { return l.Items }); err != nil {
		return nil, err
	}
	if r.ConfigMaps, err = list(ctx, c, &corev1.ConfigMapList{}, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }); err != nil {
		return nil, err
	}
	if r.ReferenceGrants, err = listKind(ctx, c, r, "ReferenceGrant", &gwv1beta1.ReferenceGrantList{}, func(l *gwv1beta1.ReferenceGrantList) []gwv1beta1.ReferenceGrant { return l.Items }); err != nil {
		return nil, err
	}
	if r.Namespaces, err = list(ctx, c, &corev1.NamespaceList{}, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }); err != nil {
		return nil, err
	}
	services, err := list(ctx, c, &corev1.ServiceList{}, func(l *corev1.ServiceList) []corev1.Service { return l.Items })
	if err != nil {
		return nil, err
	}
	if r.EndpointSlices, err = list(ctx, c, &discoveryv1.EndpointSliceList{}, func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items }); err != nil {
		return nil, err
	}
	if r.Secrets, err = list(ctx, c, &corev1.SecretList{}, func(l *corev1.SecretList) []corev1.Secret { return l.Items }); err != nil {
		return nil, err
	}
	if r.Ingresses, err = list(ctx, c, &networkingv1.IngressList{}, func(l *networkingv1.IngressList) []networkingv1.Ingress { return l.Items }); err != nil {
		return nil, err
	}
	if r.IngressClasses, err = list(ctx, c, &networkingv1.IngressClassList{}, func(l *networkingv1.IngressClassList) []networkingv1.IngressClass { return l.Items }); err != nil {
		return nil, err
	}
	if r.IngressClassParameters, err = list(ctx, c, &ingressv1alpha1.CoxswainIngressClassParametersList{}, func(l *ingressv1alpha1.CoxswainIngressClassParametersList) []ingressv1alpha1.CoxswainIngressClassParameters {
		return l.Items
	}); err != nil {
		return nil, err
	}
	if r.GatewayParameters, err = list(ctx, c, &gatewayv1alpha1.CoxswainGatewayParametersList{}, func(l *gatewayv1alpha1.CoxswainGatewayParametersList) []gatewayv1alpha1.CoxswainGatewayParameters {
		return l.Items
	}); err != nil {
		return nil, err
	}
	if err := gatherPolicies(ctx, c, r); err != nil {
		return nil, err
	}
	deployments, err := list(ctx, c, &appsv1.DeploymentList{}, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items },
		client.MatchingLabels(names.DedicatedProxySelector()))
	if err != nil {
		return nil, err
	}
	r.DedicatedDeployments = deployments
	p.services.SetServices(r, p.opts.InstallNamespace, services)
	r.IngressProxyProtocol = p.opts.IngressProxyProtocol
	r.GatewayAPIChannel = p.channel.channel(ctx)
	return r, nil
}

// gatherPolicies lists our policy kinds (policyObjects) into r. A kind
// whose CRD is missing reads as empty (list), and is not an AbsentKind.
func gatherPolicies(ctx context.Context, c client.Reader, r *translator.Resources) error {
	return errors.Join(
		listInto(ctx, c, &r.IPAccessControls, &gatewayv1alpha1.IpAccessControlList{},
			func(l *gatewayv1alpha1.IpAccessControlList) []gatewayv1alpha1.IpAccessControl { return l.Items }),
		listInto(ctx, c, &r.RateLimits, &gatewayv1alpha1.RateLimitList{},
			func(l *gatewayv1alpha1.RateLimitList) []gatewayv1alpha1.RateLimit { return l.Items }),
		listInto(ctx, c, &r.BasicAuths, &gatewayv1alpha1.BasicAuthList{},
			func(l *gatewayv1alpha1.BasicAuthList) []gatewayv1alpha1.BasicAuth { return l.Items }),
		listInto(ctx, c, &r.JWTAuths, &gatewayv1alpha1.JwtAuthList{},
			func(l *gatewayv1alpha1.JwtAuthList) []gatewayv1alpha1.JwtAuth { return l.Items }),
		listInto(ctx, c, &r.ExternalAuths, &gatewayv1alpha1.CoxswainExternalAuthList{},
			func(l *gatewayv1alpha1.CoxswainExternalAuthList) []gatewayv1alpha1.CoxswainExternalAuth {
				return l.Items
			}),
		listInto(ctx, c, &r.Compressions, &gatewayv1alpha1.CompressionList{},
			func(l *gatewayv1alpha1.CompressionList) []gatewayv1alpha1.Compression { return l.Items }),
		listInto(ctx, c, &r.RequestSizeLimits, &gatewayv1alpha1.RequestSizeLimitList{},
			func(l *gatewayv1alpha1.RequestSizeLimitList) []gatewayv1alpha1.RequestSizeLimit { return l.Items }),
		listInto(ctx, c, &r.PathRewriteRegexes, &gatewayv1alpha1.PathRewriteRegexList{},
			func(l *gatewayv1alpha1.PathRewriteRegexList) []gatewayv1alpha1.PathRewriteRegex { return l.Items }),
		listInto(ctx, c, &r.RetryPolicies, &gatewayv1alpha1.RetryPolicyList{},
			func(l *gatewayv1alpha1.RetryPolicyList) []gatewayv1alpha1.RetryPolicy { return l.Items }),
		listInto(ctx, c, &r.BackendPolicies, &gatewayv1alpha1.CoxswainBackendPolicyList{},
			func(l *gatewayv1alpha1.CoxswainBackendPolicyList) []gatewayv1alpha1.CoxswainBackendPolicy {
				return l.Items
			}),
		listInto(ctx, c, &r.ClientTrafficPolicies, &gatewayv1alpha1.ClientTrafficPolicyList{},
			func(l *gatewayv1alpha1.ClientTrafficPolicyList) []gatewayv1alpha1.ClientTrafficPolicy { return l.Items }),
	)
}

// listInto is list into *dst.
func listInto[T any, L any, PL interface {
	*L
	client.ObjectList
}](ctx context.Context, c client.Reader, dst *[]*T, l PL, items func(PL) []T) error {
	var err error
	*dst, err = list(ctx, c, l, items)
	return err
}

// listKind lists a Gateway API kind the cluster may not serve (its CRD
// absent, or not at the version Coxswain reads): it is then read as empty
// and recorded in r.AbsentKinds, so the features that need it are not
// advertised.
func listKind[T any, L any, PL interface {
	*L
	client.ObjectList
}](ctx context.Context, c client.Reader, r *translator.Resources, kind string, l PL, items func(PL) []T) ([]*T, error) {
	if out, ok := fromStore[T](ctx, c); ok {
		return out, nil
	}
	if err := c.List(ctx, l, client.UnsafeDisableDeepCopy); meta.IsNoMatchError(err) {
		r.AbsentKinds = append(r.AbsentKinds, kind)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %T: %w", l, err)
	}
	return pointers(items(l)), nil
}

// list lists from the cache: the informer store's own objects when it can
// (fromStore), else pointers into List's items, which share their fields
// with the cache's objects (no deep copy: at 10,000 routes the copies were
// a sixth of a rebuild's CPU). Either way nothing downstream may change
// them: the translator is pure, and FuzzTranslate checks that it leaves
// its input as it was.
func list[T any, L any, PL interface {
	*L
	client.ObjectList
}](ctx context.Context, c client.Reader, l PL, items func(PL) []T, opts ...client.ListOption) ([]*T, error) {
	if len(opts) == 0 {
		if out, ok := fromStore[T](ctx, c); ok {
			return out, nil
		}
	}
	if err := c.List(ctx, l, append(opts, client.UnsafeDisableDeepCopy)...); meta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %T: %w", l, err)
	}
	return pointers(items(l)), nil
}

// fromStore lists every object of type T straight from its synced
// informer's store: the cache's own objects, not even copied into a list
// (at 10,000 routes, copying them into List's items was 8 ms of every
// rebuild). It reports false, to fall back to List, when c is no informer
// cache or the informer is missing or not synced yet.
//
// Given a gather's reader, it hands over the kind's last list while no
// event came for the kind, and makes it again with the objects of the
// keys events named while they are few (kindLists).
func fromStore[T any](ctx context.Context, c client.Reader) ([]*T, bool) {
	var kept *kindList
	if g, ok := c.(gatherReader); ok {
		c, kept = g.Reader, g.lists.of(reflect.TypeFor[T]())
	}
	informers, ok := c.(cache.Informers)
	if !ok {
		return nil, false
	}
	obj, ok := any(new(T)).(client.Object)
	if !ok {
		return nil, false
	}
	ix := cachestore.Indexer(ctx, informers, obj)
	if ix == nil {
		return nil, false
	}
	if kept != nil && !kept.changed.Swap(false) {
		if out, ok := kept.list.([]*T); ok {
			return out, true
		}
	}
	if kept != nil {
		keys, whole := kept.take()
		if last, ok := kept.list.([]*T); ok && !whole && len(keys) <= len(last)/4+16 {
			if out, ok := patchList(ix, last, keys); ok {
				kept.list = out
				return out, true
			}
		}
	}
	stored := ix.List()
	out := make([]*T, 0, len(stored))
	for _, o := range stored {
		t, ok := o.(*T)
		if !ok {
			if kept != nil {
				kept.relist()
			}
			return nil, false
		}
		out = append(out, t)
	}
	if kept != nil {
		slices.SortFunc(out, byKey[T])
		kept.list = out
	}
	return out, true
}

// pointers returns pointers into items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
