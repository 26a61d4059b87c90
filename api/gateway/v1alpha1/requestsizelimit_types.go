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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RequestSizeLimitSpec answers 413 to a request whose body is larger than
// maxBytes. HTTPRoutes only (gRPC streams have no size to declare).
type RequestSizeLimitSpec struct {
	RoutePolicyTargets `json:",inline"`
	// MaxBytes is the largest body admitted ("10Mi", "512k").
	MaxBytes resource.Quantity `json:"maxBytes"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rsl,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Max",type=string,JSONPath=`.spec.maxBytes`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RequestSizeLimit caps request bodies.
type RequestSizeLimit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RequestSizeLimitSpec `json:"spec"`
	Status            gwv1.PolicyStatus    `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RequestSizeLimitList is a list of RequestSizeLimit.
type RequestSizeLimitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RequestSizeLimit `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &RequestSizeLimit{}, &RequestSizeLimitList{})
		return nil
	})
}
