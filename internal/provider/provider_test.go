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

// A lone trigger is not a burst; a second one within Quiet is, and the
// debounce then waits at least Quiet but never much more than MaxDelay.
func TestBurstAndDebounce(t *testing.T) {
	p := New(Options{Quiet: 30 * time.Millisecond, MaxDelay: 120 * time.Millisecond})
	p.Trigger()
	if p.burst() {
		t.Fatal("the first trigger counted as a burst")
	}
	<-p.trigger
	p.Trigger()
	if !p.burst() {
		t.Fatal("a trigger right after another is not a burst")
	}
	<-p.trigger
	// Keep triggering every 5ms: the quiet timer never fires, so the
	// debounce ends on MaxDelay.
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				p.Trigger()
			}
		}
	}()
	begin := time.Now()
	if !p.debounce(context.Background()) {
		t.Fatal("debounce reported a cancelled context")
	}
	close(stop)
	if waited := time.Since(begin); waited < 100*time.Millisecond {
		t.Fatalf("debounce under a steady stream returned after %v, before MaxDelay", waited)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if p.debounce(ctx) {
		t.Fatal("debounce ignored a cancelled context")
	}
}
