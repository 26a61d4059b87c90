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

package e2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestPropagationLatency measures route change → proxy serving it, through
// the real apiserver, controller and proxy: N sequential HTTPRoute
// creations, each polled (every millisecond, at most 10 s) until the proxy
// answers with that route's redirect. It prints p50/p90/p99/max and asserts
// nothing about time (these machines are noisy): it runs only when
// COXSWAIN_PROPAGATION_ROUTES is set, from `make bench-propagation`.
func TestPropagationLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("COXSWAIN_PROPAGATION_ROUTES"))
	if n <= 0 {
		t.Skip("set COXSWAIN_PROPAGATION_ROUTES (make bench-propagation) to measure propagation latency")
	}
	// COXSWAIN_PROPAGATION_GAP spaces the creations (e.g. 25ms): changes
	// closer together than the provider's 20 ms rebuild gap are coalesced on
	// purpose, so a gap measures the latency of an isolated change.
	gap, _ := time.ParseDuration(os.Getenv("COXSWAIN_PROPAGATION_GAP"))
	p := startPipeline(t, nil)
	// COXSWAIN_PROPAGATION_PRELOAD routes exist before the measured ones:
	// the latency of one change with that many routes present.
	preload, _ := strconv.Atoi(os.Getenv("COXSWAIN_PROPAGATION_PRELOAD"))
	if preload > 0 {
		began := time.Now()
		p.preload(t, preload)
		t.Logf("%d routes preloaded and served in %s; controller RSS %s", preload, time.Since(began).Round(time.Millisecond), p.controllerRSS())
		// Measure the steady state: one change among N routes, not the
		// status writes of N routes just created.
		p.settle(t, preload)
	}
	// COXSWAIN_PROPAGATION_PROFILE=DIR writes CPU profiles of the
	// controller and the proxy over the measured changes.
	if dir := os.Getenv("COXSWAIN_PROPAGATION_PROFILE"); dir != "" {
		secs := max(1, int((time.Duration(n) * (gap + 100*time.Millisecond)).Seconds()))
		done := p.profile(t, dir, secs)
		defer done()
	}
	before := scrape(p.controllerMetrics)
	lat := make([]time.Duration, 0, n)
	creates := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("r%d.example.com", i)
		want := "http://moved-" + host + "/"
		begin := time.Now()
		if err := p.c.Create(p.ctx, redirectRoute(fmt.Sprintf("r%d", i), host)); err != nil {
			t.Fatal(err)
		}
		creates = append(creates, time.Since(begin))
		deadline := begin.Add(10 * time.Second)
		for {
			code, loc, err := p.get(host, "/")
			if err == nil && code == http.StatusMovedPermanently && loc == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("route %d not served within 10s (last: %d %q %v)", i, code, loc, err)
			}
			time.Sleep(time.Millisecond)
		}
		lat = append(lat, time.Since(begin))
		time.Sleep(gap)
	}
	after := scrape(p.controllerMetrics)
	// The part after the Create call returned: the watch, the controller,
	// discovery and the proxy, without the apiserver's commit.
	past := make([]time.Duration, len(lat))
	for i := range lat {
		past[i] = lat[i] - creates[i]
	}
	slices.Sort(lat)
	slices.Sort(creates)
	slices.Sort(past)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(f*float64(len(lat))))] }
	t.Logf("propagation over %d sequential HTTPRoute creations: p50 %v  p90 %v  p99 %v  max %v",
		n, q(0.50).Round(100*time.Microsecond), q(0.90).Round(100*time.Microsecond),
		q(0.99).Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	fmt.Printf("propagation gap=%v preload=%d routes=%d p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f\n", gap, preload, n,
		ms(q(0.50)), ms(q(0.90)), ms(q(0.99)), ms(lat[len(lat)-1]))
	// The apiserver's own share: the Create call returns once etcd has
	// committed the object.
	fmt.Printf("propagation create_call p50_ms=%.1f p99_ms=%.1f\n",
		ms(creates[len(creates)/2]), ms(creates[min(len(creates)-1, len(creates)*99/100)]))
	fmt.Printf("propagation after_create p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f\n",
		ms(past[len(past)/2]), ms(past[min(len(past)-1, len(past)*9/10)]), ms(past[min(len(past)-1, len(past)*99/100)]))
	// The controller's share: its rebuilds over the measured changes
	// (each waits for the one before it to end).
	delta := func(metric string) float64 { return metricDelta(before, after, metric) }
	// The status writer's patches over the measured changes, by kind and
	// result (a failed one is retried in a later round).
	for _, kind := range []string{"Gateway", "HTTPRoute"} {
		ok := metricDelta(before, after, "coxswain_controller_status_patches_total", `kind="`+kind+`"`, `result="ok"`)
		failed := metricDelta(before, after, "coxswain_controller_status_patches_total", `kind="`+kind+`"`, `result="error"`)
		fmt.Printf("propagation status_patches kind=%s ok=%.0f failed=%.0f\n", kind, ok, failed)
	}
	// The controller's CPU over the measured changes (rebuilds, publishes,
	// status rounds, GC), per change.
	if cpu := delta("process_cpu_seconds_total"); cpu > 0 {
		fmt.Printf("propagation controller_cpu_ms_per_change=%.1f\n", 1000*cpu/float64(n))
	}
	if rebuilds := delta("coxswain_controller_rebuild_duration_seconds_count"); rebuilds > 0 {
		fmt.Printf("propagation rebuilds_per_change=%.2f rebuild_mean_ms=%.1f\n", rebuilds/float64(n),
			1000*delta("coxswain_controller_rebuild_duration_seconds_sum")/rebuilds)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// preload creates n routes (pre-0 ... pre-<n-1>, 8 at a time) and waits
// until the proxy serves the last one.
func (p *pipeline) preload(t *testing.T, n int) {
	t.Helper()
	sem := make(chan struct{}, 8)
	// COXSWAIN_PROPAGATION_GATEWAYS (default 1) Gateways are present: web
	// and idle ones, one HTTP listener each (shared: an internal port and
	// a VIP Service each). COXSWAIN_PROPAGATION_SPREAD=1 spreads the
	// preloaded routes over all of them (route i on the (i mod
	// GATEWAYS)th, web first), as tenants' Gateways each with their
	// routes; the measured routes are web's.
	extra := envInt("COXSWAIN_PROPAGATION_GATEWAYS", 1) - 1
	spread := os.Getenv("COXSWAIN_PROPAGATION_SPREAD") != "" && extra > 0
	gwErrs := make(chan error, max(extra, 0))
	for i := 0; i < extra; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			host := ptr.To(gwv1.Hostname(fmt.Sprintf("gw-%d.example.org", i)))
			if spread {
				host = nil // any hostname: the routes' own
			}
			gwErrs <- p.c.Create(p.ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("gw-%d", i)},
				Spec: gwv1.GatewaySpec{GatewayClassName: "coxswain",
					Listeners: []gwv1.Listener{{Name: "http", Protocol: gwv1.HTTPProtocolType, Port: 80, Hostname: host}}}})
		}(i)
	}
	for i := 0; i < extra; i++ {
		if err := <-gwErrs; err != nil {
			t.Fatal(err)
		}
	}
	// COXSWAIN_PROPAGATION_BACKENDS=1 gives each preloaded route a Service
	// of its own, with an EndpointSlice of one ready endpoint: 10,000
	// routes are then 10,000 endpoint sets, which every endpoint refresh
	// has among its inputs (TestEndpointChurn). make bench-scale sets it
	// unless BACKENDS=0; "" and "0" leave it off. BACKENDS=pods writes
	// them as a chart and the endpointslice controller would, each slice
	// with three Pods' endpoints (preloadBackend).
	backends := os.Getenv("COXSWAIN_PROPAGATION_BACKENDS") != "" && os.Getenv("COXSWAIN_PROPAGATION_BACKENDS") != "0"
	pods := os.Getenv("COXSWAIN_PROPAGATION_BACKENDS") == "pods"
	errs := make(chan error, n)
	// onWeb is whether route i is on web, the Gateway the probes reach.
	onWeb := func(i int) bool { return !spread || i%(extra+1) == 0 }
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			r := redirectRoute(fmt.Sprintf("pre-%d", i), fmt.Sprintf("pre-%d.example.com", i))
			if !onWeb(i) {
				r.Spec.ParentRefs[0].Name = gwv1.ObjectName(fmt.Sprintf("gw-%d", i%(extra+1)-1))
			}
			if backends {
				if err := p.preloadBackend(r, i, pods); err != nil {
					errs <- err
					return
				}
			}
			errs <- p.c.Create(p.ctx, r)
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	lastOnWeb := n - 1
	for !onWeb(lastOnWeb) {
		lastOnWeb--
	}
	last := fmt.Sprintf("pre-%d.example.com", lastOnWeb)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		code, _, err := p.get(last, "/")
		if err == nil && code == http.StatusMovedPermanently {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the preloaded routes are not served after 5 minutes (%d %v)", code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// preloadBackend creates Service pre-i (headless: envtest's Service range
// is small) with an EndpointSlice of one ready endpoint, and adds a rule
// to r, the preloaded route i, sending /backend to it. The endpoint is
// never requested: GET / still answers r's redirect. With pods, the
// Service and its slice are written as a Helm chart and the endpointslice
// controller write them: labels, annotations and a selector on the
// Service; the Service's labels, an owner reference, a trigger-time
// annotation and three endpoints naming their Pod, node and zone on the
// slice.
func (p *pipeline) preloadBackend(r *gwv1.HTTPRoute, i int, pods bool) error {
	name := fmt.Sprintf("pre-%d", i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	chart := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name,
		"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "app-1.4.2"}
	if pods {
		svc.Labels = chart
		svc.Annotations = map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": "default"}
		svc.Spec.Selector = map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": name}
	}
	if err := p.c.Create(p.ctx, svc); err != nil {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-x",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "coxswain-e2e"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 64+i/65536, i/256%256, i%256)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if pods {
		slice.Name, slice.GenerateName = name+"-8kq2x", name+"-"
		slice.Labels = maps.Clone(chart)
		slice.Labels[discoveryv1.LabelServiceName] = name
		slice.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
		slice.Annotations = map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": time.Now().UTC().Format(time.RFC3339)}
		slice.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: name, UID: svc.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		slice.Endpoints = nil
		for k := range 3 {
			slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 64+k*8+i/65536, i/256%256, i%256)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(fmt.Sprintf("node-%d", (i+k)%50)),
				Zone:       ptr.To(fmt.Sprintf("zone-%d", k)),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default",
					Name: fmt.Sprintf("%s-7d9f8b6c5-%05d", name, k), UID: types.UID(fmt.Sprintf("6f1c2a1e-0000-4000-8000-%06d%06d", i, k))},
			})
		}
	}
	if err := p.c.Create(p.ctx, slice); err != nil {
		return err
	}
	r.Spec.Rules = append(r.Spec.Rules, gwv1.HTTPRouteRule{
		Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/backend")}}},
		BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
			Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(80))}}}},
	})
	return nil
}

// profile fetches both heap profiles into dir, then secs-long CPU
// profiles of the controller and the proxy, in the background; the
// returned func waits for them, then fetches both heap profiles again
// (after a GC), both runtimes' MemStats and their goroutines.
func (p *pipeline) profile(t *testing.T, dir string, secs int) func() {
	t.Helper()
	var wg sync.WaitGroup
	servers := map[string]string{"controller": p.controllerPprof, "proxy": p.proxyHealth}
	// The heap profiles at the start too: pprof -base of the two is what
	// the measured changes allocated.
	for name, addr := range servers {
		fetchProfile(t, "http://"+addr+"/debug/pprof/heap", filepath.Join(dir, name+".heap-start.pprof"), 30*time.Second)
	}
	for name, addr := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fetchProfile(t, "http://"+addr+"/debug/pprof/profile?seconds="+strconv.Itoa(secs),
				filepath.Join(dir, name+".pprof"), time.Duration(secs+30)*time.Second)
		}()
	}
	return func() {
		wg.Wait()
		for name, addr := range servers {
			fetchProfile(t, "http://"+addr+"/debug/pprof/heap?gc=1", filepath.Join(dir, name+".heap.pprof"), 30*time.Second)
			// The text form ends with the runtime's MemStats: the heap
			// in use against what the process holds (RSS).
			fetchProfile(t, "http://"+addr+"/debug/pprof/heap?debug=1", filepath.Join(dir, name+".memstats.txt"), 30*time.Second)
			fetchProfile(t, "http://"+addr+"/debug/pprof/goroutine?debug=1", filepath.Join(dir, name+".goroutines.txt"), 30*time.Second)
		}
		// Where each process's resident pages are: its mappings
		// (smaps) and which pages of its binary are in memory.
		for name, pr := range map[string]*process{"controller": p.controller, "proxy": p.proxy} {
			if err := writeResidency(pr, filepath.Join(dir, name)); err != nil {
				t.Logf("residency of %s: %v", name, err)
			}
		}
	}
}

// fetchProfile writes the profile url serves to path, logging any failure.
func fetchProfile(t *testing.T, url, path string, timeout time.Duration) {
	hc := &http.Client{Timeout: timeout}
	resp, err := hc.Get(url)
	if err != nil {
		t.Logf("profile %s: %v", url, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Logf("profile %s: %v", url, err)
		return
	}
	t.Logf("profile %s: %s", url, path)
}
