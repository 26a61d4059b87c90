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

// RateLimitMode says where a limit counts.
// +kubebuilder:validation:Enum=Local;Global
type RateLimitMode string

// The rate limit modes.
const (
	// RateLimitLocal counts in each proxy on its own.
	RateLimitLocal RateLimitMode = "Local"
	// RateLimitGlobal counts once for every proxy replica, in the Redis the
	// proxies were started with (--rate-limit-redis).
	RateLimitGlobal RateLimitMode = "Global"
)

// RateLimitKeyType is what one bucket counts.
// +kubebuilder:validation:Enum=ClientIP;Header;Path;Route
type RateLimitKeyType string

// RateLimitKey is what one bucket counts.
// +kubebuilder:validation:XValidation:rule="self.type == 'Header' ? has(self.header) : !has(self.header)",message="header is set exactly for type Header"
type RateLimitKey struct {
	// Type is ClientIP (a bucket per client), Header (a bucket per value
	// of header), Path (per request path) or Route (one bucket).
	Type RateLimitKeyType `json:"type"`
	// Header names the header of type Header.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Header string `json:"header,omitempty"`
}

// RateLimitSpec admits requests per period per key (plus burst); a request
// over the limit gets 429 with Retry-After and the RateLimit-* headers.
type RateLimitSpec struct {
	RoutePolicyTargets `json:",inline"`
	// Requests admitted per period.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Requests int32 `json:"requests"`
	// Period of the limit (default 1s).
	// +optional
	Period *gwv1.Duration `json:"period,omitempty"`
	// Burst is how many requests above the rate a key may send at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000000
	Burst int32 `json:"burst,omitempty"`
	// Key of the buckets (default ClientIP).
	// +optional
	Key *RateLimitKey `json:"key,omitempty"`
	// Mode is Local (default) or Global.
	// +optional
	// +kubebuilder:default=Local
	Mode RateLimitMode `json:"mode,omitempty"`
	// FailOpen admits requests while a Global store is unreachable
	// (default true: a rate limit protects, it does not authorise).
	// +optional
	FailOpen *bool `json:"failOpen,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=rl,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Requests",type=integer,JSONPath=`.spec.requests`
// +kubebuilder:printcolumn:name="Period",type=string,JSONPath=`.spec.period`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// RateLimit limits the request rate of the routes it attaches to.
type RateLimit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RateLimitSpec     `json:"spec"`
	Status            gwv1.PolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// RateLimitList is a list of RateLimit.
type RateLimitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RateLimit `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &RateLimit{}, &RateLimitList{})
		return nil
	})
}
