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

// BasicAuthSpec checks credentials against the htpasswd entries in a
// Secret of the policy's namespace (key "auth", else ".htpasswd"; bcrypt
// or {SHA}). A request without valid credentials gets 401; a policy whose
// Secret cannot be used answers 500 (it fails closed).
type BasicAuthSpec struct {
	RoutePolicyTargets `json:",inline"`
	// SecretRef names the htpasswd Secret.
	SecretRef gwv1.SecretObjectReference `json:"secretRef"`
	// Realm of the WWW-Authenticate challenge (default "Restricted").
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^"\\]*$`
	Realm string `json:"realm,omitempty"`
	// ForwardUsernameHeader sends the user name upstream in this header.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ForwardUsernameHeader string `json:"forwardUsernameHeader,omitempty"`
	// StripAuthorization removes the Authorization header before the
	// request goes upstream.
	// +optional
	StripAuthorization bool `json:"stripAuthorization,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=bauth,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// BasicAuth asks for HTTP Basic credentials checked against an htpasswd Secret.
type BasicAuth struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BasicAuthSpec     `json:"spec"`
	Status            gwv1.PolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BasicAuthList is a list of BasicAuth.
type BasicAuthList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BasicAuth `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &BasicAuth{}, &BasicAuthList{})
		return nil
	})
}
