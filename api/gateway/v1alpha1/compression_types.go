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

// CompressionAlgorithm is a content coding.
// +kubebuilder:validation:Enum=br;zstd;gzip
type CompressionAlgorithm string

// CompressionSpec compresses response bodies the client accepts, never one
// already encoded.
type CompressionSpec struct {
	RoutePolicyTargets `json:",inline"`
	// Algorithms, most preferred first (default br, zstd, gzip).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	Algorithms []CompressionAlgorithm `json:"algorithms,omitempty"`
	// MinBytes is the smallest declared body compressed (default 1024).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinBytes *int64 `json:"minBytes,omitempty"`
	// ContentTypes are media types or prefixes ("text/"); default text,
	// JSON, JavaScript, XML, SVG and WASM.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	ContentTypes []string `json:"contentTypes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=comp,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Compression compresses responses.
type Compression struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CompressionSpec   `json:"spec"`
	Status            gwv1.PolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CompressionList is a list of Compression.
type CompressionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Compression `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &Compression{}, &CompressionList{})
		return nil
	})
}
