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

// RetryOn is a condition a try is retried on.
// +kubebuilder:validation:Enum=5xx;gateway-error;reset;connect-failure;retriable-status-codes;timeout
type RetryOn string

// RetryPolicySpec retries a failed try: never a request whose body was
// already streamed further than the proxy's replay buffer.
type RetryPolicySpec struct {
	RoutePolicyTargets `json:",inline"`
	// Attempts is how many retries follow the first try.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Attempts int32 `json:"attempts"`
	// PerTryTimeout bounds each try.
	// +optional
	PerTryTimeout *gwv1.Duration `json:"perTryTimeout,omitempty"`
	// RetryOn conditions (default connect-failure, reset and
	// gateway-error: 502, 503, 504).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=6
	RetryOn []RetryOn `json:"retryOn,omitempty"`
	// StatusCodes retried with retriable-status-codes (500-599).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Minimum=500
	// +kubebuilder:validation:items:Maximum=599
	StatusCodes []int32 `json:"statusCodes,omitempty"`
	// Backoff is the base pause before a retry (default 25ms); it doubles
	// per retry up to MaxBackoff (default 10x backoff), with full jitter.
	// +optional
	Backoff *gwv1.Duration `json:"backoff,omitempty"`
	// +optional
	MaxBackoff *gwv1.Duration `json:"maxBackoff,omitempty"`
	// Budget caps concurrent retries of a route at a percentage of its
	// requests in flight (default 20%, at least 3).
	// +optional
	Budget *RetryBudget `json:"budget,omitempty"`
}

// RetryBudget caps concurrent retries.
type RetryBudget struct {
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MinConcurrent *int32 `json:"minConcurrent,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=retry,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Attempts",type=integer,JSONPath=`.spec.attempts`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RetryPolicy sends failed requests again.
type RetryPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RetryPolicySpec   `json:"spec"`
	Status            gwv1.PolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RetryPolicyList is a list of RetryPolicy.
type RetryPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RetryPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &RetryPolicy{}, &RetryPolicyList{})
		return nil
	})
}
