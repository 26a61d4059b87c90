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
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// generate builds a cluster of nRoutes HTTPRoutes spread over nNS
// namespaces, attached to nGW shared Gateways (HTTP on 80 for every
// namespace and HTTPS on 443 for *.example.com), with one Service (three
// ready endpoints) per five routes.
func generate(nRoutes, nNS, nGW int) *Resources {
	return generateServices(nRoutes, nNS, nGW, nRoutes/5+1)
}

// generateServices is generate with nSvc Services.
func generateServices(nRoutes, nNS, nGW, nSvc int) *Resources {
	res := &Resources{}
	res.GatewayClasses = append(res.GatewayClasses, &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "coxswain", Generation: 1},
		Spec:       gwv1.GatewayClassSpec{ControllerName: names.ControllerName},
	})
	res.Secrets = append(res.Secrets, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "wildcard"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: testFile("tls.crt"), corev1.TLSPrivateKeyKey: testFile("tls.key")},
	})
	all := gwv1.NamespacesFromAll
	for g := 0; g < nGW; g++ {
		res.Gateways = append(res.Gateways, &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: fmt.Sprintf("gw-%d", g), Generation: 1},
			Spec: gwv1.GatewaySpec{
				GatewayClassName: "coxswain",
				Listeners: []gwv1.Listener{
					{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}},
					{Name: "https", Port: 443, Protocol: gwv1.HTTPSProtocolType, Hostname: ptr.To(gwv1.Hostname("*.example.com")),
						TLS:           &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "wildcard"}}},
						AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}},
				},
			},
		})
	}
	for n := 0; n < nNS; n++ {
		res.Namespaces = append(res.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", n)}})
	}
	for s := 0; s < nSvc; s++ {
		ns := fmt.Sprintf("ns-%d", s%nNS)
		name := fmt.Sprintf("svc-%d", s)
		res.Services = append(res.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		})
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
		}
		for e := 0; e < 3; e++ {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", s/65536%256, s/256%256, s%256+e)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			})
		}
		res.EndpointSlices = append(res.EndpointSlices, sl)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < nRoutes; i++ {
		res.HTTPRoutes = append(res.HTTPRoutes, genRoute(i, nNS, nSvc, nGW, base))
	}
	return res
}

func genRoute(i, nNS, nSvc, nGW int, base time.Time) *gwv1.HTTPRoute {
	ns := fmt.Sprintf("ns-%d", i%nNS)
	// Services live in ns-(s%nNS); pick one in the route's namespace.
	svc := i % nSvc
	svc -= svc % nNS
	svc += i % nNS
	if svc >= nSvc {
		svc = i % nNS
	}
	exact := gwv1.PathMatchExact
	prefix := gwv1.PathMatchPathPrefix
	get := gwv1.HTTPMethodGet
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("route-%d", i), Generation: 1,
			CreationTimestamp: metav1.NewTime(base.Add(time.Duration(i%97) * time.Minute))},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{
				{Name: gwv1.ObjectName(fmt.Sprintf("gw-%d", i%nGW)), Namespace: ptr.To(gwv1.Namespace("infra"))},
			}},
			Hostnames: []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("h%d.example.com", i%200))},
			Rules: []gwv1.HTTPRouteRule{
				{
					Matches: []gwv1.HTTPRouteMatch{{
						Path:    &gwv1.HTTPPathMatch{Type: &exact, Value: ptr.To(fmt.Sprintf("/r%d/exact", i))},
						Method:  &get,
						Headers: []gwv1.HTTPHeaderMatch{{Name: "x-tenant", Value: ns}},
					}},
					Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
						RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x-route", Value: fmt.Sprint(i)}}}}},
					BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
						Name: gwv1.ObjectName(fmt.Sprintf("svc-%d", svc)), Port: ptr.To(gwv1.PortNumber(80))}}}},
				},
				{
					Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr.To(fmt.Sprintf("/r%d", i))}}},
					BackendRefs: []gwv1.HTTPBackendRef{
						{BackendRef: gwv1.BackendRef{Weight: ptr.To(int32(90)), BackendObjectReference: gwv1.BackendObjectReference{
							Name: gwv1.ObjectName(fmt.Sprintf("svc-%d", svc)), Port: ptr.To(gwv1.PortNumber(80))}}},
						{BackendRef: gwv1.BackendRef{Weight: ptr.To(int32(10)), BackendObjectReference: gwv1.BackendObjectReference{
							Name: gwv1.ObjectName(fmt.Sprintf("svc-%d", (svc+nNS)%nSvc)), Port: ptr.To(gwv1.PortNumber(80))}}},
					},
				},
			},
		},
	}
}

func benchSizes() []int { return []int{1000, 5000, 10000} }

// BenchmarkTranslate is a full rebuild; retained-MiB is the heap the
// Result keeps alive.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			res := generate(n, 50, 1)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var r *Result
			for i := 0; i < b.N; i++ {
				r = Translate(res)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			runtime.KeepAlive(r)
			r = nil
			reportRetained(b, res)
		})
	}
}

// BenchmarkTranslateOneRouteChange alternates between two inputs that
// differ in one HTTPRoute (a new generation with a new path). The
// translator has no incremental mode: a change costs one full rebuild,
// which this measures next to BenchmarkTranslate.
//
// The last cases have 1,000 Gateways: ten routes each, or, as in
// TestPropagationLatency with GATEWAYS=1000 (make bench-scale's run),
// every route on one Gateway and 999 idle ones (idle=999).
func BenchmarkTranslateOneRouteChange(b *testing.B) {
	// own: every route has a hostname of its own, as those of
	// TestPropagationLatency (make bench-scale); services: one Service
	// per route (COXSWAIN_PROPAGATION_BACKENDS=1) rather than per five.
	type size struct {
		routes, gateways, idle int
		own, services          bool
	}
	var sizes []size
	for _, n := range benchSizes() {
		sizes = append(sizes, size{n, 1, 0, false, false})
	}
	sizes = append(sizes, size{10000, 1000, 0, false, false}, size{10000, 1, 999, false, false}, size{10000, 1, 0, true, false},
		size{10000, 1, 0, false, true})
	for _, sz := range sizes {
		n := sz.routes
		// memo changes one route; memo-add adds one (last in name order,
		// as the routes TestPropagationLatency creates) and removes it.
		for _, mode := range []string{"full", "memo", "memo-add"} {
			name := fmt.Sprintf("routes=%d/%s", n, mode)
			switch {
			case sz.services:
				name = fmt.Sprintf("routes=%d,services=%d/%s", n, n, mode)
			case sz.own:
				name = fmt.Sprintf("routes=%d,hosts=%d/%s", n, n, mode)
			case sz.idle > 0:
				name = fmt.Sprintf("routes=%d,idle=%d/%s", n, sz.idle, mode)
			case sz.gateways > 1:
				name = fmt.Sprintf("routes=%d,gateways=%d/%s", n, sz.gateways, mode)
			}
			b.Run(name, func(b *testing.B) {
				a := generate(n, 50, sz.gateways)
				if sz.services {
					a = generateServices(n, 50, sz.gateways, n)
				}
				addIdleGateways(a, sz.idle)
				if sz.own {
					for i, r := range a.HTTPRoutes {
						r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(fmt.Sprintf("r%d.example.com", i))}
					}
				}
				v := &versioner{}
				v.stampAll(a)
				c := *a
				c.HTTPRoutes = append(c.HTTPRoutes[:0:0], a.HTTPRoutes...)
				changed := a.HTTPRoutes[n/2].DeepCopy()
				changed.Generation++
				changed.Spec.Rules[1].Matches[0].Path.Value = ptr.To("/changed")
				v.stamp(changed)
				c.HTTPRoutes[n/2] = changed
				if mode == "memo-add" {
					added := a.HTTPRoutes[n/2].DeepCopy()
					added.Name, added.UID = "zz-added", "zz-added"
					added.Spec.Hostnames = []gwv1.Hostname{"zz-added.example.com"}
					v.stamp(added)
					c.HTTPRoutes = append(append(c.HTTPRoutes[:0:0], a.HTTPRoutes...), added)
				}
				inputs := []*Resources{a, &c}
				translate := Translate
				if mode != "full" {
					translate = NewStoreMemo().Translate // the provider's
					translate(a)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					_ = translate(inputs[(i+1)%2])
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			})
		}
	}
}

// BenchmarkRefreshEndpoints is the rebuild after one EndpointSlice
// change (its first endpoint's address, back and forth), by
// RefreshEndpoints from the last Result: routes=10000 has 2,001 Services,
// services=10000 one per route.
func BenchmarkRefreshEndpoints(b *testing.B) {
	for _, svcs := range []int{2001, 10000} {
		b.Run(fmt.Sprintf("routes=10000,services=%d", svcs), func(b *testing.B) {
			a := generateServices(10000, 50, 1, svcs)
			slices.SortFunc(a.EndpointSlices, func(x, y *discoveryv1.EndpointSlice) int {
				return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
			})
			c := *a
			c.EndpointSlices = slices.Clone(a.EndpointSlices)
			k := len(c.EndpointSlices) / 2
			changed := c.EndpointSlices[k].DeepCopy()
			changed.Endpoints[0].Addresses = []string{"10.250.0.1"}
			c.EndpointSlices[k] = changed
			inputs := []*Resources{a, &c}
			prev := NewMemo().Translate(a)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				next, ok := RefreshEndpoints(prev, inputs[(i+1)%2])
				if !ok {
					b.Fatal("refused")
				}
				prev = next
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// addIdleGateways adds n Gateways of one HTTP listener each (a hostname
// of its own, no routes), as TestPropagationLatency's idle ones.
func addIdleGateways(res *Resources, n int) {
	for g := 0; g < n; g++ {
		host := gwv1.Hostname(fmt.Sprintf("idle-%d.example.org", g))
		res.Gateways = append(res.Gateways, &gwv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: fmt.Sprintf("idle-%d", g), Generation: 1},
			Spec: gwv1.GatewaySpec{
				GatewayClassName: "coxswain",
				Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: &host}},
			},
		})
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds (all
// threads, GC included): unlike ns/op it does not grow when other
// processes compete for the CPUs.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportRetained(b *testing.B, res *Resources) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := Translate(res)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	runtime.KeepAlive(res)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "retained-MiB")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "alloc-MiB/op")
}

// generateScale is make bench-scale's cluster (TestPropagationLatency with
// BACKENDS=1): one Gateway of one HTTP listener, and n routes of a
// hostname each with two rules, a redirect and /backend to a headless
// Service of the route's own with one ready endpoint.
func generateScale(n int) *Resources {
	res := generateServices(0, 1, 1, 0)
	res.Gateways[0].Spec.Listeners = res.Gateways[0].Spec.Listeners[:1]
	prefix := gwv1.PathMatchPathPrefix
	for i := 0; i < n; i++ {
		name, host := fmt.Sprintf("pre-%d", i), fmt.Sprintf("pre-%d.example.com", i)
		res.Services = append(res.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		})
		res.EndpointSlices = append(res.EndpointSlices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns-0", Name: name + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 64+i/65536, i/256%256, i%256)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		})
		res.HTTPRoutes = append(res.HTTPRoutes, &gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns-0", Name: name, Generation: 1},
			Spec: gwv1.HTTPRouteSpec{
				CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw-0", Namespace: ptr.To(gwv1.Namespace("infra"))}}},
				Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
				Rules: []gwv1.HTTPRouteRule{
					{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
						Hostname: ptr.To(gwv1.PreciseHostname("moved-" + host)), StatusCode: ptr.To(301)}}}},
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr.To("/backend")}}},
						BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
							Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(80))}}}}},
				},
			},
		})
	}
	return res
}

// BenchmarkMemoRetained is what a Memo and its Result keep on the heap
// after translating a cluster (retained-MiB, measured after a GC once
// the loop ends: the controller's translator part of its live heap),
// and what each translation allocated. scale is make bench-scale's
// shape (generateScale); shared is generate's (50 routes a host).
func BenchmarkMemoRetained(b *testing.B) {
	for _, shape := range []string{"scale", "shared"} {
		b.Run(fmt.Sprintf("routes=10000,%s", shape), func(b *testing.B) {
			res := generateScale(10000)
			if shape == "shared" {
				res = generate(10000, 50, 1)
			}
			(&versioner{}).stampAll(res)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var m *Memo
			var r *Result
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m = NewStoreMemo()
				r = m.Translate(res)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(m)
			runtime.KeepAlive(r)
			runtime.KeepAlive(res)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "retained-MiB")
		})
	}
}
