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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// JwtAuthSpec verifies a JSON Web Token on every request; a request
// without a valid one gets 401.
// +kubebuilder:validation:XValidation:rule="has(self.jwks) != has(self.jwksURI)",message="set exactly one of jwks and jwksURI"
type JwtAuthSpec struct {
	RoutePolicyTargets `json:",inline"`
	// Issuer, when set, must equal the token's iss claim.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Issuer string `json:"issuer,omitempty"`
	// Audiences, when set, must include one of the token's aud values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Audiences []string `json:"audiences,omitempty"`
	// JWKS is an inline JSON Web Key Set.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	JWKS string `json:"jwks,omitempty"`
	// JWKSURI is an https (or in-cluster http) URL the proxies fetch the
	// key set from, cache, and refetch when a token names an unknown key.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('https://') || self.startsWith('http://'))",message="jwksURI must be an http or https URL"
	JWKSURI string `json:"jwksURI,omitempty"`
	// JWKSCacheDuration is how long a fetched key set is used (default 5m).
	// +optional
	JWKSCacheDuration *gwv1.Duration `json:"jwksCacheDuration,omitempty"`
	// ClockSkew tolerated on exp and nbf (default 30s).
	// +optional
	ClockSkew *gwv1.Duration `json:"clockSkew,omitempty"`
	// FromHeader is the header carrying the token (default Authorization,
	// as "Bearer <token>").
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FromHeader string `json:"fromHeader,omitempty"`
	// FromCookie reads the token from this cookie instead.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FromCookie string `json:"fromCookie,omitempty"`
	// ClaimsToHeaders copy claims into upstream request headers (a
	// client-sent header of the same name is always removed).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ClaimsToHeaders []ClaimToHeader `json:"claimsToHeaders,omitempty"`
	// AllowMissing lets requests without a token through; a present but
	// invalid token is still refused.
	// +optional
	AllowMissing bool `json:"allowMissing,omitempty"`
	// ForwardToken keeps the token in the upstream request.
	// +optional
	ForwardToken bool `json:"forwardToken,omitempty"`
}

// ClaimToHeader copies one top-level claim into one header.
type ClaimToHeader struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Claim string `json:"claim"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Header string `json:"header"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=jwt,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Issuer",type=string,JSONPath=`.spec.issuer`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// JwtAuth verifies JSON Web Tokens.
type JwtAuth struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              JwtAuthSpec       `json:"spec"`
	Status            gwv1.PolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// JwtAuthList is a list of JwtAuth.
type JwtAuthList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []JwtAuth `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &JwtAuth{}, &JwtAuthList{})
		return nil
	})
}
