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
	"encoding/json"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// defaultJWTClockSkew is tolerated on exp and nbf unless a JwtAuth says
// otherwise.
const defaultJWTClockSkew = 30 * time.Second

// compileJWTAuths compiles every JwtAuth. It fails closed.
func compileJWTAuths(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindJWTAuth, t.res.JWTAuths,
		func(p *gatewayv1alpha1.JwtAuth) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.JwtAuth, p *policy) {
			p.failClosed = true
			s := &o.Spec
			j := snapshot.JWTAuth{Issuer: s.Issuer, Audiences: s.Audiences, JWKS: s.JWKS, JWKSURI: s.JWKSURI,
				ClockSkew: snapshot.Duration(defaultJWTClockSkew), FromHeader: s.FromHeader, FromCookie: s.FromCookie,
				AllowMissing: s.AllowMissing, ForwardToken: s.ForwardToken}
			switch {
			case (s.JWKS == "") == (s.JWKSURI == ""):
				p.invalidf("spec: set exactly one of jwks and jwksURI")
				return
			case s.JWKS != "":
				var set struct {
					Keys []json.RawMessage `json:"keys"`
				}
				if err := json.Unmarshal([]byte(s.JWKS), &set); err != nil || len(set.Keys) == 0 {
					p.invalidf("spec.jwks: not a JSON Web Key Set with keys")
					return
				}
			default:
				u, err := url.Parse(s.JWKSURI)
				if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
					p.invalidf("spec.jwksURI: %q is not an http or https URL", s.JWKSURI)
					return
				}
			}
			for field, d := range map[string]*gwv1.Duration{"spec.jwksCacheDuration": s.JWKSCacheDuration, "spec.clockSkew": s.ClockSkew} {
				if d == nil {
					continue
				}
				v, err := policyDuration(*d)
				if err != nil {
					p.invalidf("%s: %q is not a duration", field, *d)
					return
				}
				if field == "spec.clockSkew" {
					j.ClockSkew = v
				} else {
					j.JWKSCacheDuration = v
				}
			}
			if s.FromHeader != "" && !snapshot.ValidToken(s.FromHeader) {
				p.invalidf("spec.fromHeader: %q is not a header name", s.FromHeader)
				return
			}
			for i, c := range s.ClaimsToHeaders {
				if c.Claim == "" || !snapshot.ValidToken(c.Header) {
					p.invalidf("spec.claimsToHeaders[%d]: needs a claim and a header name", i)
					return
				}
				j.ClaimsToHeaders = append(j.ClaimsToHeaders, snapshot.ClaimHeader{Claim: c.Claim, Header: c.Header})
			}
			p.route = func(r *snapshot.Route) { v := j; r.JWT = &v }
		})
}
