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

package serviceproxy

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceBackends(t *testing.T) {
	ready, notReady := true, false
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	name := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	got := serviceBackends([]*discoveryv1.EndpointSlice{{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: name("http"), Port: port(3000), Protocol: &tcp},
			{Name: name("dns"), Port: port(53), Protocol: &udp},
		},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.244.1.2"}},
			{Addresses: []string{"10.244.1.3"}, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
		},
	}})
	want := map[string][]string{
		"tcp/ns/web/http": {"10.244.1.2:3000", "10.244.1.9:3000"},
		"udp/ns/web/dns":  {"10.244.1.2:53", "10.244.1.9:53"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// A terminating endpoint gets no new connections while a ready one
	// exists; when none is ready, those still serving do (kube-proxy's
	// terminating-endpoint fallback), never one that stopped serving.
	terminating := func(serving bool) discoveryv1.EndpointConditions {
		return discoveryv1.EndpointConditions{Ready: &notReady, Serving: &serving, Terminating: &ready}
	}
	slice := func(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "t-" + fmt.Sprint(len(eps)), Labels: map[string]string{discoveryv1.LabelServiceName: "t"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: name("http"), Port: port(80), Protocol: &tcp}},
			Endpoints:   eps,
		}
	}
	for _, tc := range []struct {
		name string
		eps  []discoveryv1.Endpoint
		want []string
	}{
		{"ready beats terminating", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: terminating(true)},
			{Addresses: []string{"10.244.1.6"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
		}, []string{"10.244.1.6:80"}},
		{"only terminating: the serving ones", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: terminating(true)},
			{Addresses: []string{"10.244.1.7"}, Conditions: terminating(false)},
		}, []string{"10.244.1.5:80"}},
		{"none serving", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.7"}, Conditions: terminating(false)},
		}, nil},
	} {
		if got := serviceBackends([]*discoveryv1.EndpointSlice{slice(tc.eps...)})["tcp/ns/t/http"]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	lb := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5", "fd00::5"}}}
	if got := frontendAddresses(lb, "10.244.0.2"); !reflect.DeepEqual(got, []string{"10.96.0.5", "10.244.0.2"}) {
		t.Errorf("frontend addresses %v", got)
	}
	if got := frontendAddresses(&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, ""); len(got) != 0 {
		t.Errorf("headless frontend addresses %v", got)
	}
}
