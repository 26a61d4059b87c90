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

package translator

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/provision"
)

func TestClassifyService(t *testing.T) {
	const installNS = "coxswain-system"
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	vip := provision.RenderVIPService(gw, installNS, []portalloc.Assignment{{Key: portalloc.Key{Namespace: "apps", Name: "web", Port: 80}, Internal: 30007}})
	svc := func(ns, name string, labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	dedicated := provision.DedicatedLabels(gw)
	for _, c := range []struct {
		name string
		svc  *corev1.Service
		want ServiceRole
	}{
		{"rendered VIP Service", vip, ServiceSharedVIP},
		{"VIP labels outside the install namespace", svc("apps", "x", vip.Labels), ServiceBackend},
		{"VIP without managed-by", svc(installNS, "x", map[string]string{names.LabelComponent: names.ComponentSharedVIP}), ServiceBackend},
		{"dedicated labels, any namespace", svc("apps", "web-coxswain", dedicated), ServiceDedicatedProxy},
		{"dedicated labels in the install namespace", svc(installNS, "web-coxswain", dedicated), ServiceDedicatedProxy},
		{"dedicated component without managed-by", svc("apps", "web-coxswain", map[string]string{names.LabelComponent: names.ComponentDedicatedProxy}), ServiceBackend},
		{"shared pool Service, by name", svc(installNS, names.SharedProxyServiceName, nil), ServiceSharedProxy},
		{"shared pool name in another namespace", svc("apps", names.SharedProxyServiceName, nil), ServiceBackend},
		{"a backend", svc("apps", "app", map[string]string{"app": "web"}), ServiceBackend},
	} {
		if got := ClassifyService(installNS, c.svc); got != c.want {
			t.Errorf("%s: ClassifyService = %d, want %d", c.name, got, c.want)
		}
	}
	res := &Resources{}
	res.SetServices(installNS, []*corev1.Service{vip, nil, svc("apps", "app", nil)})
	if len(res.Services) != 3 || len(res.SharedVIPServices) != 1 || len(res.InternalPorts) != 1 || res.InternalPorts[0].Internal != 30007 {
		t.Errorf("SetServices: %d Services, %d VIP Services, internal ports %v", len(res.Services), len(res.SharedVIPServices), res.InternalPorts)
	}
}

// TestGoldenLoaderRejectsUnclassifiedServices: a golden Service written with
// labels production does not render (here the loader's former
// component=shared-gateway-vip) is an error, not a backend.
func TestGoldenLoaderRejectsUnclassifiedServices(t *testing.T) {
	for name, doc := range map[string]string{
		"old VIP label": `{apiVersion: v1, kind: Service, metadata: {name: web-vip, namespace: coxswain-system,
  labels: {app.kubernetes.io/component: shared-gateway-vip, gateway.networking.k8s.io/gateway-name: web}}}`,
		"dedicated without managed-by": `{apiVersion: v1, kind: Service, metadata: {name: web-coxswain, namespace: default,
  labels: {app.kubernetes.io/component: dedicated-proxy}}}`,
		"Deployment without labels": `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web-coxswain, namespace: default}}`,
	} {
		if _, err := loadResources([]byte(doc), true); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}

// TestGoldenInfrastructureIsRendered checks that the Coxswain objects in the
// golden inputs are what internal/provision renders today (names, labels,
// annotation), and that the goldens hold every kind of them, so a change of
// a production label, annotation or name fails here until the goldens
// follow.
func TestGoldenInfrastructureIsRendered(t *testing.T) {
	seen := map[string]int{}
	for _, in := range goldenInputs(t) {
		res := loadGolden(t, in)
		for _, s := range res.SharedVIPServices {
			seen["VIP Service"]++
			if msg := vipRendered(s); msg != "" {
				t.Errorf("%s: VIP Service %s: %s", in, s.Name, msg)
			}
		}
		for _, s := range res.DedicatedServices {
			seen["dedicated Service"]++
			if !dedicatedRendered(res.Gateways, &s.ObjectMeta, names.DedicatedServiceName) {
				t.Errorf("%s: dedicated Service %s/%s has no Gateway whose rendered name and labels it carries", in, s.Namespace, s.Name)
			}
		}
		for _, d := range res.DedicatedDeployments {
			seen["dedicated Deployment"]++
			if !dedicatedRendered(res.Gateways, &d.ObjectMeta, names.DedicatedName) {
				t.Errorf("%s: dedicated Deployment %s/%s has no Gateway whose rendered name and labels it carries", in, d.Namespace, d.Name)
			}
		}
		if s := res.SharedProxyService; s != nil {
			seen["shared pool Service"]++
			if !hasLabels(s.Labels, provision.SharedPoolLabels()) {
				t.Errorf("%s: shared pool Service labels %v, provision renders %v", in, s.Labels, provision.SharedPoolLabels())
			}
		}
		if len(res.InternalPorts) > 0 {
			seen["persisted internal ports"]++
		}
	}
	for _, kind := range []string{"VIP Service", "dedicated Service", "dedicated Deployment", "shared pool Service", "persisted internal ports"} {
		if seen[kind] == 0 {
			t.Errorf("no golden input has a %s", kind)
		}
	}
}

// vipRendered compares a VIP Service with the one provision renders for the
// Gateway its annotation names.
func vipRendered(s *corev1.Service) string {
	ns, name, ok := strings.Cut(s.Annotations[names.AnnotationGateway], "/")
	if !ok {
		return "no " + names.AnnotationGateway + " annotation"
	}
	want := provision.RenderVIPService(&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, goldenInstallNamespace, nil)
	switch {
	case s.Name != want.Name:
		return "name differs from " + want.Name
	case !hasLabels(s.Labels, want.Labels):
		return "labels lack some of " + strings.Join(labelList(want.Labels), ", ")
	case !hasLabels(s.Annotations, want.Annotations):
		return "annotations lack some of " + strings.Join(labelList(want.Annotations), ", ")
	case !hasLabels(s.Spec.Selector, want.Spec.Selector):
		return "selector differs from the shared pool's"
	}
	return ""
}

// dedicatedRendered reports whether a Gateway of the object's namespace gives
// it its name (by nameOf) and its labels.
func dedicatedRendered(gws []*gwv1.Gateway, m *metav1.ObjectMeta, nameOf func(gateway, class string) string) bool {
	for _, gw := range gws {
		if gw.Namespace == m.Namespace && nameOf(gw.Name, string(gw.Spec.GatewayClassName)) == m.Name &&
			hasLabels(m.Labels, provision.DedicatedLabels(gw)) {
			return true
		}
	}
	return false
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func labelList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// TestServiceSorterIsSetServices: through gathers of the same objects, of
// an object replaced (an update), of one added or gone, and under another
// install namespace, a ServiceSorter sorts as SetServices does; the same
// objects reuse the last sorting.
func TestServiceSorterIsSetServices(t *testing.T) {
	const installNS = "coxswain-system"
	vip := func(name string, port int32) *corev1.Service {
		gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
			Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
		return provision.RenderVIPService(gw, installNS, []portalloc.Assignment{{Key: portalloc.Key{Namespace: "apps", Name: name, Port: 80}, Internal: port}})
	}
	backend := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
	shared := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: names.SharedProxyServiceName}}
	services := []*corev1.Service{vip("a", 30001), vip("b", 30002), backend, shared}
	var s ServiceSorter
	check := func(step string, ns string, services []*corev1.Service) *Resources {
		t.Helper()
		var got, want Resources
		s.SetServices(&got, ns, services)
		want.SetServices(ns, services)
		// The lists carry no order (an informer's store lists in none).
		byName := func(a, b *corev1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) }
		for _, l := range []*[]*corev1.Service{&got.DedicatedServices, &want.DedicatedServices, &got.SharedVIPServices, &want.SharedVIPServices} {
			*l = slices.SortedFunc(slices.Values(*l), byName)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: sorted %+v, SetServices %+v", step, got, want)
		}
		return &got
	}
	first := check("first", installNS, services)
	again := check("the same objects", installNS, reversed(services))
	if &again.InternalPorts[0] != &first.InternalPorts[0] {
		t.Error("the same objects were sorted again")
	}
	services[0] = vip("a", 30009) // updated: a new object
	if got := check("one replaced", installNS, services); got.InternalPorts[0].Internal != 30009 {
		t.Errorf("an updated VIP Service's port is %d", got.InternalPorts[0].Internal)
	}
	check("one gone", installNS, services[1:])
	check("one added", installNS, append(services, vip("c", 30003)))
	check("another install namespace", "elsewhere", services)
}

// reversed is a reversed copy of s.
func reversed[E any](s []E) []E {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
