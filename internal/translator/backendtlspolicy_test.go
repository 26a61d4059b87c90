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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestTLSPolicySubjectAltNames: a subjectAltName without the value its
// type names (which the CRD's validation would refuse, but a translator
// must not trust) makes the policy Invalid, failing closed, rather than a
// snapshot the proxy refuses (found by FuzzTranslate).
func TestTLSPolicySubjectAltNames(t *testing.T) {
	for _, c := range []struct {
		name   string
		san    gwv1.SubjectAltName
		accept bool
	}{
		{"hostname", gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType, Hostname: "api.example.com"}, true},
		{"uri", gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, URI: "spiffe://cluster.local/ns/a/sa/b"}, true},
		{"uri without one", gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType}, false},
		{"hostname without one", gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType}, false},
		{"hostname with a uri", gwv1.SubjectAltName{Type: gwv1.HostnameSubjectAltNameType, Hostname: "a.example.com", URI: "spiffe://x/y"}, false},
		{"uri with a hostname", gwv1.SubjectAltName{Type: gwv1.URISubjectAltNameType, Hostname: "a.example.com", URI: "spiffe://x/y"}, false},
	} {
		p := &gwv1.BackendTLSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 1}}
		p.Spec.Validation = gwv1.BackendTLSPolicyValidation{
			Hostname:                "api.example.com",
			WellKnownCACertificates: ptr.To(gwv1.WellKnownCACertificatesSystem),
			SubjectAltNames:         []gwv1.SubjectAltName{c.san},
		}
		tp := (&translator{}).compileTLSPolicy(p)
		if got := tp.accepted.Status == metav1.ConditionTrue; got != c.accept {
			t.Errorf("%s: Accepted=%s (%s), want accepted %v", c.name, tp.accepted.Status, tp.accepted.Message, c.accept)
		}
		if !c.accept && (tp.tls == nil || tp.tls.ServerName != "invalid.invalid" || len(tp.tls.SubjectAltNames) != 0) {
			t.Errorf("%s: an invalid policy does not fail closed: %+v", c.name, tp.tls)
		}
	}
}
