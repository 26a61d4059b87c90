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

// ClientTrafficPolicySpec applies to the listener ports of the Gateways it
// targets (sectionName: the port of that listener).
type ClientTrafficPolicySpec struct {
	// TargetRefs are Gateways of the policy's namespace.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == 'gateway.networking.k8s.io' && r.kind == 'Gateway')",message="targetRefs must be Gateways"
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	// ProxyProtocol requires a PROXY protocol (v1/v2) header from trusted
	// sources; connections from elsewhere are refused.
	// +optional
	ProxyProtocol *ProxyProtocol `json:"proxyProtocol,omitempty"`
	// ClientIP derives the client address from a forwarding header set by
	// trusted hops.
	// +optional
	ClientIP *ClientIPDetection `json:"clientIP,omitempty"`
	// +optional
	HTTP2 *HTTP2Settings `json:"http2,omitempty"`
	// IdleTimeout of keep-alive connections.
	// +optional
	IdleTimeout *gwv1.Duration `json:"idleTimeout,omitempty"`
	// RequestHeaderTimeout bounds reading a request head.
	// +optional
	RequestHeaderTimeout *gwv1.Duration `json:"requestHeaderTimeout,omitempty"`
	// +optional
	Path *PathSettings `json:"path,omitempty"`
	// UnderscoreHeaders: Drop (default, as nginx), Reject (400) or Allow.
	// +optional
	// +kubebuilder:validation:Enum=Drop;Reject;Allow
	UnderscoreHeaders string `json:"underscoreHeaders,omitempty"`
}

// ProxyProtocol names the sources that send PROXY protocol headers.
type ProxyProtocol struct {
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	TrustedCIDRs []string `json:"trustedCIDRs"`
}

// ClientIPDetection reads a forwarding header right to left, skipping
// trusted hops.
type ClientIPDetection struct {
	// Header (default X-Forwarded-For).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Header string `json:"header,omitempty"`
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	TrustedCIDRs []string `json:"trustedCIDRs"`
	// TrustedHops, when set, takes the entry this many hops from the right.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	TrustedHops int32 `json:"trustedHops,omitempty"`
}

// HTTP2Settings of the listeners' HTTP/2 servers.
type HTTP2Settings struct {
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	MaxConcurrentStreams *int32 `json:"maxConcurrentStreams,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=65535
	// +kubebuilder:validation:Maximum=2147483647
	InitialStreamWindowSize *int32 `json:"initialStreamWindowSize,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=65535
	// +kubebuilder:validation:Maximum=2147483647
	InitialConnectionWindowSize *int32 `json:"initialConnectionWindowSize,omitempty"`
}

// PathSettings normalise request paths before routing.
type PathSettings struct {
	// +optional
	MergeSlashes bool `json:"mergeSlashes,omitempty"`
	// EscapedSlashes: Redirect (the default: 307 to the decoded path),
	// Reject (400), Decode or Keep.
	// +optional
	// +kubebuilder:validation:Enum=Redirect;Reject;Decode;Keep
	EscapedSlashes string `json:"escapedSlashes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ctp,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClientTrafficPolicy says how a Gateway's listeners treat their clients: PROXY protocol, client IP, HTTP/2, timeouts and path normalisation.
type ClientTrafficPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClientTrafficPolicySpec `json:"spec"`
	Status            gwv1.PolicyStatus       `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClientTrafficPolicyList is a list of ClientTrafficPolicy.
type ClientTrafficPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClientTrafficPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &ClientTrafficPolicy{}, &ClientTrafficPolicyList{})
		return nil
	})
}
