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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// defaultExtAuthTimeout bounds one authorization check unless the policy
// says otherwise.
const defaultExtAuthTimeout = 2 * time.Second

// compileExternalAuths compiles every CoxswainExternalAuth with its
// server's endpoint set (gRPC servers are reached over h2c). It fails
// closed; a server Service in another namespace needs a ReferenceGrant.
func compileExternalAuths(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindExternalAuth, t.res.ExternalAuths,
		func(p *gatewayv1alpha1.CoxswainExternalAuth) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.CoxswainExternalAuth, p *policy) {
			p.failClosed = true
			s := &o.Spec
			ea := snapshot.ExtAuth{Timeout: snapshot.Duration(defaultExtAuthTimeout), FailOpen: s.FailOpen, PathPrefix: s.PathPrefix,
				RequestHeaders: lowerAll(s.RequestHeaders), UpstreamHeaders: lowerAll(s.UpstreamHeaders), ClientHeaders: lowerAll(s.ClientHeaders),
				MaxRequestBytes: s.MaxRequestBytes}
			switch s.Protocol {
			case "HTTP":
				ea.Mode = snapshot.ExtAuthHTTP
			case "GRPC":
				ea.Mode = snapshot.ExtAuthGRPC
			default:
				p.invalidf("spec.protocol: %q is not HTTP or GRPC", s.Protocol)
				return
			}
			if s.Timeout != nil {
				d, err := policyDuration(*s.Timeout)
				if err != nil || d <= 0 {
					p.invalidf("spec.timeout: %q is not a positive duration", *s.Timeout)
					return
				}
				ea.Timeout = d
			}
			ref := s.BackendRef
			ns := o.Namespace
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			if ns != o.Namespace && !t.granted(gatewayv1alpha1.GroupVersion.Group, gatewayv1alpha1.KindExternalAuth, o.Namespace, "", kindService, ns, string(ref.Name)) {
				p.invalidf("spec.backendRef: no ReferenceGrant in namespace %s allows CoxswainExternalAuth %s/%s to use Service %s", ns, o.Namespace, o.Name, ref.Name)
				return
			}
			svc, sp, problem := t.servicePort(ns, gatewayv1alpha1.KindExternalAuth, ref, corev1.ProtocolTCP)
			if problem != nil {
				p.invalidf("spec.backendRef: %s", problem.msg)
				return
			}
			proto := snapshot.AppProtocolHTTP
			if ea.Mode == snapshot.ExtAuthGRPC {
				proto = snapshot.AppProtocolH2C
			}
			ea.EndpointSet = t.endpointSet(svc, sp, proto)
			if ea.Mode == snapshot.ExtAuthGRPC {
				t.upgradeH2C(ea.EndpointSet) // gRPC speaks HTTP/2 only
			}
			p.route = func(r *snapshot.Route) { v := ea; r.ExtAuth = &v }
		})
}

func lowerAll(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ToLower(s)
	}
	return out
}
