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

// ExternalAuthProtocol is how the proxy talks to the server.
// +kubebuilder:validation:Enum=HTTP;GRPC
type ExternalAuthProtocol string

// CoxswainExternalAuthSpec asks an authorization server whether to admit
// each request: HTTP (a 2xx answer admits; any other is relayed to the
// client) or gRPC, Envoy's envoy.service.auth.v3.Authorization, so
// OPA-Envoy, Authorino and other ext_authz servers work unchanged. When the
// server cannot be reached or times out the request gets 503, unless
// failOpen.
type CoxswainExternalAuthSpec struct {
	RoutePolicyTargets `json:",inline"`
	// Protocol is HTTP or GRPC.
	Protocol ExternalAuthProtocol `json:"protocol"`
	// BackendRef is the server's Service (another namespace needs a
	// ReferenceGrant).
	BackendRef gwv1.BackendObjectReference `json:"backendRef"`
	// Timeout of one check (default 2s).
	// +optional
	Timeout *gwv1.Duration `json:"timeout,omitempty"`
	// FailOpen admits requests while the server is unreachable.
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`
	// PathPrefix (HTTP) is prepended to the request path sent to the
	// server.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[^?#\s]*)?$`
	PathPrefix string `json:"pathPrefix,omitempty"`
	// RequestHeaders (HTTP) are the client headers sent to the server
	// (default Authorization and Cookie).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	RequestHeaders []string `json:"requestHeaders,omitempty"`
	// UpstreamHeaders are headers of an admitting answer copied into the
	// upstream request.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	UpstreamHeaders []string `json:"upstreamHeaders,omitempty"`
	// ClientHeaders are headers of a denying answer relayed to the client
	// (default all).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	ClientHeaders []string `json:"clientHeaders,omitempty"`
	// MaxRequestBytes (GRPC) sends up to this much of the request body.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1048576
	MaxRequestBytes int64 `json:"maxRequestBytes,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cextauth,categories=coxswain;coxswain-policy
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.protocol`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.ancestors[0].conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// CoxswainExternalAuth asks an external authorization server about every request.
type CoxswainExternalAuth struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CoxswainExternalAuthSpec `json:"spec"`
	Status            gwv1.PolicyStatus        `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CoxswainExternalAuthList is a list of CoxswainExternalAuth.
type CoxswainExternalAuthList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CoxswainExternalAuth `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &CoxswainExternalAuth{}, &CoxswainExternalAuthList{})
		return nil
	})
}
