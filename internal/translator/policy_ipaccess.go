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
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileIPAccessControls compiles every IpAccessControl: its CIDRs,
// canonical ("10.0.0.0/8"; a bare address is a /32 or /128).
func compileIPAccessControls(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindIPAccessControl, t.res.IPAccessControls,
		func(p *gatewayv1alpha1.IpAccessControl) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.IpAccessControl, p *policy) {
			allow, err := cidrs(o.Spec.Allow)
			if err != nil {
				p.invalidf("spec.allow: %v", err)
				return
			}
			deny, err := cidrs(o.Spec.Deny)
			if err != nil {
				p.invalidf("spec.deny: %v", err)
				return
			}
			if len(allow) == 0 && len(deny) == 0 {
				p.invalidf("spec: set allow, deny or both")
				return
			}
			p.route = func(r *snapshot.Route) { r.IPAccess = &snapshot.IPAccess{Allow: allow, Deny: deny} }
		})
}

// cidrs canonicalises a list of CIDRs or addresses.
func cidrs(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for i, s := range in {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("[%d] %q is not a CIDR", i, s)
			}
			out = append(out, p.Masked().String())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("[%d] %q is not an IP address or CIDR", i, s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()).String())
	}
	return out, nil
}
