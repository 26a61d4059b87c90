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

// LoadBalancerType is a balancing algorithm.
// +kubebuilder:validation:Enum=RoundRobin;LeastRequest;Random;ConsistentHash
type LoadBalancerType string

// CoxswainBackendPolicySpec applies to every route backend of the Services
// it targets (sectionName: one port by name).
type CoxswainBackendPolicySpec struct {
	// TargetRefs are Services of the policy's namespace.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == '' && r.kind == 'Service')",message="targetRefs must be core Services"
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	// +optional
	LoadBalancer *LoadBalancer `json:"loadBalancer,omitempty"`
	// ConnectTimeout bounds connecting to an endpoint (502 when exceeded).
	// +optional
	ConnectTimeout *gwv1.Duration `json:"connectTimeout,omitempty"`
	// IdleTimeout closes upstream connections idle this long.
	// +optional
	IdleTimeout *gwv1.Duration `json:"idleTimeout,omitempty"`
	// +optional
	CircuitBreaker *CircuitBreaker `json:"circuitBreaker,omitempty"`
	// +optional
	OutlierDetection *OutlierDetection `json:"outlierDetection,omitempty"`
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
}

// LoadBalancer picks an endpoint per request.
// +kubebuilder:validation:XValidation:rule="self.type == 'ConsistentHash' ? has(self.consistentHash) : !has(self.consistentHash)",message="consistentHash is set exactly for type ConsistentHash"
type LoadBalancer struct {
	Type LoadBalancerType `json:"type"`
	// +optional
	ConsistentHash *ConsistentHash `json:"consistentHash,omitempty"`
}

// ConsistentHash keys: exactly one of header, cookie and sourceIP.
// +kubebuilder:validation:XValidation:rule="[has(self.header), has(self.cookie), has(self.sourceIP) && self.sourceIP].filter(x, x).size() == 1",message="set exactly one of header, cookie and sourceIP"
type ConsistentHash struct {
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Header string `json:"header,omitempty"`
	// Cookie hashes on a cookie; with a ttl the proxy sets it when absent
	// (session affinity).
	// +optional
	Cookie *HashCookie `json:"cookie,omitempty"`
	// +optional
	SourceIP bool `json:"sourceIP,omitempty"`
}

// HashCookie is the session affinity cookie.
type HashCookie struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Name string `json:"name"`
	// +optional
	TTL *gwv1.Duration `json:"ttl,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
}

// CircuitBreaker bounds what one proxy sends to the Service; over a bound
// requests get 503 at once.
type CircuitBreaker struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxConnections *int32 `json:"maxConnections,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxPendingRequests *int32 `json:"maxPendingRequests,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxRequests *int32 `json:"maxRequests,omitempty"`
}

// OutlierDetection ejects endpoints that fail in a row.
type OutlierDetection struct {
	// Consecutive5xx answers (and connect failures) eject (default 5).
	// +optional
	// +kubebuilder:validation:Minimum=1
	Consecutive5xx *int32 `json:"consecutive5xx,omitempty"`
	// ConsecutiveConnectFailures eject (default 5; 0 off).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveConnectFailures *int32 `json:"consecutiveConnectFailures,omitempty"`
	// BaseEjectionTime, multiplied by the endpoint's ejections (default 30s).
	// +optional
	BaseEjectionTime *gwv1.Duration `json:"baseEjectionTime,omitempty"`
	// MaxEjectionTime caps an ejection (default 300s).
	// +optional
	MaxEjectionTime *gwv1.Duration `json:"maxEjectionTime,omitempty"`
	// MaxEjectionPercent of endpoints ejected at once (default 10; at
	// least one endpoint of two or more).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxEjectionPercent *int32 `json:"maxEjectionPercent,omitempty"`
}

// HealthCheck probes every endpoint with HTTP GET.
type HealthCheck struct {
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s]*$`
	Path string `json:"path"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname,omitempty"`
	// Interval between probes (default 5s).
	// +optional
	Interval *gwv1.Duration `json:"interval,omitempty"`
	// Timeout of a probe (default 1s).
	// +optional
	Timeout *gwv1.Duration `json:"timeout,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	HealthyThreshold *int32 `json:"healthyThreshold,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	UnhealthyThreshold *int32 `json:"unhealthyThreshold,omitempty"`
	// ExpectedStatuses pass (default 200-399).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	ExpectedStatuses []int32 `json:"expectedStatuses,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cbp,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="LB",type=string,JSONPath=`.spec.loadBalancer.type`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// CoxswainBackendPolicy tunes how proxies reach a Service: load balancing, timeouts, circuit breaking, outlier detection and health checks.
type CoxswainBackendPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CoxswainBackendPolicySpec `json:"spec"`
	Status            gwv1.PolicyStatus         `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CoxswainBackendPolicyList is a list of CoxswainBackendPolicy.
type CoxswainBackendPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CoxswainBackendPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &CoxswainBackendPolicy{}, &CoxswainBackendPolicyList{})
		return nil
	})
}
