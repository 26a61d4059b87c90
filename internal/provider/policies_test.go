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
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestPolicyKindsAreWatchedAndGathered: creating a RateLimit and a
// ClientTrafficPolicy rebuilds, and the rebuild's Resources hold them.
func TestPolicyKindsAreWatchedAndGathered(t *testing.T) {
	gathered := make(chan *translator.Resources, 64)
	run := runProvider(t, nil, func(r *translator.Resources) *translator.Result {
		gathered <- r
		return translator.Translate(r)
	})
	ctx := run.ctx
	run.next(t)
	if err := run.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policies"}}); err != nil {
		t.Fatal(err)
	}
	gatewayRef := []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{
		Group: gwv1.GroupName, Kind: "Gateway", Name: "web",
	}}}
	rl := &gatewayv1alpha1.RateLimit{
		ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "limit"},
		Spec:       gatewayv1alpha1.RateLimitSpec{RoutePolicyTargets: gatewayv1alpha1.RoutePolicyTargets{TargetRefs: gatewayRef}, Requests: 10},
	}
	ctp := &gatewayv1alpha1.ClientTrafficPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: "clients"},
		Spec:       gatewayv1alpha1.ClientTrafficPolicySpec{TargetRefs: gatewayRef},
	}
	for _, obj := range []client.Object{rl, ctp} {
		if err := run.client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	found := func(r *translator.Resources) string {
		if len(r.RateLimits) != 1 || r.RateLimits[0].Name != "limit" || r.RateLimits[0].Spec.Requests != 10 {
			return fmt.Sprintf("RateLimits %+v", r.RateLimits)
		}
		if len(r.ClientTrafficPolicies) != 1 || r.ClientTrafficPolicies[0].Name != "clients" {
			return fmt.Sprintf("ClientTrafficPolicies %+v", r.ClientTrafficPolicies)
		}
		return ""
	}
	deadline := time.After(30 * time.Second)
	for missing := "no rebuild"; missing != ""; {
		select {
		case r := <-gathered:
			missing = found(r)
		case <-deadline:
			t.Fatalf("no rebuild gathered both policies within 30s: %s", missing)
		}
	}
}
