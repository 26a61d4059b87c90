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
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// The applier's skips are what keeps 1,000 shared Gateways from costing
// 1,000 apiserver round trips per route change: these specs count the
// applies it makes through a cached client, as the controller's is.
var _ = Describe("shared pool applier (VIP Services)", Ordered, func() {
	const ns, installNS = "pool-apps", "pool-system"
	var (
		applies atomic.Int64
		refuse  atomic.Bool
		a       *SharedPoolApplier
		stop    context.CancelFunc
		poolCtx context.Context
		inf     cache.Cache
	)
	res := func(internal int32) *translator.Result {
		return &translator.Result{InternalPorts: []portalloc.Assignment{
			{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 80}, Internal: internal},
		}}
	}
	vip := func(g Gomega) *corev1.Service {
		svc := &corev1.Service{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: installNS, Name: names.VIPServiceName(ns, "gw")}, svc)).To(Succeed())
		return svc
	}
	// cached waits until the cache shows the VIP Service as the apiserver has it.
	cached := func() {
		Eventually(func(g Gomega) {
			list := &corev1.ServiceList{}
			g.Expect(a.Client.List(ctx, list, client.InNamespace(installNS), client.MatchingLabels(names.SharedVIPSelector()))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(list.Items[0].ResourceVersion).To(Equal(vip(g).ResourceVersion))
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	}

	BeforeAll(func() {
		createNamespace(ns)
		createNamespace(installNS)
		Expect(k8sClient.Create(ctx, &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}},
		})).To(Succeed())
		c, err := cache.New(cfg, cache.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		cctx, cancel := context.WithCancel(ctx)
		stop, poolCtx, inf = cancel, cctx, c
		go func() { _ = c.Start(cctx) }()
		Expect(c.WaitForCacheSync(cctx)).To(BeTrue())
		cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
		Expect(err).NotTo(HaveOccurred())
		counting := interceptor.NewClient(cl, interceptor.Funcs{
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				applies.Add(1)
				if refuse.Load() {
					return apierrors.NewInternalError(errors.New("failed to allocate a serviceIP: range is full"))
				}
				return c.Apply(ctx, obj, opts...)
			},
		})
		a = &SharedPoolApplier{Client: counting, InstallNamespace: installNS}
	})
	AfterAll(func() { stop() })

	It("applies a VIP Service once, then not again while neither it nor its rendering changed", func() {
		Eventually(func(g Gomega) {
			g.Expect(a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, &gwv1.Gateway{})).To(Succeed())
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		Expect(a.Apply(ctx, res(20000))).To(Succeed())
		Expect(applies.Load()).To(BeEquivalentTo(1))
		cached()
		for range 3 {
			Expect(a.Apply(ctx, res(20000))).To(Succeed())
		}
		Expect(applies.Load()).To(BeEquivalentTo(1), "an unchanged VIP Service was applied again")
	})

	It("applies again when its rendering changes", func() {
		Expect(a.Apply(ctx, res(20001))).To(Succeed())
		Expect(applies.Load()).To(BeEquivalentTo(2))
		Eventually(func(g Gomega) {
			g.Expect(vip(g).Spec.Ports[0].TargetPort.IntVal).To(BeEquivalentTo(20001))
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		cached()
		Expect(a.Apply(ctx, res(20001))).To(Succeed())
		Expect(applies.Load()).To(BeEquivalentTo(2))
	})

	It("applies again when another writer changed the Service", func() {
		svc := vip(Default)
		svc.Labels["drift"] = "yes"
		Expect(k8sClient.Update(ctx, svc)).To(Succeed())
		cached()
		Expect(a.Apply(ctx, res(20001))).To(Succeed())
		Expect(applies.Load()).To(BeEquivalentTo(3))
	})

	It("backs off a refused VIP Service instead of trying it after every rebuild", func() {
		refuse.Store(true)
		before := applies.Load()
		Expect(a.Apply(ctx, res(20002))).NotTo(Succeed())
		Expect(applies.Load()).To(Equal(before + 1))
		for range 3 {
			Expect(a.Apply(ctx, res(20002))).To(Succeed())
		}
		Expect(applies.Load()).To(Equal(before+1), "a refused, unchanged VIP Service was tried again within its backoff")
		By("a new rendering is tried at once")
		Expect(a.Apply(ctx, res(20003))).NotTo(Succeed())
		Expect(applies.Load()).To(Equal(before + 2))
	})

	It("tries a refused VIP Service again by itself once its backoff ends", func() {
		sctx, stopStart := context.WithCancel(ctx)
		defer stopStart()
		go func() { _ = a.Start(sctx) }()
		before := applies.Load()
		a.Accept(sctx, res(20004))
		// Start's own attempt is refused before the apiserver gives in.
		Eventually(applies.Load, 10*time.Second, 20*time.Millisecond).Should(BeNumerically(">", before))
		refuse.Store(false)
		// No other Accept: the retry timer applies the latest Result.
		Eventually(func(g Gomega) {
			g.Expect(vip(g).Spec.Ports[0].TargetPort.IntVal).To(BeEquivalentTo(20004))
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	})

	It("renders a VIP Service again only when its Gateway's spec or its ports change", func() {
		key := client.ObjectKey{Namespace: installNS, Name: names.VIPServiceName(ns, "gw")}
		renderedNow := func() *renderedVIP {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.rendered[key]
		}
		Expect(a.Apply(ctx, res(20004))).To(Succeed())
		first := renderedNow()
		Expect(first).NotTo(BeNil())
		Expect(a.Apply(ctx, res(20004))).To(Succeed())
		Expect(renderedNow()).To(BeIdenticalTo(first), "an unchanged Gateway was rendered again")
		By("a new listener port")
		gw := &gwv1.Gateway{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw)).To(Succeed())
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: "alt", Protocol: gwv1.HTTPProtocolType, Port: 8080})
		Expect(k8sClient.Update(ctx, gw)).To(Succeed())
		two := &translator.Result{InternalPorts: []portalloc.Assignment{
			{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 80}, Internal: 20004},
			{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 8080}, Internal: 20005},
		}}
		Eventually(func(g Gomega) {
			g.Expect(a.Apply(ctx, two)).To(Succeed())
			g.Expect(vip(g).Spec.Ports).To(HaveLen(2))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
		Expect(renderedNow()).NotTo(BeIdenticalTo(first))
	})

	It("forgets a Gateway no longer shared, its backoff and its VIP Service", func() {
		id := client.ObjectKey{Namespace: installNS, Name: names.VIPServiceName(ns, "gw")}.String()
		refuse.Store(true)
		Expect(a.Apply(ctx, res(20006))).NotTo(Succeed())
		refuse.Store(false)
		Expect(a.backoff.Get(id)).NotTo(BeZero())
		Expect(a.Apply(ctx, &translator.Result{})).To(Succeed())
		a.mu.Lock()
		Expect(a.applied).To(BeEmpty())
		Expect(a.rendered).To(BeEmpty())
		a.mu.Unlock()
		Expect(a.backoff.Get(id)).To(BeZero())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: installNS, Name: names.VIPServiceName(ns, "gw")}, &corev1.Service{})
			return apierrors.IsNotFound(err)
		}, 10*time.Second, 100*time.Millisecond).Should(BeTrue(), "the VIP Service of a Gateway no longer shared is left")
	})

	It("with its informers tracked, skips the VIP pass while nothing it reads changed, and not after a VIP Service is deleted or its Gateway's spec changes", func() {
		b := &SharedPoolApplier{Client: a.Client, InstallNamespace: installNS, Informers: inf}
		b.init()
		Expect(b.vips.track(poolCtx, inf, installNS)).To(Succeed())
		Eventually(func() bool {
			b.vips.mu.Lock()
			defer b.vips.mu.Unlock()
			return b.vips.regs[0].HasSynced() && b.vips.regs[1].HasSynced()
		}, 10*time.Second, 20*time.Millisecond).Should(BeTrue())
		gw := &gwv1.Gateway{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw)).To(Succeed())
		two := func(internal int32) *translator.Result {
			return &translator.Result{InternalPorts: []portalloc.Assignment{
				{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 80}, Internal: internal},
				{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 8080}, Internal: internal + 1},
			}}
		}
		// settle runs passes until one is skipped (the passes before see
		// the events of their own applies).
		settle := func(res *translator.Result) {
			Eventually(func(g Gomega) {
				before := b.vipPassesSkipped.Load()
				g.Expect(b.Apply(ctx, res)).To(Succeed())
				g.Expect(b.vipPassesSkipped.Load()).To(Equal(before + 1))
			}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		}
		settle(two(20010))
		Expect(vip(Default).Spec.Ports[0].TargetPort.IntVal).To(BeEquivalentTo(20010))
		By("new ports are never skipped")
		skipped := b.vipPassesSkipped.Load()
		Expect(b.Apply(ctx, two(20020))).To(Succeed())
		Expect(b.vipPassesSkipped.Load()).To(Equal(skipped))
		Eventually(func(g Gomega) {
			g.Expect(vip(g).Spec.Ports[0].TargetPort.IntVal).To(BeEquivalentTo(20020))
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		settle(two(20020))

		By("a VIP Service deleted by hand is applied again")
		Expect(k8sClient.Delete(ctx, vip(Default))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(b.Apply(ctx, two(20020))).To(Succeed())
			g.Expect(vip(g).Spec.Ports).To(HaveLen(2))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
		settle(two(20020))

		By("a status patch of the Gateway is no change; a spec change is")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw)).To(Succeed())
		gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: "10.0.0.99"}}
		Expect(k8sClient.Status().Update(ctx, gw)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := &gwv1.Gateway{}
			g.Expect(inf.Get(ctx, client.ObjectKeyFromObject(gw), cur)).To(Succeed())
			g.Expect(cur.Status.Addresses).To(HaveLen(1))
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
		skipped = b.vipPassesSkipped.Load()
		Expect(b.Apply(ctx, two(20020))).To(Succeed())
		Expect(b.vipPassesSkipped.Load()).To(Equal(skipped+1), "a Gateway status patch redid the VIP pass")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw"}, gw)).To(Succeed())
		gw.Spec.Listeners = gw.Spec.Listeners[:1]
		Expect(k8sClient.Update(ctx, gw)).To(Succeed())
		one := &translator.Result{InternalPorts: []portalloc.Assignment{
			{Key: portalloc.Key{Namespace: ns, Name: "gw", Port: 80}, Internal: 20020},
		}}
		Eventually(func(g Gomega) {
			g.Expect(b.Apply(ctx, one)).To(Succeed())
			g.Expect(vip(g).Spec.Ports).To(HaveLen(1))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	})
})
