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
)

// AnnotationPrefix is the prefix of every Ingress annotation Coxswain reads.
const AnnotationPrefix = "ingress.coxswain-labs.dev/"

// CoxswainIngressClassParametersSpec holds class-wide defaults for the
// Ingresses of an IngressClass.
type CoxswainIngressClassParametersSpec struct {
	// defaultAnnotations are per-key defaults for the Coxswain annotations of
	// every Ingress of the class. An annotation set on the Ingress itself
	// wins over the class default for the same key. Keys must carry the
	// ingress.coxswain-labs.dev/ prefix.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.startsWith('ingress.coxswain-labs.dev/') && size(k) > 26)",message="defaultAnnotations keys must start with ingress.coxswain-labs.dev/"
	DefaultAnnotations map[string]string `json:"defaultAnnotations,omitempty"`

	// accessLog set to false suppresses the access log for every Ingress of
	// the class. It can only suppress: true (or unset) keeps the proxy's
	// own setting, and there is no per-Ingress override.
	// +optional
	AccessLog *bool `json:"accessLog,omitempty"`
}

// CoxswainIngressClassParametersStatus is the observed state of a CoxswainIngressClassParameters.
type CoxswainIngressClassParametersStatus struct {
	// conditions describe whether the parameters are valid and in use.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the conditions were computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// CoxswainIngressClassParameters carries class-level defaults for Ingresses.
// Reference it from an IngressClass's spec.parameters with apiGroup
// ingress.coxswain-labs.dev, kind CoxswainIngressClassParameters, the object's
// name and namespace, and scope Namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cicp,categories=coxswain
// +kubebuilder:printcolumn:name="Access Log",type=boolean,JSONPath=`.spec.accessLog`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CoxswainIngressClassParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the class-level defaults.
	// +required
	Spec CoxswainIngressClassParametersSpec `json:"spec"`

	// status is the observed state written by the controller.
	// +optional
	Status CoxswainIngressClassParametersStatus `json:"status,omitempty"`
}

// CoxswainIngressClassParametersList contains a list of CoxswainIngressClassParameters.
// +kubebuilder:object:root=true
type CoxswainIngressClassParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CoxswainIngressClassParameters `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &CoxswainIngressClassParameters{}, &CoxswainIngressClassParametersList{})
		return nil
	})
}
