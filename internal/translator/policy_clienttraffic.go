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
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// compileClientTrafficPolicies compiles every ClientTrafficPolicy: the
// settings of the Gateway listener ports it covers.
func compileClientTrafficPolicies(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindClientTrafficPolicy, t.res.ClientTrafficPolicies,
		func(p *gatewayv1alpha1.ClientTrafficPolicy) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.ClientTrafficPolicy, p *policy) {
			ct, msg := clientTraffic(&o.Spec)
			if msg != "" {
				p.invalidf("%s", msg)
				return
			}
			p.listener = ct
		})
}

// clientTraffic validates a ClientTrafficPolicy spec; the message names
// the bad field.
func clientTraffic(s *gatewayv1alpha1.ClientTrafficPolicySpec) (*snapshot.ClientTraffic, string) {
	ct := &snapshot.ClientTraffic{}
	if pp := s.ProxyProtocol; pp != nil {
		c, err := cidrs(pp.TrustedCIDRs)
		if err != nil || len(c) == 0 {
			return nil, "spec.proxyProtocol.trustedCIDRs: " + errText(err, "at least one CIDR")
		}
		ct.ProxyProtocol = &snapshot.ProxyProtocol{TrustedCIDRs: c}
	}
	if ci := s.ClientIP; ci != nil {
		c, err := cidrs(ci.TrustedCIDRs)
		if err != nil || len(c) == 0 {
			return nil, "spec.clientIP.trustedCIDRs: " + errText(err, "at least one CIDR")
		}
		if ci.Header != "" && !snapshot.ValidToken(ci.Header) {
			return nil, "spec.clientIP.header: not a header name"
		}
		if ci.TrustedHops < 0 {
			return nil, "spec.clientIP.trustedHops: must not be negative"
		}
		ct.ClientIP = &snapshot.ClientIPDetection{Header: ci.Header, TrustedCIDRs: c, TrustedHops: ci.TrustedHops}
	}
	if h := s.HTTP2; h != nil {
		ct.HTTP2 = &snapshot.HTTP2Settings{MaxConcurrentStreams: ptr.Deref(h.MaxConcurrentStreams, 0),
			InitialStreamWindowSize: ptr.Deref(h.InitialStreamWindowSize, 0), InitialConnectionWindowSize: ptr.Deref(h.InitialConnectionWindowSize, 0)}
	}
	for field, d := range map[string]*gwv1.Duration{"spec.idleTimeout": s.IdleTimeout, "spec.requestHeaderTimeout": s.RequestHeaderTimeout} {
		if d == nil {
			continue
		}
		v, err := policyDuration(*d)
		if err != nil || v <= 0 {
			return nil, field + ": " + string(*d) + " is not a positive duration"
		}
		if field == "spec.idleTimeout" {
			ct.IdleTimeout = v
		} else {
			ct.RequestHeaderTimeout = v
		}
	}
	if pa := s.Path; pa != nil {
		ct.MergeSlashes = pa.MergeSlashes
		switch pa.EscapedSlashes {
		case "", "Redirect", "Reject", "Decode", "Keep":
			ct.EncodedSlashes = snapshot.EncodedSlashAction(pa.EscapedSlashes)
		default:
			return nil, "spec.path.escapedSlashes: " + pa.EscapedSlashes + " is not Redirect, Reject, Decode or Keep"
		}
	}
	switch s.UnderscoreHeaders {
	case "", "Drop", "Reject", "Allow":
		ct.UnderscoreHeaders = snapshot.UnderscoreHeaderAction(s.UnderscoreHeaders)
	default:
		return nil, "spec.underscoreHeaders: " + s.UnderscoreHeaders + " is not Drop, Reject or Allow"
	}
	return ct, ""
}

func errText(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}
