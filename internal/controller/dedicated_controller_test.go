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

package controller

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayparamsv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	dedTimeout  = 20 * time.Second
	dedInterval = 100 * time.Millisecond
	dedImage    = "registry.example.com/coxswain:test"
	dedBundle   = "-----BEGIN CERTIFICATE-----\nMIIBdedicated\n-----END CERTIFICATE-----\n"
)

// appliedFields returns the fields coxswain-controller owns by apply on obj.
func appliedFields(obj client.Object) string {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == names.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.FieldsV1 != nil {
			return mf.FieldsV1.GetRawString()
		}
	}
	return ""
}

var _ = Describe("Dedicated proxy provisioning", Ordered, func() {
	var (
		mgrCancel func()
		mgrDone   chan struct{}
		installNS string
		suffix    string
	)

	dedNamespace := func(prefix string) string {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + suffix}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		return ns.Name
	}

	getDeployment := func(ns, name string) func(Gomega) *appsv1.Deployment {
		return func(g Gomega) *appsv1.Deployment {
			var d appsv1.Deployment
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &d)).To(Succeed())
			return &d
		}
	}

	gone := func(obj client.Object) func(Gomega) {
		return func(g Gomega) {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists (err=%v)", obj, obj.GetName(), err)
		}
	}

	warningEvents := func(ns, gateway, reason string) func(Gomega) []eventsv1.Event {
		return func(g Gomega) []eventsv1.Event {
			var list eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var out []eventsv1.Event
			for _, e := range list.Items {
				if e.Regarding.Kind == "Gateway" && e.Regarding.Name == gateway && e.Reason == reason && e.Type == corev1.EventTypeWarning {
					out = append(out, e)
				}
			}
			return out
		}
	}

	BeforeAll(func() {
		suffix = uuid.NewString()[:8]
		installNS = dedNamespace("ded-install")
		Expect(k8sClient.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: names.TrustBundleConfigMapName},
			Data:       map[string]string{names.TrustBundleKey: dedBundle},
		})).To(Succeed())

		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			LeaderElection:         false,
			Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect((&DedicatedReconciler{InstallNamespace: installNS, DefaultImage: dedImage}).SetupWithManager(mgr)).To(Succeed())
		mctx, c := context.WithCancel(ctx)
		mgrCancel = c
		mgrDone = make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(mgrDone)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
	})

	AfterAll(func() {
		if mgrCancel != nil {
			mgrCancel()
			Eventually(mgrDone, dedTimeout).Should(BeClosed())
		}
	})

	It("renders, corrects drift, follows parameters and removes objects when the Gateway turns shared", func() {
		ns := dedNamespace("ded-apps")
		className := "ded-class-" + suffix
		params := &gatewayparamsv1alpha1.CoxswainGatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "class-params"},
			Spec: gatewayparamsv1alpha1.CoxswainGatewayParametersSpec{
				Replicas:    ptr.To[int32](2),
				ServiceType: ptr.To(gatewayparamsv1alpha1.ServiceTypeClusterIP),
				PodTemplate: &gatewayparamsv1alpha1.PodTemplatePatch{Spec: &runtime.RawExtension{Raw: []byte(
					`{"hostNetwork":true,"tolerations":[{"key":"dedicated","operator":"Equal","value":"edge","effect":"NoSchedule"}]}`)}},
			},
		}
		Expect(k8sClient.Create(ctx, params)).To(Succeed())
		class := &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: className},
			Spec: gwv1.GatewayClassSpec{
				ControllerName: names.ControllerName,
				ParametersRef: &gwv1.ParametersReference{
					Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "class-params",
					Namespace: ptr.To(gwv1.Namespace(ns)),
				},
			},
		}
		Expect(k8sClient.Create(ctx, class)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, class))).To(Succeed()) })
		gw := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"},
			Spec: gwv1.GatewaySpec{
				GatewayClassName: gwv1.ObjectName(className),
				Infrastructure: &gwv1.GatewayInfrastructure{
					Labels: map[gwv1.LabelKey]gwv1.LabelValue{"example.com/team": "payments"},
				},
				Listeners: []gwv1.Listener{
					{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80},
					{Name: "tcp", Protocol: gwv1.TCPProtocolType, Port: 5432},
				},
			},
		}
		Expect(k8sClient.Create(ctx, gw)).To(Succeed())
		name := gw.Name + "-" + className

		By("rendering every object, owner-referenced to the Gateway")
		var d *appsv1.Deployment
		Eventually(func(g Gomega) {
			d = getDeployment(ns, name)(g)
		}, dedTimeout, dedInterval).Should(Succeed())
		Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		pod := d.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal(name))
		Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		Expect(pod.HostNetwork).To(BeFalse(), "the security envelope strips hostNetwork")
		Expect(pod.Tolerations).To(ContainElement(HaveField("Key", "dedicated")))
		Expect(pod.Containers).To(HaveLen(1))
		Expect(pod.Containers[0].Image).To(Equal(dedImage))
		Expect(pod.Containers[0].Args).To(ContainElements("--dedicated", "--gateway-name", "edge", "--gateway-namespace", ns,
			names.DiscoveryEndpoint(installNS), names.BootstrapEndpoint(installNS)))
		Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("example.com/team", "payments"))
		Expect(d.Labels).To(HaveKeyWithValue(names.LabelComponent, names.ComponentDedicatedProxy))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gw), gw)).To(Succeed())
		owner := metav1.OwnerReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: gw.Name, UID: gw.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		var svc corev1.Service
		var sa corev1.ServiceAccount
		var cm corev1.ConfigMap
		var pdb policyv1.PodDisruptionBudget
		Eventually(func(g Gomega) {
			key := types.NamespacedName{Namespace: ns, Name: name}
			g.Expect(k8sClient.Get(ctx, key, &svc)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, key, &sa)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, key, &cm)).To(Succeed())
			g.Expect(k8sClient.Get(ctx, key, &pdb)).To(Succeed())
		}, dedTimeout, dedInterval).Should(Succeed())
		for _, obj := range []client.Object{d, &svc, &sa, &cm, &pdb} {
			Expect(obj.GetOwnerReferences()).To(ConsistOf(owner), "%T", obj)
		}
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(svc.Spec.Ports).To(ConsistOf(
			And(HaveField("Port", BeEquivalentTo(80)), HaveField("TargetPort.IntVal", BeEquivalentTo(80))),
			And(HaveField("Port", BeEquivalentTo(5432)), HaveField("TargetPort.IntVal", BeEquivalentTo(5432))),
		))
		Expect(cm.Data).To(HaveKeyWithValue(names.TrustBundleKey, dedBundle))
		Expect(sa.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		var hpa autoscalingv2.HorizontalPodAutoscaler
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &hpa))).To(BeTrue())
		Expect(d.ManagedFields).To(ContainElement(And(HaveField("Manager", names.FieldManager), HaveField("Operation", metav1.ManagedFieldsOperationApply))))
		Eventually(warningEvents(ns, gw.Name, provision.EventPodTemplateSanitized), dedTimeout, dedInterval).
			Should(ContainElement(HaveField("Note", ContainSubstring("spec.hostNetwork"))))

		By("restoring replicas and image edited by hand")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Replicas = ptr.To[int32](5)
		d.Spec.Template.Spec.Containers[0].Image = "registry.example.com/tampered:1"
		Expect(k8sClient.Update(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getDeployment(ns, name)(g)
			g.Expect(cur.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(cur.Spec.Template.Spec.Containers[0].Image).To(Equal(dedImage))
		}, dedTimeout, dedInterval).Should(Succeed())

		By("rolling the Deployment when the parameters change, and adding an HPA when autoscaling turns on")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(params), params)).To(Succeed())
		params.Spec.Image = ptr.To("registry.example.com/coxswain:v2")
		params.Spec.Autoscaling = &gatewayparamsv1alpha1.Autoscaling{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](4)}
		Expect(k8sClient.Update(ctx, params)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getDeployment(ns, name)(g)
			g.Expect(cur.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/coxswain:v2"))
			g.Expect(appliedFields(cur)).NotTo(ContainSubstring(`"f:replicas"`))
			// The replica count is handed over, not reset to 1 before the HPA acts.
			g.Expect(cur.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &hpa)).To(Succeed())
			g.Expect(hpa.Spec.MaxReplicas).To(BeEquivalentTo(4))
		}, dedTimeout, dedInterval).Should(Succeed())
		By("pruning the PDB once the replica floor drops below 2")
		Eventually(gone(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}), dedTimeout, dedInterval).Should(Succeed())

		By("removing every dedicated object when the Gateway's class turns shared")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
		class.Spec.ParametersRef = nil
		Expect(k8sClient.Update(ctx, class)).To(Succeed())
		for _, obj := range []client.Object{
			&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{}, &autoscalingv2.HorizontalPodAutoscaler{},
		} {
			obj.SetNamespace(ns)
			obj.SetName(name)
			Eventually(gone(obj), dedTimeout, dedInterval).Should(Succeed())
		}
	})

	It("follows a Gateway's own parametersRef, reports invalid refs, and cleans up when the ref is removed", func() {
		ns := dedNamespace("ded-gwref")
		className := "ded-plain-" + suffix
		class := &gwv1.GatewayClass{
			ObjectMeta: metav1.ObjectMeta{Name: className},
			Spec:       gwv1.GatewayClassSpec{ControllerName: names.ControllerName},
		}
		Expect(k8sClient.Create(ctx, class)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, class))).To(Succeed()) })
		gw := &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo"},
			Spec: gwv1.GatewaySpec{
				GatewayClassName: gwv1.ObjectName(className),
				Infrastructure: &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{
					Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "solo-params",
				}},
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 8080}},
			},
		}
		Expect(k8sClient.Create(ctx, gw)).To(Succeed())
		name := gw.Name + "-" + className

		By("warning about the missing parameters without rendering anything")
		Eventually(warningEvents(ns, gw.Name, EventInvalidParameters), dedTimeout, dedInterval).
			Should(ContainElement(HaveField("Note", ContainSubstring("solo-params: not found"))))
		Consistently(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &appsv1.Deployment{}))
		}, time.Second, dedInterval).Should(BeTrue())

		By("rendering once the parameters exist")
		Expect(k8sClient.Create(ctx, &gatewayparamsv1alpha1.CoxswainGatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo-params"},
			Spec:       gatewayparamsv1alpha1.CoxswainGatewayParametersSpec{LogLevel: ptr.To(gatewayparamsv1alpha1.LogLevelDebug)},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			d := getDeployment(ns, name)(g)
			g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: provision.EnvLogLevel, Value: "debug"}))
		}, dedTimeout, dedInterval).Should(Succeed())
		var svc corev1.Service
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc)).To(Succeed())
		Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))

		By("copying a new trust bundle into the Gateway's namespace")
		var source corev1.ConfigMap
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: installNS, Name: names.TrustBundleConfigMapName}, &source)).To(Succeed())
		rotated := dedBundle + "-----BEGIN CERTIFICATE-----\nMIIBnext\n-----END CERTIFICATE-----\n"
		source.Data[names.TrustBundleKey] = rotated
		Expect(k8sClient.Update(ctx, &source)).To(Succeed())
		Eventually(func(g Gomega) {
			var cm corev1.ConfigMap
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue(names.TrustBundleKey, rotated))
		}, dedTimeout, dedInterval).Should(Succeed())

		By("switching the Gateway to the shared pool")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(gw), gw)).To(Succeed())
		gw.Spec.Infrastructure = nil
		Expect(k8sClient.Update(ctx, gw)).To(Succeed())
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &corev1.ConfigMap{}} {
			obj.SetNamespace(ns)
			obj.SetName(name)
			Eventually(gone(obj), dedTimeout, dedInterval).Should(Succeed())
		}
	})

	It("gives contested dedicated names to the older Gateway only, and hands them over when it goes", func() {
		ns := dedNamespace("ded-names")
		Expect(k8sClient.Create(ctx, &gatewayparamsv1alpha1.CoxswainGatewayParameters{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		})).To(Succeed())
		// "web-internal" of class C and "web" of class "internal-"+C both
		// name their objects web-internal-C.
		short := "nc-" + suffix
		for _, className := range []string{short, "internal-" + short} {
			class := &gwv1.GatewayClass{
				ObjectMeta: metav1.ObjectMeta{Name: className},
				Spec: gwv1.GatewayClassSpec{ControllerName: names.ControllerName, ParametersRef: &gwv1.ParametersReference{
					Group: names.ParametersGroup, Kind: names.ParametersKind, Name: "p", Namespace: ptr.To(gwv1.Namespace(ns)),
				}},
			}
			Expect(k8sClient.Create(ctx, class)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, class))).To(Succeed()) })
		}
		gateway := func(name, className string) *gwv1.Gateway {
			return &gwv1.Gateway{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(className),
					Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}},
			}
		}
		contested := "web-internal-" + short
		holder, refused := gateway("web-internal", short), gateway("web", "internal-"+short)
		lookup := DedicatedServiceAccountLookup(k8sClient)
		provisionedFor := func(gw *gwv1.Gateway) func(Gomega) {
			return func(g Gomega) {
				d := getDeployment(ns, contested)(g)
				g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--gateway-name", gw.Name))
				g.Expect(d.OwnerReferences).To(ConsistOf(HaveField("UID", gw.UID)))
				var sa corev1.ServiceAccount
				g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: contested}, &sa)).To(Succeed())
				g.Expect(sa.OwnerReferences).To(ConsistOf(HaveField("UID", gw.UID)))
			}
		}

		By("provisioning the first Gateway")
		Expect(k8sClient.Create(ctx, holder)).To(Succeed())
		Eventually(provisionedFor(holder), dedTimeout, dedInterval).Should(Succeed())
		// creationTimestamp has one-second resolution: make the second
		// Gateway strictly younger (a tie would go to "web" by name).
		time.Sleep(1100 * time.Millisecond)

		By("refusing the younger namesake: a Warning naming the holder, its objects left alone")
		Expect(k8sClient.Create(ctx, refused)).To(Succeed())
		Eventually(warningEvents(ns, refused.Name, EventNameConflict), dedTimeout, dedInterval).
			Should(ContainElement(HaveField("Note", And(ContainSubstring(contested), ContainSubstring(ns+"/web-internal")))))
		Consistently(provisionedFor(holder), 2*time.Second, dedInterval).Should(Succeed())

		By("authorising the ServiceAccount for the holder's scope only")
		sa, ok := lookup(ns, holder.Name)
		Expect(ok).To(BeTrue())
		Expect(sa).To(Equal(contested))
		_, ok = lookup(ns, refused.Name)
		Expect(ok).To(BeFalse(), "the refused Gateway's scope must not map to the holder's ServiceAccount")

		By("handing the names over when the holder goes, recreating (not adopting) its objects")
		var oldSA corev1.ServiceAccount
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: contested}, &oldSA)).To(Succeed())
		Expect(k8sClient.Delete(ctx, holder)).To(Succeed())
		// envtest runs no garbage collector: the holder's objects stay until
		// the new holder replaces them.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refused), refused)).To(Succeed())
		Eventually(provisionedFor(refused), dedTimeout, dedInterval).Should(Succeed())
		var newSA corev1.ServiceAccount
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: contested}, &newSA)).To(Succeed())
		Expect(newSA.UID).NotTo(Equal(oldSA.UID), "the old holder's ServiceAccount (and its proxies' tokens) must not be reused")
		Eventually(func() bool { _, ok := lookup(ns, refused.Name); return ok }, dedTimeout, dedInterval).Should(BeTrue())
	})

	It("provisions the dedicated Gateway of config/samples", func() {
		samplesDir := filepath.Join(testkit.RepoRoot(), "config", "samples")
		for _, file := range []string{"gateway_v1alpha1_coxswaingatewayparameters.yaml", "gateway_v1_gatewayclass.yaml", "gateway_v1_gateway.yaml"} {
			raw, err := os.ReadFile(filepath.Join(samplesDir, file))
			Expect(err).NotTo(HaveOccurred())
			objs, err := testkit.DecodeObjects(raw)
			Expect(err).NotTo(HaveOccurred())
			for _, obj := range objs {
				Expect(testkit.ServerSideApply(ctx, k8sClient, obj)).To(Succeed(), "%s: %s %s", file, obj.GetKind(), obj.GetName())
			}
		}
		name := "edge-coxswain-dedicated"
		Eventually(func(g Gomega) {
			d := getDeployment("default", name)(g)
			g.Expect(appliedFields(d)).NotTo(ContainSubstring(`"f:replicas"`), "autoscaling leaves replicas to the HPA")
			g.Expect(appliedFields(d)).To(ContainSubstring(`"f:template"`))
			g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("example.com/cost-center", "edge"))
			g.Expect(d.Spec.Template.Spec.Tolerations).To(ContainElement(HaveField("Key", "dedicated")))
			g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "GOMAXPROCS", Value: "2"}))
			var hpa autoscalingv2.HorizontalPodAutoscaler
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, &hpa)).To(Succeed())
			g.Expect(hpa.Spec.MinReplicas).To(HaveValue(BeEquivalentTo(2)))
			var pdb policyv1.PodDisruptionBudget
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, &pdb)).To(Succeed())
			var svc corev1.Service
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, &svc)).To(Succeed())
			g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			g.Expect(svc.Annotations).To(HaveKeyWithValue("example.com/team", "platform"))
		}, dedTimeout, dedInterval).Should(Succeed())
	})

	It("keeps shared VIP internal ports stable across a controller restart", func() {
		vipNS := dedNamespace("ded-vip")
		gateways := []*gwv1.Gateway{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}, Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}, {Name: "https", Protocol: gwv1.HTTPSProtocolType, Port: 443}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "web"}, Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
				Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}}},
		}
		wanted := func(gws []*gwv1.Gateway) []portalloc.Key {
			var keys []portalloc.Key
			for _, gw := range gws {
				for _, l := range gw.Spec.Listeners {
					keys = append(keys, portalloc.Key{Namespace: gw.Namespace, Name: gw.Name, Port: int32(l.Port)})
				}
			}
			return keys
		}
		applyVIPs := func(gws []*gwv1.Gateway, assigned []portalloc.Assignment) {
			for _, gw := range gws {
				u, err := provision.ToUnstructured(provision.RenderVIPServiceOfType(gw, vipNS, assigned, corev1.ServiceTypeClusterIP))
				Expect(err).NotTo(HaveOccurred())
				Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(names.FieldManager), client.ForceOwnership)).To(Succeed())
			}
		}
		readBack := func() []portalloc.Assignment {
			var list corev1.ServiceList
			Expect(k8sClient.List(ctx, &list, client.InNamespace(vipNS), client.MatchingLabels{names.LabelComponent: names.ComponentSharedVIP})).To(Succeed())
			svcs := make([]*corev1.Service, 0, len(list.Items))
			for i := range list.Items {
				svcs = append(svcs, &list.Items[i])
			}
			return provision.AssignmentsFromVIPServices(svcs)
		}

		first, unassigned := portalloc.Assign(nil, wanted(gateways))
		Expect(unassigned).To(BeEmpty())
		applyVIPs(gateways, first)

		By("a restarted controller reads the same assignments back from the apiserver")
		persisted := readBack()
		Expect(persisted).To(Equal(first))

		By("a new Gateway that sorts first does not move the existing ports")
		newcomer := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "aaa", Name: "first"}, Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
			Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80}}}}
		all := append([]*gwv1.Gateway{newcomer}, gateways...)
		second, unassigned := portalloc.Assign(persisted, wanted(all))
		Expect(unassigned).To(BeEmpty())
		for _, a := range first {
			Expect(second).To(ContainElement(a))
		}
		applyVIPs(all, second)
		Expect(readBack()).To(Equal(second))
	})
})
