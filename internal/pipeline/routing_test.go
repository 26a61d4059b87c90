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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// startRouting runs the routing pipeline in its own manager (no manager
// leader election; leadership comes from the Lease lease/ns that the test
// controls) and returns a stop function.
func startRouting(installNS, leaseNS, identity string) func() {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, leaseNS, "coxswain-leader-lock",
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	Expect(err).NotTo(HaveOccurred())
	leader := writer.NewLeaseWatch(lock, nil)
	Expect(mgr.Add(leader)).To(Succeed())
	_, _, err = AddToManager(mgr, Options{InstallNamespace: installNS, Leader: leader.Check})
	Expect(err).NotTo(HaveOccurred())
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	return func() {
		stop()
		Eventually(done, 30*time.Second).Should(BeClosed())
	}
}

// holdLease makes holder the owner of the Lease for an hour.
func holdLease(ns, holder string) {
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "coxswain-leader-lock"}}
	_, err := ctrl.CreateOrUpdate(ctx, k8sClient, lease, func() error {
		lease.Spec.HolderIdentity = ptr.To(holder)
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.AcquireTime = &now
		lease.Spec.RenewTime = &now
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
}

func createNamespace(name string) {
	err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil {
		Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
}

// applySamplesInto server-side applies config/samples, moving namespaced
// objects into ns (cluster-scoped ones are applied as they are).
func applySamplesInto(ns string) {
	rendered, err := testkit.Kustomize("config/samples")
	Expect(err).NotTo(HaveOccurred())
	objs, err := testkit.DecodeObjects(rendered)
	Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		if o.GetNamespace() != "" {
			o.SetNamespace(ns)
		}
		Expect(testkit.ServerSideApply(ctx, k8sClient, o)).To(Succeed(), "applying %s %s", o.GetKind(), o.GetName())
	}
}

func cond(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

func ourParent(r *gwv1.HTTPRoute) *gwv1.RouteParentStatus {
	for i := range r.Status.Parents {
		if string(r.Status.Parents[i].ControllerName) == names.ControllerName {
			return &r.Status.Parents[i]
		}
	}
	return nil
}

func backendService(ns, name string, port int32, ip string) {
	Expect(k8sClient.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	})).To(Succeed())
	Expect(k8sClient.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	})).To(Succeed())
}

var _ = Describe("routing status (provider → translator → status writer)", Ordered, func() {
	const (
		ns        = "routing-samples"
		installNS = "routing-install"
		me        = "replica-a"
	)
	var stop func()

	BeforeAll(func() {
		createNamespace(ns)
		createNamespace(installNS)
		holdLease(installNS, me)
		// The shared pool's public Service: Ingress status.loadBalancer comes from it.
		Expect(k8sClient.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: names.SharedProxyServiceName},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		})).To(Succeed())
		applySamplesInto(ns)
		stop = startRouting(installNS, installNS, me)
	})
	AfterAll(func() {
		if stop != nil {
			stop()
		}
	})

	It("accepts the sample GatewayClass and advertises its features", func() {
		Eventually(func(g Gomega) {
			gc := &gwv1.GatewayClass{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Name: "coxswain"}, gc)).To(Succeed())
			c := cond(gc.Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.ObservedGeneration).To(Equal(gc.Generation))
			names := []string{}
			for _, f := range gc.Status.SupportedFeatures {
				names = append(names, string(f.Name))
			}
			g.Expect(names).To(ContainElements("Gateway", "HTTPRoute", "ReferenceGrant"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("accepts and programs the sample shared Gateway with its route attached", func() {
		Eventually(func(g Gomega) {
			gw := &gwv1.Gateway{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, gw)).To(Succeed())
			for _, t := range []string{string(gwv1.GatewayConditionAccepted), string(gwv1.GatewayConditionProgrammed)} {
				c := cond(gw.Status.Conditions, t)
				g.Expect(c).NotTo(BeNil(), t)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", t, c.Message)
				g.Expect(c.ObservedGeneration).To(Equal(gw.Generation))
			}
			g.Expect(gw.Status.Listeners).To(HaveLen(1))
			l := gw.Status.Listeners[0]
			g.Expect(l.Name).To(BeEquivalentTo("http"))
			g.Expect(l.AttachedRoutes).To(BeEquivalentTo(1))
			for _, t := range []string{"Accepted", "ResolvedRefs", "Programmed"} {
				c := cond(l.Conditions, t)
				g.Expect(c).NotTo(BeNil(), t)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "listener %s: %s", t, c.Message)
			}
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("reports BackendNotFound until the route's Services exist, then ResolvedRefs", func() {
		key := types.NamespacedName{Namespace: ns, Name: "web"}
		Eventually(func(g Gomega) {
			r := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
			p := ourParent(r)
			g.Expect(p).NotTo(BeNil())
			g.Expect(cond(p.Conditions, "Accepted").Status).To(Equal(metav1.ConditionTrue))
			rr := cond(p.Conditions, "ResolvedRefs")
			g.Expect(rr.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(rr.Reason).To(Equal(string(gwv1.RouteReasonBackendNotFound)))
			g.Expect(rr.ObservedGeneration).To(Equal(r.Generation))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

		backendService(ns, "api", 8080, "10.1.0.1")
		backendService(ns, "frontend", 80, "10.1.0.2")
		Eventually(func(g Gomega) {
			r := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
			rr := cond(ourParent(r).Conditions, "ResolvedRefs")
			g.Expect(rr.Status).To(Equal(metav1.ConditionTrue), rr.Message)
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("keeps another controller's entries in status.parents", func() {
		key := types.NamespacedName{Namespace: ns, Name: "web"}
		other := gwv1.RouteParentStatus{
			ParentRef:      gwv1.ParentReference{Name: "their-gateway"},
			ControllerName: "example.com/other-controller",
			Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted",
				LastTransitionTime: metav1.Now(), ObservedGeneration: 1}},
		}
		Eventually(func() error {
			r := &gwv1.HTTPRoute{}
			if err := k8sClient.Get(ctx, key, r); err != nil {
				return err
			}
			r.Status.Parents = append(r.Status.Parents, other)
			return k8sClient.Status().Update(ctx, r)
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
		// Change the route so the writer must patch again.
		r := &gwv1.HTTPRoute{}
		Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
		r.Spec.Hostnames = append(r.Spec.Hostnames, "web.example.com")
		Expect(k8sClient.Update(ctx, r)).To(Succeed())
		Eventually(func(g Gomega) {
			r := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
			p := ourParent(r)
			g.Expect(p).NotTo(BeNil())
			g.Expect(cond(p.Conditions, "Accepted").ObservedGeneration).To(Equal(r.Generation))
			var controllers []string
			for _, p := range r.Status.Parents {
				controllers = append(controllers, string(p.ControllerName))
			}
			g.Expect(controllers).To(ConsistOf(names.ControllerName, "example.com/other-controller"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("removes its status.parents entry when a route leaves our Gateways", func() {
		route := &gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moving"},
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			},
		}
		Expect(k8sClient.Create(ctx, route)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(route), got)).To(Succeed())
			g.Expect(ourParent(got)).NotTo(BeNil())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
		got := &gwv1.HTTPRoute{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(route), got)).To(Succeed())
		got.Spec.ParentRefs = []gwv1.ParentReference{{Name: "someone-elses-gateway"}}
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(route), got)).To(Succeed())
			g.Expect(ourParent(got)).To(BeNil())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("fills the sample Ingress's load balancer status from the shared proxy Service", func() {
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: installNS, Name: names.SharedProxyServiceName}, svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
		Eventually(func(g Gomega) {
			ing := &networkingv1.Ingress{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ing)).To(Succeed())
			g.Expect(ing.Status.LoadBalancer.Ingress).To(HaveLen(1))
			g.Expect(ing.Status.LoadBalancer.Ingress[0].IP).To(Equal(svc.Spec.ClusterIP))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("marks the sample dedicated Gateway accepted but its dedicated proxy not ready", func() {
		Eventually(func(g Gomega) {
			gw := &gwv1.Gateway{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "edge"}, gw)).To(Succeed())
			c := cond(gw.Status.Conditions, "Accepted")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			d := cond(gw.Status.Conditions, "gateway.coxswain-labs.dev/DedicatedProxyReady")
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(d.Reason).To(Equal(status.ReasonProvisioning))
			g.Expect(d.Message).To(ContainSubstring("is not created yet"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("follows the dedicated Deployment's rollout in DedicatedProxyReady", func() {
		key := types.NamespacedName{Namespace: ns, Name: "edge"}
		gw := &gwv1.Gateway{}
		Expect(k8sClient.Get(ctx, key, gw)).To(Succeed())
		// envtest runs no Deployment controller: the spec writes the
		// Deployment's status as that controller would.
		labels := names.DedicatedProxySelector()
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName)), Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "proxy", Image: "proxy"}}},
				},
			},
		}
		Expect(k8sClient.Create(ctx, dep)).To(Succeed())
		setStatus := func(observed int64, ready, updated int32) {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
			dep.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: ready, ReadyReplicas: ready, UpdatedReplicas: updated}
			Expect(k8sClient.Status().Update(ctx, dep)).To(Succeed())
		}
		proxyReady := func(g Gomega) *metav1.Condition {
			got := &gwv1.Gateway{}
			g.Expect(k8sClient.Get(ctx, key, got)).To(Succeed())
			c := cond(got.Status.Conditions, status.TypeDedicatedProxyReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
			return c
		}

		By("a ready pod of the observed generation: Ready")
		setStatus(dep.Generation, 1, 1)
		Eventually(func(g Gomega) {
			c := proxyReady(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Reason).To(Equal(status.ReasonReady))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

		By("a new generation the Deployment controller has not observed: Provisioning again")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		observed := dep.Generation
		dep.Spec.Template.Spec.Containers[0].Image = "proxy:v2"
		Expect(k8sClient.Update(ctx, dep)).To(Succeed())
		Expect(dep.Generation).To(BeNumerically(">", observed))
		setStatus(observed, 1, 1)
		Eventually(func(g Gomega) {
			c := proxyReady(g)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(status.ReasonProvisioning))
			g.Expect(c.Message).To(ContainSubstring("not observed"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("rejects a Gateway whose parametersRef names a missing object", func() {
		gw := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken-params"},
			Spec: gwv1.GatewaySpec{
				GatewayClassName: "coxswain",
				Infrastructure: &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{
					Group: "gateway.coxswain-labs.dev", Kind: "CoxswainGatewayParameters", Name: "does-not-exist"}},
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 8080}},
			},
		}
		Expect(k8sClient.Create(ctx, gw)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &gwv1.Gateway{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gw), got)).To(Succeed())
			c := cond(got.Status.Conditions, "Accepted")
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("InvalidParameters"))
			g.Expect(c.Message).To(ContainSubstring("does-not-exist"))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("persists shared Gateway internal ports in VIP Services, stable across a restart", func() {
		vipOf := func(g Gomega, name string) *corev1.Service {
			list := &corev1.ServiceList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(installNS), client.MatchingLabels{
				names.LabelComponent: names.ComponentSharedVIP, names.LabelGatewayName: name,
				names.LabelGatewayNamespace: ns})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			return &list.Items[0]
		}
		var port int32
		Eventually(func(g Gomega) {
			svc := vipOf(g, "web")
			g.Expect(svc.Spec.Ports).To(HaveLen(1))
			g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(80))
			port = svc.Spec.Ports[0].TargetPort.IntVal
			g.Expect(port).To(BeNumerically(">=", portalloc.Min))
			g.Expect(port).To(BeNumerically("<=", portalloc.Max))
			// The Gateway's address is its VIP Service's.
			gw := &gwv1.Gateway{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, gw)).To(Succeed())
			g.Expect(gw.Status.Addresses).NotTo(BeEmpty())
			g.Expect(gw.Status.Addresses[0].Value).To(Equal(svc.Spec.ClusterIP))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

		By("restarting the pipeline: the assignment is read back, not recomputed")
		stop()
		stop = startRouting(installNS, installNS, me)
		second := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "another"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}},
		}
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		Eventually(func(g Gomega) {
			other := vipOf(g, "another")
			g.Expect(other.Spec.Ports[0].TargetPort.IntVal).NotTo(Equal(port))
			g.Expect(vipOf(g, "web").Spec.Ports[0].TargetPort.IntVal).To(Equal(port))
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

		By("deleting the Gateway removes its VIP Service")
		Expect(k8sClient.Delete(ctx, second)).To(Succeed())
		Eventually(func(g Gomega) {
			list := &corev1.ServiceList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(installNS), client.MatchingLabels{
				names.LabelComponent: names.ComponentSharedVIP, names.LabelGatewayName: "another",
				names.LabelGatewayNamespace: ns})).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("writes nothing while another replica holds the Lease, and resumes when it gets it", func() {
		holdLease(installNS, "replica-b")
		// Give the writer a moment to see any in-flight round end.
		time.Sleep(500 * time.Millisecond)
		route := &gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "while-standby"},
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
				Rules:           []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "frontend", Port: ptr.To[gwv1.PortNumber](80)}}}}}},
			},
		}
		Expect(k8sClient.Create(ctx, route)).To(Succeed())
		Consistently(func(g Gomega) {
			got := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(route), got)).To(Succeed())
			g.Expect(got.Status.Parents).To(BeEmpty())
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

		holdLease(installNS, me)
		Eventually(func(g Gomega) {
			got := &gwv1.HTTPRoute{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(route), got)).To(Succeed())
			g.Expect(ourParent(got)).NotTo(BeNil())
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})
})
