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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileRequestSizeLimits compiles every RequestSizeLimit (HTTPRoutes
// only: a gRPC stream declares no size).
func compileRequestSizeLimits(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindRequestSizeLimit, t.res.RequestSizeLimits,
		func(p *gatewayv1alpha1.RequestSizeLimit) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.RequestSizeLimit, p *policy) {
			p.httpOnly = true
			n, ok := o.Spec.MaxBytes.AsInt64()
			if !ok || n < 1 {
				p.invalidf("spec.maxBytes: %s is not a positive whole number of bytes", o.Spec.MaxBytes.String())
				return
			}
			p.route = func(r *snapshot.Route) { r.MaxRequestBodyBytes = n }
		})
}
