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

const (
	// ShardIDLabel must equal spec.shardID on every Project. Shard services
	// select their Projects with it.
	ShardIDLabel = "infra.apoxy.dev/shard-id"

	// ConditionReady reports whether the project API server answers its
	// readiness probe.
	ConditionReady = "Ready"

	// ConditionAgentCAValid reports whether spec.agentCA.certificates parse
	// as PEM certificates. It is a condition of its own rather than a Ready
	// reason: the project API server can be healthy while relays refuse its
	// broken agent CA, and both facts must be visible at once. It is absent
	// while the Project has no agentCA.
	ConditionAgentCAValid = "AgentCAValid"
	// ReasonAgentCAParsed means every block of agentCA.certificates is a
	// certificate.
	ReasonAgentCAParsed = "AgentCAParsed"
	// ReasonInvalidAgentCA means agentCA.certificates does not parse; relays
	// refuse the change (or the Project, on first sight).
	ReasonInvalidAgentCA = "InvalidAgentCA"
)

// ProjectSpec is the desired state of one project on one shard.
type ProjectSpec struct {
	// shardID is the UUID of the shard the project is assigned to. It cannot
	// change: moving a project to another shard is a migration, not an update.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="shardID is immutable"
	ShardID string `json:"shardID"`

	// apiServerEndpoint is the host[:port] of the project's API server,
	// for example "p-1234.shard-a.svc:6443" or "[2001:db8::1]:443". Consumers
	// reconnect when it changes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=261
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*|\\\\[[0-9a-fA-F:.]+\\\\])(:[0-9]{1,5})?$')",message="apiServerEndpoint must be host[:port]: a lowercase DNS name, an IPv4 address or a bracketed IPv6 address, without scheme or path"
	// +kubebuilder:validation:XValidation:rule="!self.matches(':[0-9]+$') || (int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535)",message="apiServerEndpoint port must be between 1 and 65535"
	APIServerEndpoint string `json:"apiServerEndpoint"`

	// agentCA is the certificate authority of the project's VPC agent
	// certificates.
	// +optional
	AgentCA *AgentCA `json:"agentCA,omitempty"`

	// relayRoots are the PEM CA certificates that relay certificates chain
	// to. Empty means the system roots.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self == '' || self.startsWith('-----BEGIN CERTIFICATE-----')",message="relayRoots must be PEM certificates"
	RelayRoots string `json:"relayRoots,omitempty"`

	// trustSignature is the signature over the project name,
	// apiServerEndpoint, agentCA.certificates and relayRoots. Relays refuse a
	// change of those fields whose signature does not verify.
	// +optional
	TrustSignature *TrustSignature `json:"trustSignature,omitempty"`
}

// AgentCA holds the CA certificates of a project's agents and the CA key in
// sealed form. During a rotation the next* fields hold the next CA; they are
// all set or all empty.
// The next* byte fields carry no "byte" format in the schema: CEL decodes
// byte-format values as URL-safe base64 and fails on the standard base64 JSON
// uses, so a rule reading them would reject most real keys.
// +kubebuilder:validation:XValidation:rule="(has(self.nextCertificate) && size(self.nextCertificate) > 0) == (has(self.nextSealedKey) && size(self.nextSealedKey) > 0) && (has(self.nextSealedKey) && size(self.nextSealedKey) > 0) == (has(self.nextWrappedDataKey) && size(self.nextWrappedDataKey) > 0)",message="nextCertificate, nextSealedKey and nextWrappedDataKey must be set together or all be empty"
type AgentCA struct {
	// certificates are the CA certificates, as PEM. During a rotation they
	// also hold the next CA's certificate or the old CAs' certificates.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="self.startsWith('-----BEGIN CERTIFICATE-----')",message="certificates must be PEM certificates"
	Certificates string `json:"certificates"`

	// sealedKey is the signing CA's private key, sealed so that only the
	// project's API server can open it.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	SealedKey []byte `json:"sealedKey,omitempty"`

	// wrappedDataKey is the data key that sealed sealedKey, wrapped.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	WrappedDataKey []byte `json:"wrappedDataKey,omitempty"`

	// nextCertificate is the next CA's certificate, as PEM, during a rotation.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	// +kubebuilder:validation:XValidation:rule="self == '' || self.startsWith('-----BEGIN CERTIFICATE-----')",message="nextCertificate must be a PEM certificate"
	NextCertificate string `json:"nextCertificate,omitempty"`

	// nextSealedKey is the next CA's private key in sealed form.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	// +kubebuilder:validation:Format=""
	NextSealedKey []byte `json:"nextSealedKey,omitempty"`

	// nextWrappedDataKey is the data key that sealed nextSealedKey, wrapped.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Format=""
	NextWrappedDataKey []byte `json:"nextWrappedDataKey,omitempty"`
}

// TrustSignature is Cosmos's signature over a Project's trust-relevant fields.
type TrustSignature struct {
	// keyID names the key that made the signature.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	KeyID string `json:"keyID"`

	// signedAt is when the signature was made.
	// +required
	SignedAt metav1.Time `json:"signedAt"`

	// signature is the signature bytes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Signature []byte `json:"signature"`
}

// ProjectStatus is the health observed by the infra-apiserver. It never
// changes membership.
type ProjectStatus struct {
	// conditions hold Ready: True after a successful probe of the project
	// API server, False after three consecutive failures, Unknown after an
	// endpoint change until the new endpoint answers; and AgentCAValid:
	// False (reason InvalidAgentCA) when spec.agentCA.certificates does not
	// parse, so relays refuse it.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the conditions were computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// observedEndpoint is the apiServerEndpoint the last probe used.
	// +optional
	ObservedEndpoint string `json:"observedEndpoint,omitempty"`

	// lastHealthyProbeTime is the time of the last successful probe,
	// persisted at most once a minute.
	// +optional
	LastHealthyProbeTime *metav1.Time `json:"lastHealthyProbeTime,omitempty"`

	// consecutiveFailures counts the probes that failed since the last success.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
}

// Project assigns one project, named by its UUID, to the shard named in
// spec.shardID. Its presence is the assignment; its deletion removes it.
// Spec and deletion belong to the lifecycle identity, status to the
// infra-apiserver's health prober.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=apoxy
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",message="metadata.name must be a lowercase UUID"
// +kubebuilder:printcolumn:name="Shard",type=string,JSONPath=`.spec.shardID`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.apiServerEndpoint`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired assignment, written by the lifecycle identity.
	// +required
	Spec ProjectSpec `json:"spec"`

	// status is the observed health, written by the health prober.
	// +optional
	Status ProjectStatus `json:"status,omitempty"`
}

// ProjectList contains a list of Project.
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &Project{}, &ProjectList{})
		return nil
	})
}
