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
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
)

func TestStatusOnly(t *testing.T) {
	gw := func(gen int64, labels map[string]string, programmed bool) *gwv1.Gateway {
		g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: gen, Labels: labels}}
		if programmed {
			g.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue}}
		}
		return g
	}
	svc := func(ip string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		return s
	}
	rl := func(gen int64, accepted bool) *gatewayv1alpha1.RateLimit {
		r := &gatewayv1alpha1.RateLimit{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: gen}}
		if accepted {
			r.Status.Ancestors = []gwv1.PolicyAncestorStatus{{ControllerName: "example.com/c"}}
		}
		return r
	}
	tests := []struct {
		name     string
		old, new any
		want     bool
	}{
		{"gateway status write", gw(1, nil, false), gw(1, nil, true), true},
		{"gateway spec change", gw(1, nil, false), gw(2, nil, false), false},
		{"gateway label change", gw(1, nil, false), gw(1, map[string]string{"a": "b"}, false), false},
		{"service status matters (addresses)", svc("1.1.1.1"), svc("2.2.2.2"), false},
		{"policy status write", rl(1, false), rl(1, true), true},
		{"policy spec change", rl(1, false), rl(2, false), false},
	}
	for _, tc := range tests {
		if got := statusOnly(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: statusOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A change after a quiet spell rebuilds at once; one that comes sooner
// after the last rebuild waits for the gap: Quiet (EndpointsQuiet while
// only endpoints changed), or, when changes came during the last rebuild,
// its duration when longer, never more than MaxDelay. Triggers of the
// wait coalesce. (Lower bounds only: a loaded machine may wait longer.)
func TestPacing(t *testing.T) {
	p := New(Options{Quiet: 30 * time.Millisecond, EndpointsQuiet: 12 * time.Millisecond, MaxDelay: 200 * time.Millisecond})
	ctx := context.Background()
	begin := time.Now()
	if !p.pace(ctx) || time.Since(begin) > 25*time.Millisecond {
		t.Fatalf("the first rebuild waited %v", time.Since(begin))
	}
	for _, tc := range []struct {
		name          string
		took          time.Duration
		busy          bool
		endpointsOnly bool
		min, max      time.Duration
	}{
		{"a quick rebuild: the gap is Quiet", time.Millisecond, true, false, 30 * time.Millisecond, 30 * time.Millisecond},
		{"a slow rebuild without changes meanwhile: the gap is Quiet", 90 * time.Millisecond, false, false, 30 * time.Millisecond, 30 * time.Millisecond},
		{"a slow rebuild with changes meanwhile: the gap is its duration", 90 * time.Millisecond, true, false, 90 * time.Millisecond, 90 * time.Millisecond},
		{"a very slow rebuild: the gap is MaxDelay", 5 * time.Second, true, false, 200 * time.Millisecond, 200 * time.Millisecond},
		{"only endpoints changed: the gap is EndpointsQuiet", time.Millisecond, true, true, 12 * time.Millisecond, 12 * time.Millisecond},
		{"only endpoints changed after a slow rebuild: its duration", 90 * time.Millisecond, true, true, 90 * time.Millisecond, 90 * time.Millisecond},
	} {
		p.lastEnd, p.lastTook, p.busy = time.Now(), tc.took, tc.busy
		p.structural.Store(!tc.endpointsOnly)
		if g := p.gap(); g < tc.min || g > tc.max {
			t.Errorf("%s: gap %v", tc.name, g)
		}
		p.Trigger()
		p.Trigger()
		<-p.trigger // what Start's loop receives
		p.Trigger() // comes during the wait
		begin := time.Now()
		if !p.pace(ctx) {
			t.Fatal("pace reported a cancelled context")
		}
		if waited := time.Since(begin); waited < tc.min-5*time.Millisecond {
			t.Errorf("%s: waited %v, want at least %v", tc.name, waited, tc.min)
		}
		select {
		case <-p.trigger:
			t.Errorf("%s: a trigger of the wait was not coalesced into the rebuild", tc.name)
		default:
		}
	}
	p.lastEnd, p.lastTook, p.busy = time.Now(), time.Second, true
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if p.pace(cctx) {
		t.Fatal("pace ignored a cancelled context")
	}
}
