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

package translator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/portalloc"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Resources is everything one rebuild reads, gathered by internal/provider
// from the informer caches. Slices may arrive in any order; Translate sorts
// what it needs. Objects are read-only.
type Resources struct {
	GatewayClasses []*gwv1.GatewayClass
	Gateways       []*gwv1.Gateway
	HTTPRoutes     []*gwv1.HTTPRoute
	GRPCRoutes     []*gwv1.GRPCRoute
	TLSRoutes      []*gwv1.TLSRoute
	TCPRoutes      []*gwv1.TCPRoute
	UDPRoutes      []*gwv1.UDPRoute
	ListenerSets   []*gwv1.ListenerSet
	// BackendTLSPolicies and the ConfigMaps their caCertificateRefs (and
	// frontend validation's) may name.
	BackendTLSPolicies []*gwv1.BackendTLSPolicy
	ConfigMaps         []*corev1.ConfigMap
	ReferenceGrants    []*gwv1beta1.ReferenceGrant
	Namespaces         []*corev1.Namespace
	Services           []*corev1.Service
	EndpointSlices     []*discoveryv1.EndpointSlice
	Secrets            []*corev1.Secret

	Ingresses              []*networkingv1.Ingress
	IngressClasses         []*networkingv1.IngressClass
	IngressClassParameters []*ingressv1alpha1.CoxswainIngressClassParameters
	GatewayParameters      []*gatewayv1alpha1.CoxswainGatewayParameters

	// The policy CRDs of gateway.coxswain-labs.dev (policies.go).
	IPAccessControls      []*gatewayv1alpha1.IpAccessControl
	RateLimits            []*gatewayv1alpha1.RateLimit
	BasicAuths            []*gatewayv1alpha1.BasicAuth
	JWTAuths              []*gatewayv1alpha1.JwtAuth
	ExternalAuths         []*gatewayv1alpha1.CoxswainExternalAuth
	Compressions          []*gatewayv1alpha1.Compression
	RequestSizeLimits     []*gatewayv1alpha1.RequestSizeLimit
	PathRewriteRegexes    []*gatewayv1alpha1.PathRewriteRegex
	RetryPolicies         []*gatewayv1alpha1.RetryPolicy
	BackendPolicies       []*gatewayv1alpha1.CoxswainBackendPolicy
	ClientTrafficPolicies []*gatewayv1alpha1.ClientTrafficPolicy

	// IngressProxyProtocol, when set, makes the Ingress listeners require a
	// PROXY protocol header from these sources (and refuse everyone else):
	// the controller's --ingress-accept-proxy-protocol and
	// --ingress-proxy-trusted-sources.
	IngressProxyProtocol []string

	// AbsentKinds names the Gateway API kinds ("TLSRoute", "ListenerSet",
	// ...) whose CRD the cluster does not serve: they are read as empty,
	// and the features that need them are not advertised.
	AbsentKinds []string
	// GatewayAPIChannel is the installed Gateway API release channel
	// ("standard", "experimental"; "" unknown). Features that need fields
	// only the experimental CRDs have are advertised on "experimental"
	// only.
	GatewayAPIChannel string

	// DedicatedDeployments and DedicatedServices are the rendered objects of
	// dedicated Gateways (labels names.DedicatedProxySelector), read for
	// status.addresses and make-before-break.
	DedicatedDeployments []*appsv1.Deployment
	DedicatedServices    []*corev1.Service

	// SharedProxyService, SharedVIPServices and InternalPorts are sorted out
	// of Services by SetServices (ClassifyService).
	//
	// SharedProxyService is the shared pool's public Service (for Ingress
	// status.loadBalancer); nil when absent.
	SharedProxyService *corev1.Service
	// SharedVIPServices are the per-Gateway VIP Services of shared Gateways
	// in the install namespace; they persist InternalPorts.
	SharedVIPServices []*corev1.Service
	// InternalPorts are the assignments already persisted in the VIP
	// Services (see internal/portalloc).
	InternalPorts []portalloc.Assignment
}

// Result is the output of one translation.
type Result struct {
	// Snapshots, sorted by scope string; the SharedPool snapshot is always
	// present (possibly empty).
	Snapshots []*snapshot.Snapshot

	GatewayClasses []GatewayClassStatus
	Gateways       []GatewayStatus
	HTTPRoutes     []RouteStatus
	GRPCRoutes     []RouteStatus
	TLSRoutes      []RouteStatus       `json:",omitempty"`
	TCPRoutes      []RouteStatus       `json:",omitempty"`
	UDPRoutes      []RouteStatus       `json:",omitempty"`
	ListenerSets   []ListenerSetStatus `json:",omitempty"`
	// BackendTLSPolicies that have an ancestor (a Gateway of ours using a
	// Service they select).
	BackendTLSPolicies []PolicyStatus `json:",omitempty"`
	// Policies is the status of our policy CRDs (gateway.coxswain-labs.dev)
	// that have an ancestor, by kind, then namespace/name; the writer owns
	// their ancestors entries of our controller name and drops ours from
	// policies not listed.
	Policies []KindPolicyStatus `json:",omitempty"`
	// GatewayParameters and IngressClassParameters are the status of the
	// parameters objects in use (parameters.go).
	GatewayParameters      []ParametersStatus `json:",omitempty"`
	IngressClassParameters []ParametersStatus `json:",omitempty"`
	// ListenerSetListeners are, per Gateway that takes ListenerSets, the
	// listeners they add (for the Gateway's Services and proxies).
	ListenerSetListeners []GatewayListeners `json:",omitempty"`
	Ingresses            []IngressStatus
	// InternalPorts is the full assignment for shared Gateways.
	InternalPorts []portalloc.Assignment
	// Events to record (InvalidAnnotation, RouteConflict, ...).
	Events []Event

	// endpointSources says which Service port each endpoint set of the
	// snapshots lists the endpoints of (RefreshEndpoints).
	endpointSources *endpointSources
	// endpointSlices are the EndpointSlices the Result was made from, and
	// slicesSorted whether they are in key order (1: yes, -1: no, 0: not
	// known yet): what the next refresh compares its slices with.
	endpointSlices []*discoveryv1.EndpointSlice
	slicesSorted   int8
	// sliceIndex, when set, is the slices of each Service (RefreshEndpoints).
	sliceIndex *sliceIndex
}

// GatewayClassStatus is the desired status of a GatewayClass we own.
type GatewayClassStatus struct {
	types.NamespacedName
	Generation int64
	Status     gwv1.GatewayClassStatus
}

// GatewayStatus is the desired status of a Gateway of one of our classes, a
// GatewayState that a Memo's translations share while it does not change:
// at 1,000 Gateways a list of the states themselves was the largest thing a
// route change allocated. Neither is ever modified.
type GatewayStatus struct {
	*GatewayState
}

// GatewayState is a Gateway's desired status. Programmed reflects the
// snapshot being published; the status writer gates it on the data plane
// once discovery reports binds and acks.
type GatewayState struct {
	types.NamespacedName
	Generation int64
	Status     gwv1.GatewayStatus
	// Scope is the snapshot scope that serves this Gateway.
	Scope snapshot.Scope
}

// RouteStatus is the desired status of one route, a RouteState that a
// Memo's translations share while it does not change: at 10,000 routes a
// list of the states themselves was a quarter of what a route change
// allocated. Neither is ever modified.
type RouteStatus struct {
	*RouteState
}

// RouteState holds only the parents this controller owns
// (controllerName == names.ControllerName); the writer merges them into the
// object's status.parents without touching other controllers' entries.
type RouteState struct {
	types.NamespacedName
	Generation int64
	Parents    []gwv1.RouteParentStatus
}

// IngressStatus is the desired status.loadBalancer of an Ingress we serve.
type IngressStatus struct {
	types.NamespacedName
	LoadBalancer networkingv1.IngressLoadBalancerStatus
}

// KindPolicyStatus is the desired status of one policy object of ours;
// Kind is its kind in gateway.coxswain-labs.dev (gatewayv1alpha1.Kind*).
type KindPolicyStatus struct {
	Kind string
	PolicyStatus
}

// Event is a Kubernetes Event the translation wants recorded.
type Event struct {
	// Kind, Namespace and Name of the regarding object.
	Kind      string
	Namespace string
	Name      string
	Type      string // Normal or Warning
	Reason    string
	Message   string
}
