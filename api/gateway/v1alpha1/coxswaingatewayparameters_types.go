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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServiceType is the type of the Service that exposes a dedicated proxy.
// +kubebuilder:validation:Enum=LoadBalancer;ClusterIP;NodePort
type ServiceType string

// The Service types a dedicated proxy can be exposed with.
const (
	ServiceTypeLoadBalancer ServiceType = "LoadBalancer"
	ServiceTypeClusterIP    ServiceType = "ClusterIP"
	ServiceTypeNodePort     ServiceType = "NodePort"
)

// LogLevel is the verbosity of a proxy's logs.
// +kubebuilder:validation:Enum=error;warn;info;debug
type LogLevel string

// The log levels of a proxy, from least to most verbose.
const (
	LogLevelError LogLevel = "error"
	LogLevelWarn  LogLevel = "warn"
	LogLevelInfo  LogLevel = "info"
	LogLevelDebug LogLevel = "debug"
)

// CoxswainGatewayParametersSpec tunes the dedicated proxies that Coxswain
// provisions for a Gateway.
//
// Every field is optional. A Gateway's parameters (spec.infrastructure.parametersRef)
// and its GatewayClass's parameters (spec.parametersRef) are overlaid per field:
// a field set on the Gateway's object wins, and an unset field falls back to the
// class's object, then to the controller's built-in default. podTemplate is the
// exception: the two layers are strategic-merged, Gateway over class. Because
// "unset" carries meaning, no field in this spec is defaulted by the API server.
type CoxswainGatewayParametersSpec struct {
	// replicas is the number of proxy pods. Built-in default: 1.
	// Ignored (left to the HorizontalPodAutoscaler) when autoscaling is enabled.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// image is the container image of the proxy. Built-in default: the
	// controller's own image (one image serves every role).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ')",message="image must not contain spaces"
	Image *string `json:"image,omitempty"`

	// resources are the compute resources of the proxy container. When set on
	// both layers, the Gateway's block replaces the class's block as a whole.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// serviceType is the type of the Service in front of the proxy pods.
	// Built-in default: LoadBalancer.
	// +optional
	ServiceType *ServiceType `json:"serviceType,omitempty"`

	// serviceAnnotations are added to the proxy Service, for example to
	// configure a cloud load balancer.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// podTemplate is a partial PodTemplateSpec applied to the rendered proxy
	// Deployment as a strategic-merge patch: lists merge as core/v1's patch
	// strategy declares (containers, env and volumes by name), as kubectl
	// apply does, except tolerations, which kubectl replaces as a whole and
	// Coxswain merges by key and operator so a patch adds to the rendered
	// ones. The controller re-asserts the proxy's security settings after
	// the merge.
	// +optional
	PodTemplate *PodTemplatePatch `json:"podTemplate,omitempty"`

	// autoscaling configures a HorizontalPodAutoscaler for the proxy
	// Deployment. When set on both layers, the Gateway's block replaces the
	// class's block as a whole.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// accessLog turns the per-request access log of the proxy on or off.
	// Built-in default: true.
	// +optional
	AccessLog *bool `json:"accessLog,omitempty"`

	// logLevel is the verbosity of the proxy's own logs. Built-in default: info.
	// +optional
	LogLevel *LogLevel `json:"logLevel,omitempty"`

	// shutdown tunes how a proxy pod stops without dropping requests during
	// rollouts and scale-downs. When set on both layers, the Gateway's block
	// replaces the class's block as a whole.
	// +optional
	Shutdown *Shutdown `json:"shutdown,omitempty"`

	// maxResponseHeaderBytes caps the size of an upstream response's head
	// (status line and headers); an upstream sending a larger one gets the
	// client a 502. Built-in default: 1048576 (1 MiB).
	// +optional
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=67108864
	MaxResponseHeaderBytes *int32 `json:"maxResponseHeaderBytes,omitempty"`

	// streams tunes the proxy's TCP, TLS and UDP listeners (TCPRoute,
	// TLSRoute, UDPRoute) where Gateway API has no field for it. When set
	// on both layers, the Gateway's block replaces the class's block as a
	// whole.
	// +optional
	Streams *Streams `json:"streams,omitempty"`

	// rateLimit configures where Global RateLimits count. When set on both
	// layers, the Gateway's block replaces the class's block as a whole.
	// +optional
	RateLimit *RateLimitStore `json:"rateLimit,omitempty"`

	// tracing makes the proxies export OpenTelemetry spans, one per
	// request, over OTLP/gRPC. When set on both layers, the Gateway's
	// block replaces the class's block as a whole.
	// +optional
	Tracing *Tracing `json:"tracing,omitempty"`
}

// Tracing is where and how often the proxies export spans.
type Tracing struct {
	// otlpEndpoint is host:port of an OTLP/gRPC trace receiver reachable
	// from the proxies (for example an OpenTelemetry Collector Service
	// "otel-collector.observability.svc:4317").
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`
	OTLPEndpoint string `json:"otlpEndpoint"`
	// insecure sends spans in plaintext (a collector on the node or in
	// the mesh); otherwise over TLS verified against the system roots.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
	// samplingRatio is the share of requests without a sampled parent
	// that start a trace, from "0" to "1". Default "1".
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,6})?|1(\.0{1,6})?)$`
	SamplingRatio *string `json:"samplingRatio,omitempty"`
}

// RateLimitStore is the Redis the proxies share their Global RateLimit
// counters in.
type RateLimitStore struct {
	// redisAddress is host:port of a Redis reachable from the proxies (for
	// example a Service "redis.infra.svc:6379").
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`
	RedisAddress string `json:"redisAddress"`
}

// Streams tunes the connection-level (L4) listeners of a proxy.
type Streams struct {
	// idleTimeout closes a TCP or TLS connection spliced to a backend after
	// this long without a byte either way. Built-in default: 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="idleTimeout must be between 1s and 168h"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`

	// udpSessionIdleTimeout ends a UDP session (the datagrams of one client
	// address, relayed to one backend endpoint) after this long without a
	// datagram either way. Built-in default: 10s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="udpSessionIdleTimeout must be between 1s and 1h"
	UDPSessionIdleTimeout *metav1.Duration `json:"udpSessionIdleTimeout,omitempty"`
}

// Shutdown tunes the termination of a proxy pod. When the pod is deleted the
// kubelet first runs the preStop sleep while the Service's endpoints
// converge, then sends SIGTERM; the proxy answers /readyz with 503, keeps
// accepting and serving for drainSeconds while telling every client to
// reconnect elsewhere (HTTP/1.1 "Connection: close", HTTP/2 GOAWAY), then
// closes its listeners and lets in-flight requests finish in what is left
// of terminationGracePeriodSeconds.
// +kubebuilder:validation:XValidation:rule="!has(self.terminationGracePeriodSeconds) || self.terminationGracePeriodSeconds > (has(self.preStopSleepSeconds) ? self.preStopSleepSeconds : 2) + (has(self.drainSeconds) ? self.drainSeconds : 5) + 1",message="terminationGracePeriodSeconds must be greater than preStopSleepSeconds + drainSeconds + 1 (defaults 2 and 5), so that in-flight requests have time to finish"
type Shutdown struct {
	// preStopSleepSeconds is the preStop sleep of the proxy container: how
	// long the pod keeps serving normally after its deletion before it is
	// sent SIGTERM, so that load balancers and kube-proxy stop sending it
	// new connections first. 0 renders no preStop hook. Built-in default: 2.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=300
	PreStopSleepSeconds *int32 `json:"preStopSleepSeconds,omitempty"`

	// drainSeconds is how long the proxy keeps accepting and serving after
	// SIGTERM, answering every request with a response that closes its
	// connection, before it closes its listeners. Built-in default: 5.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	DrainSeconds *int32 `json:"drainSeconds,omitempty"`

	// terminationGracePeriodSeconds is the pod's grace period: the whole
	// time from deletion to SIGKILL. What remains after the preStop sleep
	// and the drain (less one second) bounds in-flight requests. Built-in
	// default: 30, or preStopSleepSeconds + drainSeconds + 10 when that is
	// more.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TerminationGracePeriodSeconds *int32 `json:"terminationGracePeriodSeconds,omitempty"`
}

// PodTemplatePatch is a partial PodTemplateSpec, merged onto the rendered
// proxy pod template with strategic-merge semantics.
type PodTemplatePatch struct {
	// metadata holds labels and annotations added to the proxy pods.
	// +optional
	Metadata *PodTemplatePatchMetadata `json:"metadata,omitempty"`

	// spec is a partial PodSpec. Its fields keep their core/v1 meaning and
	// are checked when the Deployment is applied.
	// +optional
	// +kubebuilder:validation:Type=object
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec *runtime.RawExtension `json:"spec,omitempty"`
}

// PodTemplatePatchMetadata is the metadata part of a PodTemplatePatch.
type PodTemplatePatchMetadata struct {
	// labels are added to the proxy pods. The controller's own selector
	// labels always win.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to the proxy pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Autoscaling configures a HorizontalPodAutoscaler for the proxy Deployment.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must be less than or equal to maxReplicas"
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.maxReplicas)",message="maxReplicas is required when autoscaling is enabled"
type Autoscaling struct {
	// enabled creates the HorizontalPodAutoscaler when true.
	// +optional
	// +kubebuilder:default=false
	Enabled bool `json:"enabled"`

	// minReplicas is the lower bound of the autoscaler. Built-in default: 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the upper bound of the autoscaler. Required when enabled.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// targetCPUUtilizationPercentage is the average CPU utilization, relative
	// to the requested CPU, that the autoscaler aims for.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// CoxswainGatewayParametersStatus is the observed state of a CoxswainGatewayParameters.
type CoxswainGatewayParametersStatus struct {
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

// CoxswainGatewayParameters tunes the dedicated proxy Deployment, Service and
// autoscaler that Coxswain provisions for a Gateway. Reference it from a
// GatewayClass's spec.parametersRef or a Gateway's
// spec.infrastructure.parametersRef (same namespace).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cgp,categories=coxswain
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Service Type",type=string,JSONPath=`.spec.serviceType`
// +kubebuilder:printcolumn:name="Autoscaling",type=boolean,JSONPath=`.spec.autoscaling.enabled`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CoxswainGatewayParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the per-field parameter overrides.
	// +required
	Spec CoxswainGatewayParametersSpec `json:"spec"`

	// status is the observed state written by the controller.
	// +optional
	Status CoxswainGatewayParametersStatus `json:"status,omitempty"`
}

// CoxswainGatewayParametersList contains a list of CoxswainGatewayParameters.
// +kubebuilder:object:root=true
type CoxswainGatewayParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CoxswainGatewayParameters `json:"items"`
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &CoxswainGatewayParameters{}, &CoxswainGatewayParametersList{})
		return nil
	})
}
