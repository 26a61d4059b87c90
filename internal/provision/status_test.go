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

package provision

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/status"
)

func addr(t gwv1.AddressType, v string) gwv1.GatewayStatusAddress {
	return gwv1.GatewayStatusAddress{Type: &t, Value: v}
}

func TestServiceAddresses(t *testing.T) {
	lb := func(ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{
			Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"}},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	cases := []struct {
		name string
		svc  *corev1.Service
		want []gwv1.GatewayStatusAddress
	}{
		{"nil", nil, nil},
		{"load balancer pending falls back to the cluster IP", lb(), []gwv1.GatewayStatusAddress{addr(gwv1.IPAddressType, "10.0.0.7")}},
		{"load balancer IPs and hostnames", lb(
			corev1.LoadBalancerIngress{Hostname: "lb.example.com"},
			corev1.LoadBalancerIngress{IP: "203.0.113.9"},
			corev1.LoadBalancerIngress{IP: "203.0.113.2"},
			corev1.LoadBalancerIngress{IP: "203.0.113.2"},
		), []gwv1.GatewayStatusAddress{
			addr(gwv1.IPAddressType, "203.0.113.2"), addr(gwv1.IPAddressType, "203.0.113.9"), addr(gwv1.HostnameAddressType, "lb.example.com"),
		}},
		{"cluster IP, dual stack", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.8", ClusterIPs: []string{"10.0.0.8", "fd00::8"}}},
			[]gwv1.GatewayStatusAddress{addr(gwv1.IPAddressType, "10.0.0.8"), addr(gwv1.IPAddressType, "fd00::8")}},
		{"headless", &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ServiceAddresses(c.svc); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestDedicatedProxyReady(t *testing.T) {
	gw := testGateway()
	gw.Generation = 4
	name := names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName))
	dep := func(gen, observed int64, ready, updated int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated},
		}
	}
	const fallback = "; the shared pool keeps serving"
	cases := []struct {
		name    string
		d       *appsv1.Deployment
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"no deployment", nil, metav1.ConditionFalse, status.ReasonProvisioning,
			"Deployment " + name + " is not created yet" + fallback},
		{"rollout not observed", dep(3, 2, 2, 2), metav1.ConditionFalse, status.ReasonProvisioning,
			"Deployment " + name + ": generation 3 not observed by the Deployment controller yet" + fallback},
		{"no ready pod", dep(3, 3, 0, 1), metav1.ConditionFalse, status.ReasonProvisioning,
			"Deployment " + name + ": no proxy pod ready yet" + fallback},
		{"no updated pod", dep(3, 3, 1, 0), metav1.ConditionFalse, status.ReasonProvisioning,
			"Deployment " + name + ": no proxy pod of its current rollout yet" + fallback},
		{"ready", dep(3, 3, 1, 1), metav1.ConditionTrue, status.ReasonReady,
			"Deployment " + name + ": 1 proxy pod ready"},
		{"ready while rolling out: old pods serve the current routes", dep(5, 5, 2, 1), metav1.ConditionTrue, status.ReasonReady,
			"Deployment " + name + ": 2 proxy pods ready"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DedicatedProxyReady(gw, c.d)
			want := metav1.Condition{Type: status.TypeDedicatedProxyReady, Status: c.status, Reason: c.reason, Message: c.message, ObservedGeneration: 4}
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestStaleVIPServices(t *testing.T) {
	a, b := testGateway(), testGateway()
	b.Name = "gone"
	svcA := RenderVIPService(a, "coxswain-system", []portalloc.Assignment{{Key: portalloc.Key{Namespace: "apps", Name: "edge", Port: 80}, Internal: 30000}})
	svcB := RenderVIPService(b, "coxswain-system", nil)
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}
	got := StaleVIPServices([]*corev1.Service{svcA, svcB, other, nil}, []types.NamespacedName{{Namespace: "apps", Name: "edge"}})
	if len(got) != 1 || got[0] != svcB {
		t.Errorf("stale = %v, want only %s", got, svcB.Name)
	}
}
