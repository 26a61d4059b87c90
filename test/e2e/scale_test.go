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
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/memrelease"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The scale benchmarks of `make bench-scale` besides TestPropagationLatency:
// a full resync after a controller restart, and EndpointSlice churn under
// load. Both run the real controller and proxy binaries on envtest with
// COXSWAIN_PROPAGATION_PRELOAD routes present, print one machine-readable
// line and assert nothing about time.

const controllerName = "coxswain-labs.dev/gateway-controller"

// envInt is the integer in the environment variable name, def when it is
// unset or not a positive integer.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rssKB is a process's VmRSS in kB (-1 when unknown).
func rssKB(pr *process) int { return statusKB(pr, "VmRSS") }

// statusKB is a field of a process's /proc status in kB (-1 when unknown).
func statusKB(pr *process, field string) int {
	v, _, _ := strings.Cut(procStatus(pr, field), " ")
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// metricDelta is how much the sum of metric name's samples (metricSum)
// grew from the exposition before to after.
func metricDelta(before, after, name string, labels ...string) float64 {
	a, _ := metricSum(after, name, labels...)
	b, _ := metricSum(before, name, labels...)
	return a - b
}

// quantileMS is the f quantile of sorted in milliseconds (-1 when it is
// empty).
func quantileMS(sorted []time.Duration, f float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	return ms(sorted[min(len(sorted)-1, int(f*float64(len(sorted))))])
}

// metricSum is the sum of the samples of the metric name whose labels
// include every one of labels (`k="v"`) in a Prometheus text exposition;
// ok is false when there is none.
func metricSum(body, name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for _, l := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			continue
		}
		match := true
		for _, lb := range labels {
			if !strings.Contains(rest[:i], lb) {
				match = false
			}
		}
		if match {
			sum += v
			found = true
		}
	}
	return sum, found
}

// scrape is the /metrics page at addr ("" on any error).
func scrape(addr string) string {
	code, body, err := httpGet("http://" + addr + "/metrics")
	if err != nil || code != http.StatusOK {
		return ""
	}
	return body
}

// routeAccepted reports whether the HTTPRoute default/name has an
// Accepted=True parent status for default/web written by coxswain.
func (p *pipeline) routeAccepted(name string) bool {
	r := &gwv1.HTTPRoute{}
	if err := p.c.Get(p.ctx, client.ObjectKey{Namespace: "default", Name: name}, r); err != nil {
		return false
	}
	return acceptedByUs(r)
}

// acceptedByUs reports whether our controller Accepted r, at its
// generation, on its first parent (web, or its own Gateway when the routes
// are spread).
func acceptedByUs(r *gwv1.HTTPRoute) bool {
	for _, ps := range r.Status.Parents {
		if ps.ControllerName == controllerName && len(r.Spec.ParentRefs) > 0 && ps.ParentRef.Name == r.Spec.ParentRefs[0].Name {
			c := meta.FindStatusCondition(ps.Conditions, string(gwv1.RouteConditionAccepted))
			return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == r.Generation
		}
	}
	return false
}

// milestone polls cond every `every` from start until it holds or the bound
// passes, in the background; the channel gets the time since start, or -1.
func milestone(start time.Time, every, bound time.Duration, cond func() bool) <-chan time.Duration {
	ch := make(chan time.Duration, 1)
	go func() {
		for {
			if cond() {
				ch <- time.Since(start)
				return
			}
			if time.Since(start) > bound {
				ch <- -1
				return
			}
			time.Sleep(every)
		}
	}()
	return ch
}

// settle waits until every Gateway of default is Programmed and all n
// routes of default are Accepted, so that what is measured next does not share the
// CPUs with the status writes of a bulk creation; it logs how long the
// statuses took after the routes were served.
func (p *pipeline) settle(t *testing.T, n int) {
	t.Helper()
	began := time.Now()
	testkit.EventuallyExplained(t, 10*time.Minute, func() string {
		gws := &gwv1.GatewayList{}
		if err := p.c.List(p.ctx, gws, client.InNamespace("default")); err != nil {
			return err.Error()
		}
		for i := range gws.Items {
			if pc := meta.FindStatusCondition(gws.Items[i].Status.Conditions, string(gwv1.GatewayConditionProgrammed)); pc == nil || pc.Status != metav1.ConditionTrue {
				time.Sleep(time.Second)
				return fmt.Sprintf("Gateway %s not Programmed", gws.Items[i].Name)
			}
		}
		list := &gwv1.HTTPRouteList{}
		if err := p.c.List(p.ctx, list, client.InNamespace("default")); err != nil {
			return err.Error()
		}
		accepted := 0
		for i := range list.Items {
			if acceptedByUs(&list.Items[i]) {
				accepted++
			}
		}
		if accepted < n {
			time.Sleep(time.Second)
			return fmt.Sprintf("%d of %d routes Accepted", accepted, n)
		}
		return ""
	})
	t.Logf("all %d routes Accepted %s after they were served; controller RSS %s", n, time.Since(began).Round(time.Millisecond), p.controllerRSS())
	// Idle: both processes return the memory their bursts left free once
	// quiet for memrelease.DefaultQuiet.
	time.Sleep(memrelease.DefaultQuiet + 2*time.Second)
	fmt.Printf("idle_rss routes=%d controller_rss_kb=%d proxy_rss_kb=%d controller_anon_kb=%d controller_file_kb=%d proxy_anon_kb=%d proxy_file_kb=%d\n",
		n, rssKB(p.controller), rssKB(p.proxy), statusKB(p.controller, "RssAnon"), statusKB(p.controller, "RssFile"), statusKB(p.proxy, "RssAnon"), statusKB(p.proxy, "RssFile"))
}

// TestResyncAfterRestart measures the full resync of a controller that
// restarts with COXSWAIN_PROPAGATION_PRELOAD routes present: the
// controller is stopped (SIGTERM), one route is created and one changed
// while it is down, and from the new process's start it reports when the
// new controller leads, finishes its first rebuild, has the proxy's ack,
// reports the Gateway Programmed, and when the proxy serves the created
// and the changed route and the created route shows Accepted=True.
// It runs only when COXSWAIN_RESYNC is set (make bench-scale).
func TestResyncAfterRestart(t *testing.T) {
	if os.Getenv("COXSWAIN_RESYNC") == "" {
		t.Skip("set COXSWAIN_RESYNC=1 (make bench-scale) to measure the resync after a controller restart")
	}
	preload := envInt("COXSWAIN_PROPAGATION_PRELOAD", 0)
	p := startPipeline(t, nil)
	if preload > 0 {
		began := time.Now()
		p.preload(t, preload)
		t.Logf("%d routes preloaded and served in %s; controller RSS %s", preload, time.Since(began).Round(time.Millisecond), p.controllerRSS())
	}
	// The first controller finishes its status writes first: the new one
	// must not inherit a backlog the measurement would count.
	p.settle(t, preload)

	const newRoute, newHost = "resync-new", "resync-new.example.com"
	startAgain := p.restartController(t)
	stopped := time.Now()
	if err := p.c.Create(p.ctx, redirectRoute(newRoute, newHost)); err != nil {
		t.Fatal(err)
	}
	changedHost, changedWant := "", ""
	if preload > 0 {
		changedHost, changedWant = "pre-0.example.com", "http://resynced-pre-0.example.com/"
		r := &gwv1.HTTPRoute{}
		if err := p.c.Get(p.ctx, client.ObjectKey{Namespace: "default", Name: "pre-0"}, r); err != nil {
			t.Fatal(err)
		}
		r.Spec.Rules[0].Filters[0].RequestRedirect.Hostname = ptr.To(gwv1.PreciseHostname("resynced-pre-0.example.com"))
		if err := p.c.Update(p.ctx, r); err != nil {
			t.Fatal(err)
		}
		// The proxy keeps serving its last snapshot while no controller
		// runs.
		if code, loc, err := p.get(changedHost, "/"); err != nil || code != http.StatusMovedPermanently || loc != "http://moved-pre-0.example.com/" {
			t.Errorf("with the controller down the proxy answers %d %q %v, want its last snapshot's 301", code, loc, err)
		}
	}
	down := time.Since(stopped)

	t0 := time.Now()
	ctrl := startAgain()
	const bound = 3 * time.Minute
	// One scrape of the controller's metrics every 20 ms serves four
	// milestones (scraping more often would take CPU from the controller).
	type gauge struct {
		name, metric string
		labels       []string
		at           time.Duration
	}
	gauges := []*gauge{
		{name: "leader", metric: "leader_election_master_status", labels: []string{`name="coxswain-leader-lock"`}},
		{name: "rebuilt", metric: "coxswain_controller_rebuild_duration_seconds_count"},
		{name: "acked", metric: "coxswain_discovery_acks_total"},
		{name: "programmed", metric: "coxswain_gateway_programmed", labels: []string{`name="web"`, `namespace="default"`}},
	}
	var firstRebuild float64
	metricsDone := make(chan struct{})
	go func() {
		defer close(metricsDone)
		for left := len(gauges); left > 0 && time.Since(t0) < bound; time.Sleep(20 * time.Millisecond) {
			body := scrape(p.controllerMetrics)
			now := time.Since(t0)
			for _, g := range gauges {
				if g.at > 0 {
					continue
				}
				if v, ok := metricSum(body, g.metric, g.labels...); ok && v >= 1 {
					g.at, left = now, left-1
					if g.name == "rebuilt" {
						sum, _ := metricSum(body, "coxswain_controller_rebuild_duration_seconds_sum")
						firstRebuild = sum / v
					}
				}
			}
		}
	}()
	serves := func(host, want string) func() bool {
		return func() bool {
			code, loc, err := p.get(host, "/")
			return err == nil && code == http.StatusMovedPermanently && loc == want
		}
	}
	connected := milestone(t0, 20*time.Millisecond, bound, func() bool {
		v, ok := metricSum(scrape(p.proxyMetrics), "coxswain_proxy_discovery_connected")
		return ok && v == 1
	})
	served := milestone(t0, 5*time.Millisecond, bound, serves(newHost, "http://moved-"+newHost+"/"))
	changed := milestone(t0, 5*time.Millisecond, bound, func() bool { return changedHost == "" })
	if changedHost != "" {
		changed = milestone(t0, 5*time.Millisecond, bound, serves(changedHost, changedWant))
	}
	accepted := milestone(t0, 20*time.Millisecond, bound, func() bool { return p.routeAccepted(newRoute) })
	res := map[string]time.Duration{}
	for _, m := range []struct {
		name string
		ch   <-chan time.Duration
	}{{"proxy_connected", connected}, {"serve", served}, {"changed", changed}, {"accepted", accepted}} {
		res[m.name] = <-m.ch
		if res[m.name] < 0 && (m.name != "changed" || changedHost != "") {
			t.Errorf("%s not observed within %v of the restart", m.name, bound)
		}
	}
	if changedHost == "" {
		res["changed"] = -1
	}
	<-metricsDone
	for _, g := range gauges {
		res[g.name] = g.at
		if g.at == 0 {
			res[g.name] = -1
			t.Errorf("%s (%s) not observed within %v of the restart", g.name, g.metric, bound)
		}
	}
	// What the new status writer wrote for the routes it found (after a
	// settle: patches of routes that need none should not come).
	time.Sleep(3 * time.Second)
	body := scrape(p.controllerMetrics)
	patches, _ := metricSum(body, "coxswain_controller_status_patches_total")
	rebuilds, _ := metricSum(body, "coxswain_controller_rebuild_duration_seconds_count")
	t.Logf("controller down %s; after its restart: leader %s, first rebuild done %s (it took %.3fs), proxy reconnected %s, acked %s, Gateway Programmed %s; new route served %s, changed route served %s, new route Accepted %s; %v status patches, %v rebuilds; RSS %s",
		down.Round(time.Millisecond), res["leader"], res["rebuilt"], firstRebuild, res["proxy_connected"], res["acked"], res["programmed"],
		res["serve"], res["changed"], res["accepted"], patches, rebuilds, p.controllerRSS())
	if os.Getenv("COXSWAIN_SCALE_LOGS") != "" {
		t.Logf("the restarted controller's output:\n%s", ctrl.output.String())
	}
	fmt.Printf("resync preload=%d down_ms=%.0f leader_ms=%.0f rebuilt_ms=%.0f first_rebuild_ms=%.0f proxy_connected_ms=%.0f acked_ms=%.0f programmed_ms=%.0f serve_ms=%.0f changed_ms=%.0f accepted_ms=%.0f status_patches=%.0f rebuilds=%.0f controller_rss_kb=%d proxy_rss_kb=%d\n",
		preload, ms(down), ms(res["leader"]), ms(res["rebuilt"]), firstRebuild*1000, ms(res["proxy_connected"]), ms(res["acked"]), ms(res["programmed"]),
		ms(res["serve"]), ms(res["changed"]), ms(res["accepted"]), patches, rebuilds, rssKB(ctrl), rssKB(p.proxy))
	// Idle after the restart: the state a controller that restarted
	// among these routes stays in, its memory freed of the resync's
	// bursts (memrelease), as settle measures it after the creations.
	time.Sleep(memrelease.DefaultQuiet + 2*time.Second)
	t.Logf("idle after the restart: controller RSS %s, proxy RSS %s", rssDetail(ctrl), rssDetail(p.proxy))
	fmt.Printf("resync_idle_rss routes=%d controller_rss_kb=%d proxy_rss_kb=%d controller_anon_kb=%d controller_file_kb=%d\n",
		preload, rssKB(ctrl), rssKB(p.proxy), statusKB(ctrl, "RssAnon"), statusKB(ctrl, "RssFile"))
}

// hostIPv4 is an address of this machine the apiserver accepts in an
// EndpointSlice (it refuses loopback and link-local ones) and the proxy
// reaches locally: COXSWAIN_CHURN_BACKEND_IP, else the first global
// unicast IPv4 address of an interface.
func hostIPv4() string {
	if ip := os.Getenv("COXSWAIN_CHURN_BACKEND_IP"); ip != "" {
		return ip
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && ip.IsGlobalUnicast() {
				return ip.String()
			}
		}
	}
	return ""
}

// churnStats are the propagation samples of the churn benchmark.
type churnStats struct {
	mu sync.Mutex
	// added: from the EndpointSlice update that lists a backend to its
	// first request; removed: from the update that unlists one to the last
	// request it still got.
	added, removed []time.Duration
	// unseen: additions whose backend got no request before it was
	// unlisted again; stale: additions whose backend still got requests
	// (its removal had not reached the proxy), not measured.
	unseen, stale int
}

// churnBackend is one HTTP backend and its one-endpoint EndpointSlice.
type churnBackend struct {
	name  string
	stats *churnStats
	srv   *http.Server
	// wmu orders the writes of the slice.
	wmu   sync.Mutex
	slice *discoveryv1.EndpointSlice

	mu                          sync.Mutex
	hits                        int64
	lastHit, addedAt, removedAt time.Time
	armed                       bool
}

func (b *churnBackend) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	b.mu.Lock()
	b.hits++
	b.lastHit = now
	if b.armed {
		b.armed = false
		b.stats.mu.Lock()
		b.stats.added = append(b.stats.added, now.Sub(b.addedAt))
		b.stats.mu.Unlock()
	}
	b.mu.Unlock()
	_, _ = io.WriteString(w, b.name)
}

func (b *churnBackend) hitCount() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits
}

// list marks the backend's endpoint ready (or not) in its EndpointSlice,
// recording what it takes to measure the change.
func (p *pipeline) setListed(b *churnBackend, ready bool) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	now := time.Now()
	b.mu.Lock()
	if ready {
		if !b.removedAt.IsZero() {
			b.stats.mu.Lock()
			b.stats.removed = append(b.stats.removed, max(0, b.lastHit.Sub(b.removedAt)))
			b.stats.mu.Unlock()
		}
		// Requests within the last 50 ms: the proxy still has the
		// endpoint, so its arrival cannot be measured.
		stale := !b.lastHit.IsZero() && now.Sub(b.lastHit) < 50*time.Millisecond
		b.addedAt, b.armed, b.removedAt = now, !stale, time.Time{}
		if stale {
			b.stats.mu.Lock()
			b.stats.stale++
			b.stats.mu.Unlock()
		}
	} else {
		if b.armed {
			b.armed = false
			b.stats.mu.Lock()
			b.stats.unseen++
			b.stats.mu.Unlock()
		}
		b.removedAt = now
	}
	b.mu.Unlock()
	b.slice.Endpoints[0].Conditions.Ready = ptr.To(ready)
	return p.c.Update(p.ctx, b.slice)
}

// TestEndpointChurn sustains COXSWAIN_CHURN_RATE EndpointSlice updates a
// second (100) for COXSWAIN_CHURN_SECONDS (60) on the Service of one route,
// with COXSWAIN_PROPAGATION_PRELOAD other routes present, under a load
// that never retries, and reports the failed requests and how long an
// added endpoint takes to get its first request (p50/p90/p99).
//
// The backends are real HTTP servers on this machine. The apiserver
// refuses loopback addresses in EndpointSlices, so they listen on an
// interface address (hostIPv4), each on its own port; an EndpointSlice
// gives one port to all its endpoints, so each backend has its own slice.
// One backend stays listed; of 2×COXSWAIN_CHURN_LISTED (100) others, a
// sliding window of COXSWAIN_CHURN_LISTED is listed: every even update
// lists the next one, every odd one unlists the oldest, so each is listed
// and then unlisted for 2×LISTED updates (2 s at the defaults: longer than
// the controller's 500 ms bound on debouncing a burst, so an addition is
// seen before it is undone).
// A probe (churnProbe) measures the propagation itself meanwhile: one
// endpoint of a route of its own listed and unlisted every
// COXSWAIN_CHURN_PROBE_MS (100), each change polled until the proxy
// shows it.
// It runs only when COXSWAIN_CHURN is set (make bench-scale).
func TestEndpointChurn(t *testing.T) {
	if os.Getenv("COXSWAIN_CHURN") == "" {
		t.Skip("set COXSWAIN_CHURN=1 (make bench-scale) to measure EndpointSlice churn under load")
	}
	ip := hostIPv4()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address for the backends (set COXSWAIN_CHURN_BACKEND_IP)")
	}
	preload := envInt("COXSWAIN_PROPAGATION_PRELOAD", 0)
	rate := envInt("COXSWAIN_CHURN_RATE", 100)
	seconds := envInt("COXSWAIN_CHURN_SECONDS", 60)
	window := envInt("COXSWAIN_CHURN_LISTED", 100)
	stats := &churnStats{}
	backends := make([]*churnBackend, 1+2*window)
	for i := range backends {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		b := &churnBackend{name: fmt.Sprintf("backend-%d", i), stats: stats}
		b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = b.srv.Serve(ln) }()
		t.Cleanup(func() { _ = b.srv.Close() })
		port := int32(ln.Addr().(*net.TCPAddr).Port)
		b.slice = &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("churn-%d", i),
				Labels: map[string]string{discoveryv1.LabelServiceName: "churn", discoveryv1.LabelManagedBy: "coxswain-e2e"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i <= window)}}},
		}
		backends[i] = b
	}

	p := startPipeline(t, nil)
	if preload > 0 {
		began := time.Now()
		p.preload(t, preload)
		t.Logf("%d routes preloaded and served in %s; controller RSS %s", preload, time.Since(began).Round(time.Millisecond), p.controllerRSS())
		p.settle(t, preload)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.c.Create(p.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "churn"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}))
	for _, b := range backends {
		must(p.c.Create(p.ctx, b.slice))
	}
	const host = "churn.example.com"
	must(p.c.Create(p.ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "churn"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gwv1.Hostname{host},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "churn", Port: ptr.To(gwv1.PortNumber(80))}}}}}},
		}}))
	testkit.EventuallyExplained(t, 2*time.Minute, func() string {
		code, _, err := p.get(host, "/")
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("churn route: %d %v", code, err)
		}
		return ""
	})

	load := startLoad(loadConfig{addr: p.addr, host: host, conns: 4, pace: time.Millisecond,
		maxDuration: time.Duration(seconds)*time.Second + 5*time.Minute, maxRequestsPerConn: 5000 * (seconds + 300)})
	defer load.finish()
	// Every listed backend answers before the churn starts.
	testkit.EventuallyExplained(t, time.Minute, func() string {
		for _, b := range backends[:window+1] {
			if b.hitCount() == 0 {
				return b.name + " listed but got no request"
			}
		}
		return ""
	})

	probe := newChurnProbe(t, p, ip)
	probeInterval := time.Duration(envInt("COXSWAIN_CHURN_PROBE_MS", 100)) * time.Millisecond

	listed, unlisted := slices.Clone(backends[1:window+1]), slices.Clone(backends[window+1:])
	jobs := make(chan func())
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var updateErrs int
	var firstErr error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j()
			}
		}()
	}
	total := rate * seconds
	interval := time.Second / time.Duration(rate)
	hard := time.Duration(seconds)*time.Second + 30*time.Second
	var reqBefore = load.sent.Load()
	// COXSWAIN_PROPAGATION_PROFILE=DIR profiles the controller and the
	// proxy over the churn.
	if dir := os.Getenv("COXSWAIN_PROPAGATION_PROFILE"); dir != "" {
		done := p.profile(t, dir, seconds)
		defer done()
	}
	cpuBefore := scrape(p.controllerMetrics)
	begin := time.Now()
	// The probe's changes come on top of the churn's.
	probeStop, probeDone := make(chan struct{}), make(chan error, 1)
	go func() { probeDone <- probe.run(probeStop, probeInterval, hard) }()
	updates := 0
	for u := 0; u < total && time.Since(begin) < hard; u++ {
		if d := time.Until(begin.Add(time.Duration(u) * interval)); d > 0 {
			time.Sleep(d)
		}
		var b *churnBackend
		ready := u%2 == 0
		if ready {
			b, unlisted = unlisted[0], unlisted[1:]
			listed = append(listed, b)
		} else {
			b, listed = listed[0], listed[1:]
			unlisted = append(unlisted, b)
		}
		jobs <- func() {
			if err := p.setListed(b, ready); err != nil {
				errMu.Lock()
				updateErrs++
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
			}
		}
		updates++
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(begin)
	close(probeStop)
	if err := <-probeDone; err != nil {
		t.Errorf("probe EndpointSlice update failed: %v", err)
	}
	// The controller's share: its CPU and rebuilds over the churn.
	cpuAfter := scrape(p.controllerMetrics)
	delta := func(metric string) float64 { return metricDelta(cpuBefore, cpuAfter, metric) }
	if rebuilds := delta("coxswain_controller_rebuild_duration_seconds_count"); rebuilds > 0 {
		fmt.Printf("churn controller_cpu_percent=%.1f rebuilds_per_s=%.1f rebuild_mean_ms=%.2f\n",
			100*delta("process_cpu_seconds_total")/elapsed.Seconds(), rebuilds/elapsed.Seconds(),
			1000*delta("coxswain_controller_rebuild_duration_seconds_sum")/rebuilds)
	}
	// The last additions get the time to arrive.
	time.Sleep(2 * time.Second)
	rep := load.finish()
	reqDuring := load.sent.Load() - reqBefore
	if firstErr != nil {
		t.Logf("%d EndpointSlice updates failed; the first: %v", updateErrs, firstErr)
	}
	for _, f := range rep.Failures {
		t.Logf("failed request: %s", f)
	}
	stats.mu.Lock()
	added, removed := slices.Clone(stats.added), slices.Clone(stats.removed)
	unseen, stale := stats.unseen, stats.stale
	stats.mu.Unlock()
	slices.Sort(added)
	slices.Sort(removed)
	q := quantileMS
	if len(added) == 0 {
		t.Error("no added endpoint got a request")
	}
	reqRate := float64(reqDuring) / elapsed.Seconds()
	// The balancer comes round to a new endpoint within about one cycle
	// of the listed ones at the load's rate: the first-request figures
	// include up to that much besides propagation. The probe's do not.
	cycle := float64(window+1) / reqRate * 1000
	pp50, pp90, pp99, pmax := probe.quantiles()
	t.Logf("probe (one endpoint, listed and unlisted every %s during the churn): shown after p50 %.1f ms, p90 %.1f, p99 %.1f, max %.1f (%d changes, %d not shown within 10 s); the first-request figures include up to a balancer cycle of %.1f ms",
		probeInterval, pp50, pp90, pp99, pmax, len(probe.took), probe.late, cycle)
	fmt.Printf("churn_probe preload=%d rate=%d interval_ms=%d changes=%d late=%d p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f balancer_cycle_ms=%.1f\n",
		preload, rate, probeInterval.Milliseconds(), len(probe.took), probe.late, pp50, pp90, pp99, pmax, cycle)
	up50, up90, up99, upmax := probe.updateQuantiles()
	t.Logf("probe's update calls alone (the apiserver's share of the figures above): p50 %.1f ms, p90 %.1f, p99 %.1f, max %.1f",
		up50, up90, up99, upmax)
	ap50, ap90, ap99, apmax := probe.afterUpdateQuantiles()
	t.Logf("probe's changes from the end of their update call (at least the controller's and the proxy's share): p50 %.1f ms, p90 %.1f, p99 %.1f, max %.1f",
		ap50, ap90, ap99, apmax)
	fmt.Printf("churn_probe_update p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f after_p50_ms=%.1f after_p90_ms=%.1f after_p99_ms=%.1f after_max_ms=%.1f\n",
		up50, up90, up99, upmax, ap50, ap90, ap99, apmax)
	if probe.late > 0 {
		t.Errorf("%d probe changes were not served within 10 s", probe.late)
	}
	t.Logf("%d EndpointSlice updates in %s (%.1f/s, %d failed); load: %s; an added endpoint's first request after p50 %.1f ms, p90 %.1f, p99 %.1f, max %.1f (%d samples, %d unseen, %d stale); a removed one's last request p50 %.1f ms, p99 %.1f; sampling: %d endpoints listed, %.0f requests/s",
		updates, elapsed.Round(time.Millisecond), float64(updates)/elapsed.Seconds(), updateErrs, rep, q(added, 0.5), q(added, 0.9), q(added, 0.99), q(added, 1),
		len(added), unseen, stale, q(removed, 0.5), q(removed, 0.99), window+1, reqRate)
	fmt.Printf("churn preload=%d rate=%d seconds=%d updates=%d update_rate=%.1f update_errors=%d requests=%d failed=%d p50_ms=%.1f p90_ms=%.1f p99_ms=%.1f max_ms=%.1f samples=%d unseen=%d stale=%d removed_p50_ms=%.1f removed_p99_ms=%.1f listed=%d req_rate=%.0f controller_rss_kb=%d proxy_rss_kb=%d\n",
		preload, rate, seconds, updates, float64(updates)/elapsed.Seconds(), updateErrs, rep.Sent, rep.Failed,
		q(added, 0.5), q(added, 0.9), q(added, 0.99), q(added, 1), len(added), unseen, stale, q(removed, 0.5), q(removed, 0.99),
		window+1, reqRate, rssKB(p.controller), rssKB(p.proxy))
	if updateErrs > 0 {
		t.Errorf("%d EndpointSlice updates failed", updateErrs)
	}
}
