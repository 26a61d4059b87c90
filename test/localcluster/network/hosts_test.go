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

package network

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostsFile(t *testing.T) {
	ready, notReady := true, false
	svc := func(ns, name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
	}
	slice := func(ns, svc string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
		}
	}
	ep := func(ip string, r *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: r}}
	}
	withIP := svc("app", "cip", corev1.ServiceTypeClusterIP)
	withIP.Spec.ClusterIP = "10.96.0.20"
	headless := svc("app", "headless", corev1.ServiceTypeClusterIP)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	addrs := ServiceAddresses(
		[]*corev1.Service{
			withIP, headless,
			svc("default", "kubernetes", corev1.ServiceTypeClusterIP),
			svc("app", "web", corev1.ServiceTypeClusterIP),
			svc("app", "down", corev1.ServiceTypeClusterIP),
			svc("app", "ext", corev1.ServiceTypeExternalName),
			svc("app", "empty", corev1.ServiceTypeClusterIP),
		},
		[]*discoveryv1.EndpointSlice{
			slice("default", "kubernetes", ep("10.244.0.1", nil)),
			slice("app", "web", ep("10.244.1.9", &ready), ep("10.244.1.3", &ready), ep("10.244.1.1", &notReady)),
			slice("app", "down", ep("10.244.1.4", &notReady)),
			slice("app", "ext", ep("10.244.1.5", &ready)),
			slice("app", "cip", ep("10.244.1.6", &ready)),
			slice("app", "headless", ep("10.244.1.8", &ready)),
		})
	want := map[string]string{"default/kubernetes": "10.244.0.1", "app/web": "10.244.1.3", "app/cip": "10.96.0.20", "app/headless": "10.244.1.8"}
	if !reflect.DeepEqual(addrs, want) {
		t.Fatalf("addresses %v, want %v", addrs, want)
	}
	got := HostsFile("app", "client-1", "10.244.1.7", addrs)
	for _, line := range []string{
		"127.0.0.1\tlocalhost\n",
		"10.244.1.7\tclient-1\n",
		"10.244.1.3\tweb.app.svc.cluster.local web.app.svc web.app web\n",
		"10.244.0.1\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
}
