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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileRateLimits compiles every RateLimit. Defaults: period 1s, key
// ClientIP, mode Local, failOpen true.
func compileRateLimits(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindRateLimit, t.res.RateLimits,
		func(p *gatewayv1alpha1.RateLimit) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.RateLimit, p *policy) {
			s := &o.Spec
			rl := snapshot.RateLimit{
				Name: o.Namespace + "/" + o.Name, Requests: s.Requests, Burst: s.Burst,
				Key: snapshot.RateLimitKeyClientIP, Period: snapshot.Duration(time.Second),
				Global: s.Mode == gatewayv1alpha1.RateLimitGlobal, FailOpen: ptr.Deref(s.FailOpen, true),
			}
			if s.Requests < 1 {
				p.invalidf("spec.requests: %d is not positive", s.Requests)
				return
			}
			if s.Burst < 0 {
				p.invalidf("spec.burst: %d is negative", s.Burst)
				return
			}
			if s.Period != nil {
				d, err := policyDuration(*s.Period)
				if err != nil || d <= 0 {
					p.invalidf("spec.period: %q is not a positive duration", *s.Period)
					return
				}
				rl.Period = d
			}
			if k := s.Key; k != nil {
				switch snapshot.RateLimitKeyType(k.Type) {
				case snapshot.RateLimitKeyClientIP, snapshot.RateLimitKeyPath, snapshot.RateLimitKeyRoute:
				case snapshot.RateLimitKeyHeader:
					if !snapshot.ValidToken(k.Header) {
						p.invalidf("spec.key.header: %q is not a header name", k.Header)
						return
					}
					rl.Header = k.Header
				default:
					p.invalidf("spec.key.type: %q is not ClientIP, Header, Path or Route", k.Type)
					return
				}
				rl.Key = snapshot.RateLimitKeyType(k.Type)
			}
			p.route = func(r *snapshot.Route) { v := rl; r.RateLimit = &v }
		})
}

// policyDuration parses a Gateway API duration.
func policyDuration(d gwv1.Duration) (snapshot.Duration, error) {
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, err
	}
	return snapshot.Duration(v), nil
}
