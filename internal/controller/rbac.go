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

// Package controller holds the controller's reconcilers (the dedicated proxy
// reconciler and its name-conflict rules), the manager's RBAC markers, the
// scheme, and the envtest suite that proves the API surface (CRDs,
// validation, RBAC, samples, install manifests) against a real
// kube-apiserver. The routing pipeline's wiring lives in internal/pipeline.
package controller

// The manager ClusterRole is generated from these markers by `make manifests`
// (config/rbac/role.yaml). It is the controller's whole cluster-wide access:
// read every routing input, write status, provision dedicated proxies, and
// review the tokens proxies present at bootstrap.

// Gateway API: read every route kind and policy input, write their status.
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses;gateways;httproutes;grpcroutes;tlsroutes;tcproutes;udproutes;referencegrants;backendtlspolicies;listenersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses/status;gateways/status;httproutes/status;grpcroutes/status;tlsroutes/status;tcproutes/status;udproutes/status;backendtlspolicies/status;listenersets/status,verbs=get;update;patch

// The HTTPRoute CRD, for the installed Gateway API channel (features that
// need experimental fields are advertised on that channel only).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,resourceNames=httproutes.gateway.networking.k8s.io,verbs=get

// Ingress.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;ingressclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/status,verbs=get;update;patch

// Backends, certificates and namespaces (for allowedRoutes selectors).
// +kubebuilder:rbac:groups="",resources=services;secrets;namespaces;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

// Coxswain's own parameter CRDs.
// +kubebuilder:rbac:groups=gateway.coxswain-labs.dev,resources=coxswaingatewayparameters,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.coxswain-labs.dev,resources=coxswaingatewayparameters/status,verbs=get;update;patch
// The policy CRDs (internal/translator/policy*.go); the status writer owns their status.ancestors entries.
// +kubebuilder:rbac:groups=gateway.coxswain-labs.dev,resources=ipaccesscontrols;ratelimits;basicauths;jwtauths;coxswainexternalauths;compressions;requestsizelimits;pathrewriteregexes;retrypolicies;coxswainbackendpolicies;clienttrafficpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.coxswain-labs.dev,resources=ipaccesscontrols/status;ratelimits/status;basicauths/status;jwtauths/status;coxswainexternalauths/status;compressions/status;requestsizelimits/status;pathrewriteregexes/status;retrypolicies/status;coxswainbackendpolicies/status;clienttrafficpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ingress.coxswain-labs.dev,resources=coxswainingressclassparameters,verbs=get;list;watch
// +kubebuilder:rbac:groups=ingress.coxswain-labs.dev,resources=coxswainingressclassparameters/status,verbs=get;update;patch

// Dedicated proxy provisioning (server-side applied, owner-referenced to the Gateway).
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete

// Events for users, TokenReview for proxy bootstrap and (with
// SubjectAccessReview) for the admin API's readers.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
