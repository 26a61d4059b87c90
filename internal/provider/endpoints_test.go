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

package provider

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestEndpointSliceChangesRefreshEndpointsAlone: on a real apiserver, a
// change to an EndpointSlice alone rebuilds by refreshing endpoints (the
// Result has the new endpoint), and any other change translates in full.
func TestEndpointSliceChangesRefreshEndpointsAlone(t *testing.T) {
	run := runProvider(t, nil, nil)
	ctx, c := run.ctx, run.client
	run.next(t)
	port := gwv1.PortNumber(80)
	objs := []client.Object{
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: gwv1.GatewaySpec{
			GatewayClassName: "coxswain", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api"}, Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}},
		}},
		&gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api"}, Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "api", Port: &port}}}}}},
		}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "api-1", Labels: map[string]string{discoveryv1.LabelServiceName: "api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
	}
	if err := c.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, run, "10.0.0.1")
	full := rebuilds(t, run, "ok")
	refreshed := rebuilds(t, run, "endpoints")

	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
	if err := c.Update(ctx, slice); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, run, "10.0.0.1", "10.0.0.2")
	if got := rebuilds(t, run, "endpoints"); got <= refreshed {
		t.Fatal("an EndpointSlice change was not rebuilt by refreshing endpoints")
	}
	if got := rebuilds(t, run, "ok"); got != full {
		t.Fatalf("an EndpointSlice change translated in full (%v full rebuilds, had %v)", got, full)
	}

	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "api"}, svc); err != nil {
		t.Fatal(err)
	}
	svc.Labels = map[string]string{"changed": "yes"}
	if err := c.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	for rebuilds(t, run, "ok") == full {
		run.next(t)
	}
}

// waitEndpoints waits for a Result whose shared-pool snapshot lists
// exactly addrs for default/api:80.
func waitEndpoints(t *testing.T, run *providerRun, addrs ...string) {
	t.Helper()
	for i := 0; i < 50; i++ {
		if hasEndpoints(run.next(t), addrs) {
			return
		}
	}
	t.Fatalf("no Result lists endpoints %v", addrs)
}

func hasEndpoints(r *translator.Result, addrs []string) bool {
	for _, s := range r.Snapshots {
		if s.Scope != snapshot.SharedPool() {
			continue
		}
		for _, es := range s.EndpointSets {
			if es.Name != "default/api:80" || len(es.Endpoints) != len(addrs) {
				continue
			}
			for i, e := range es.Endpoints {
				if e.Address != addrs[i] {
					return false
				}
			}
			return true
		}
	}
	return false
}

// rebuilds is the provider's rebuild count of one result.
func rebuilds(t *testing.T, run *providerRun, result string) float64 {
	t.Helper()
	return counterValue(t, run.p.m.rebuilds, result)
}

// counterValue is the value of one label's counter of vec.
func counterValue(t *testing.T, vec *prometheus.CounterVec, label string) float64 {
	t.Helper()
	m := &dto.Metric{}
	if err := vec.WithLabelValues(label).Write(m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
