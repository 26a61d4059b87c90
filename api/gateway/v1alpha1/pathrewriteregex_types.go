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

// PathRewriteRegexSpec replaces every match of pattern in the request path
// by substitution ("$1" names the pattern's first group) before the
// request goes upstream. It is used as an ExtensionRef filter of an
// HTTPRoute rule.
type PathRewriteRegexSpec struct {
	// Pattern is an RE2 regular expression.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Pattern string `json:"pattern"`
	// Substitution replaces each match.
	// +kubebuilder:validation:MaxLength=1024
	Substitution string `json:"substitution"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=prr,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PathRewriteRegex rewrites the upstream path with a regular expression (an HTTPRoute ExtensionRef filter).
type PathRewriteRegex struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PathRewriteRegexSpec `json:"spec"`
	Status            gwv1.PolicyStatus    `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PathRewriteRegexList is a list of PathRewriteRegex.
type PathRewriteRegexList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PathRewriteRegex `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &PathRewriteRegex{}, &PathRewriteRegexList{})
		return nil
	})
}
