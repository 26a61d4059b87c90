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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// churnProbe measures EndpointSlice propagation exactly while the churn
// runs. The churn's own figure (an added endpoint's first request) waits,
// besides propagation, for the balancer to come round to the new endpoint
// among the hundred listed, which at the load's rate is tens of
// milliseconds by itself. The probe's route has one Service with one
// endpoint: the probe lists and unlists it in turn, and polls the route
// (every millisecond, without the load) until the proxy answers as the
// change says — the backend's 200 once listed, 503 "no healthy upstream"
// once unlisted.
type churnProbe struct {
	p     *pipeline
	host  string
	slice *discoveryv1.EndpointSlice
	// took is each change's time from the update call to the first answer
	// that shows it.
	took []time.Duration
	// update is each change's update call alone, beside took: the
	// apiserver's share, which the controller and the proxies cannot
	// shorten.
	update []time.Duration
	// late counts the changes not shown within the bound (10 s).
	late int
}

const churnProbeHost = "churn-probe.example.com"

// newChurnProbe starts the probe's backend on ip and creates its Service,
// unlisted EndpointSlice and HTTPRoute, then waits until the route answers
// 503 (served, no endpoint).
func newChurnProbe(t *testing.T, p *pipeline, ip string) *churnProbe {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "probe")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	cp := &churnProbe{p: p, host: churnProbeHost, slice: &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "churn-probe",
			Labels: map[string]string{discoveryv1.LabelServiceName: "churn-probe", discoveryv1.LabelManagedBy: "coxswain-e2e"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}},
	}}
	if err := p.c.Create(p.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "churn-probe"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Create(p.ctx, cp.slice); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Create(p.ctx, &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "churn-probe"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "web"}}},
			Hostnames:       []gwv1.Hostname{churnProbeHost},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "churn-probe", Port: ptr.To(gwv1.PortNumber(80))}}}}}},
		}}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyExplained(t, 2*time.Minute, func() string {
		if code, _, err := p.get(churnProbeHost, "/"); err != nil || code != http.StatusServiceUnavailable {
			return fmt.Sprintf("probe route: %d %v (want 503: served, no endpoint)", code, err)
		}
		return ""
	})
	return cp
}

// run lists and unlists the probe's endpoint in turn, one change every
// interval, until stop is closed or the hard bound passes, measuring each
// (measure). It returns the first failed update.
func (cp *churnProbe) run(stop <-chan struct{}, interval, hard time.Duration) error {
	begin := time.Now()
	for i := 0; time.Since(begin) < hard; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := cp.measure(i%2 == 0); err != nil {
			return err
		}
		if d := time.Until(begin.Add(time.Duration(i+1) * interval)); d > 0 {
			select {
			case <-stop:
				return nil
			case <-time.After(d):
			}
		}
	}
	return nil
}

// measure lists (or unlists) the endpoint and polls the route every
// millisecond, for at most 10 s, until it answers 200 (or 503).
func (cp *churnProbe) measure(ready bool) error {
	want := http.StatusServiceUnavailable
	if ready {
		want = http.StatusOK
	}
	cp.slice.Endpoints[0].Conditions.Ready = ptr.To(ready)
	begin := time.Now()
	if err := cp.p.c.Update(cp.p.ctx, cp.slice); err != nil {
		return err
	}
	update := time.Since(begin)
	deadline := begin.Add(10 * time.Second)
	for {
		if code, _, err := cp.p.get(cp.host, "/"); err == nil && code == want {
			cp.took = append(cp.took, time.Since(begin))
			cp.update = append(cp.update, update)
			return nil
		}
		if time.Now().After(deadline) {
			cp.late++
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// quantiles are p50, p90, p99 and max of the measured changes in
// milliseconds (-1 each when none was).
func (cp *churnProbe) quantiles() (p50, p90, p99, maxMS float64) {
	return durationQuantiles(cp.took)
}

// updateQuantiles are the same figures of the update calls alone.
func (cp *churnProbe) updateQuantiles() (p50, p90, p99, maxMS float64) {
	return durationQuantiles(cp.update)
}

// afterUpdateQuantiles are the same figures of each change's time from
// the end of its update call to the first answer that showed it: a lower
// bound of the controller's and the proxy's share (the watch event can
// come before the call returns).
func (cp *churnProbe) afterUpdateQuantiles() (p50, p90, p99, maxMS float64) {
	after := make([]time.Duration, len(cp.took))
	for i := range cp.took {
		after[i] = cp.took[i] - cp.update[i]
	}
	return durationQuantiles(after)
}

// durationQuantiles are p50, p90, p99 and max of d in milliseconds (-1
// each when d is empty).
func durationQuantiles(d []time.Duration) (p50, p90, p99, maxMS float64) {
	s := slices.Sorted(slices.Values(d))
	return quantileMS(s, 0.5), quantileMS(s, 0.9), quantileMS(s, 0.99), quantileMS(s, 1)
}
