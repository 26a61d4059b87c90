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

// IpAccessControlSpec allows or denies requests by client IP, as the
// listener's client IP detection (ClientTrafficPolicy) derives it. A
// client in deny is refused; otherwise, when allow is set, a client outside
// it is refused. Refused requests get 403.
// +kubebuilder:validation:XValidation:rule="has(self.allow) || has(self.deny)",message="set allow, deny or both"
type IpAccessControlSpec struct {
	RoutePolicyTargets `json:",inline"`
	// Allow are CIDRs ("10.0.0.0/8") or addresses.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	Allow []string `json:"allow,omitempty"`
	// Deny are CIDRs or addresses, checked first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=64
	Deny []string `json:"deny,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ipac,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// IpAccessControl is an allow/deny list on the client IP.
type IpAccessControl struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              IpAccessControlSpec `json:"spec"`
	Status            gwv1.PolicyStatus   `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// IpAccessControlList is a list of IpAccessControl.
type IpAccessControlList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IpAccessControl `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &IpAccessControl{}, &IpAccessControlList{})
		return nil
	})
}
