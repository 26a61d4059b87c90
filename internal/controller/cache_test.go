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
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// TestCacheKeepsManagedFieldsOfDeploymentsAlone: the cache strips
// managedFields from everything but Deployments, whose replicas hand-off
// reads them.
func TestCacheKeepsManagedFieldsOfDeploymentsAlone(t *testing.T) {
	fields := func() []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "coxswain", Operation: metav1.ManagedFieldsOperationApply}}
	}
	transform := CacheOptions(names.DefaultInstallNamespace).DefaultTransform
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", ManagedFields: fields()}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", ManagedFields: fields()}}
	for _, o := range []any{route, dep} {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	if route.ManagedFields != nil {
		t.Error("an HTTPRoute was cached with its managedFields")
	}
	if len(dep.ManagedFields) != 1 {
		t.Error("a Deployment was cached without its managedFields")
	}
}

// TestCacheDropsLastAppliedOfWhatItOnlyReads: kubectl's last-applied
// annotation is dropped from the kinds the controller only reads, and
// every other annotation kept; a kind the controller may update keeps it.
func TestCacheDropsLastAppliedOfWhatItOnlyReads(t *testing.T) {
	annotations := func() map[string]string {
		return map[string]string{lastApplied: `{"apiVersion":"v1"}`, "example.com/keep": "yes"}
	}
	transform := CacheOptions(names.DefaultInstallNamespace).DefaultTransform
	dropped := []metav1.Object{
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Annotations: annotations()}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "g", Annotations: annotations()}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: annotations()}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Annotations: annotations(), Labels: names.DedicatedProxySelector()}},
		&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "i", Annotations: annotations()}},
	}
	kept := []metav1.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Annotations: annotations()}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Annotations: annotations()}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "gc", Annotations: annotations()}},
	}
	for _, o := range append(slices.Clone(dropped), kept...) {
		if _, err := transform(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range dropped {
		if _, ok := o.GetAnnotations()[lastApplied]; ok || o.GetAnnotations()["example.com/keep"] != "yes" {
			t.Errorf("%T cached with annotations %v", o, o.GetAnnotations())
		}
	}
	for _, o := range kept {
		if _, ok := o.GetAnnotations()[lastApplied]; !ok {
			t.Errorf("%T cached without its last-applied annotation", o)
		}
	}
}

// TestCacheKeepsOfBackendsWhatIsRead: EndpointSlices and backend Services
// are cached cut to what the translator reads (translator.LeanEndpointSlice
// and LeanBackendService, held to it by the translator's own test);
// Coxswain's own Services, whose addresses, status and labels are read,
// are cached whole.
func TestCacheKeepsOfBackendsWhatIsRead(t *testing.T) {
	transform := CacheOptions(names.DefaultInstallNamespace).DefaultTransform
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-x7k2p", GenerateName: "web-",
			Labels:          map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "app": "web"},
			Annotations:     map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-12-07T09:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "u1"}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.1.2.3"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			Hostname:   ptr.To("web-0"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-5d9c-x7k2p", UID: "u2"},
			NodeName:   ptr.To("node-1"), Zone: ptr.To("zone-a"),
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}},
		}},
	}
	wantSlice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-x7k2p", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       slice.Ports,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}},
	}
	backend := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Labels:          map[string]string{"app.kubernetes.io/name": "web", "helm.sh/chart": "web-1.2.3"},
			Annotations:     map[string]string{"meta.helm.sh/release-name": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "App", Name: "web", UID: "u3"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Selector:       map[string]string{"app": "web"},
			Ports:          []corev1.ServicePort{{Name: "http", Port: 80, AppProtocol: ptr.To("http")}},
			IPFamilies:     []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack)},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}}},
	}
	wantBackend := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", OwnerReferences: backend.OwnerReferences},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Ports: backend.Spec.Ports},
	}
	own := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "gw-coxswain", Labels: names.DedicatedProxySelector()},
			Spec: backend.Spec, Status: backend.Status},
		{ObjectMeta: metav1.ObjectMeta{Namespace: names.DefaultInstallNamespace, Name: "vip-1", Labels: names.SharedVIPSelector()},
			Spec: backend.Spec, Status: backend.Status},
		{ObjectMeta: metav1.ObjectMeta{Namespace: names.DefaultInstallNamespace, Name: names.SharedProxyServiceName, Labels: map[string]string{"app": "x"}},
			Spec: backend.Spec, Status: backend.Status},
	}
	for _, c := range []struct {
		in, want any
	}{{slice, wantSlice}, {backend, wantBackend}} {
		got, err := transform(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(got, c.want) {
			t.Errorf("%T cached as\n%+v\nwant\n%+v", got, got, c.want)
		}
	}
	for _, s := range own {
		whole := s.DeepCopy()
		if _, err := transform(s); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(s, whole) {
			t.Errorf("Coxswain's Service %s/%s was cached cut: %+v", s.Namespace, s.Name, s)
		}
	}
}

// TestCacheSharesEqualStrings: two routes decoded apart are cached with
// one copy of each string they share (an API group, a condition's
// message, a label), their own names apart, and nothing of either
// changed.
func TestCacheSharesEqualStrings(t *testing.T) {
	decoder := serializer.NewCodecFactory(NewScheme()).UniversalDeserializer()
	transform := CacheOptions(names.DefaultInstallNamespace).DefaultTransform
	var cached, whole []*gwv1.HTTPRoute
	for i := range 2 {
		obj, _, err := decoder.Decode([]byte(strings.ReplaceAll(fmt.Sprintf(cachedObjects["HTTPRoute"], i+1), "\n", "")), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := obj.(*gwv1.HTTPRoute)
		r.Labels = map[string]string{strings.Clone("app.kubernetes.io/part-of"): strings.Clone("shop")}
		whole = append(whole, r.DeepCopy())
		if _, err := transform(r); err != nil {
			t.Fatal(err)
		}
		cached = append(cached, r)
	}
	for i := range cached {
		if !equality.Semantic.DeepEqual(cached[i], whole[i]) {
			t.Errorf("route %d cached as %+v, want %+v", i, cached[i], whole[i])
		}
	}
	a, b := cached[0], cached[1]
	same := func(what, x, y string) {
		t.Helper()
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s %q is cached twice", what, x)
		}
	}
	same("the parent's group", string(*a.Spec.ParentRefs[0].Group), string(*b.Spec.ParentRefs[0].Group))
	same("the namespace", a.Namespace, b.Namespace)
	same("a condition's message", a.Status.Parents[0].Conditions[1].Message, b.Status.Parents[0].Conditions[1].Message)
	same("the controller's name", string(a.Status.Parents[0].ControllerName), string(b.Status.Parents[0].ControllerName))
	same("a path match's type", string(*a.Spec.Rules[1].Matches[0].Path.Type), string(*b.Spec.Rules[1].Matches[0].Path.Type))
	for k, v := range a.Labels {
		same("a label", v, b.Labels[k])
	}
}
