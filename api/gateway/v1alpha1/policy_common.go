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
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The policy kinds of this group. Route policies (IpAccessControl,
// RateLimit, BasicAuth, JwtAuth, CoxswainExternalAuth, Compression,
// RequestSizeLimit, RetryPolicy) attach by targetRefs to a Gateway (with an
// optional listener sectionName), an HTTPRoute or a GRPCRoute (with an
// optional rule name), or by an HTTPRoute rule's ExtensionRef filter;
// PathRewriteRegex only by ExtensionRef. CoxswainBackendPolicy targets
// Services, ClientTrafficPolicy Gateways. docs/policies.md has the
// precedence and merge rules.
const (
	KindIPAccessControl     = "IpAccessControl"
	KindRateLimit           = "RateLimit"
	KindBasicAuth           = "BasicAuth"
	KindJWTAuth             = "JwtAuth"
	KindExternalAuth        = "CoxswainExternalAuth"
	KindCompression         = "Compression"
	KindRequestSizeLimit    = "RequestSizeLimit"
	KindPathRewriteRegex    = "PathRewriteRegex"
	KindRetryPolicy         = "RetryPolicy"
	KindBackendPolicy       = "CoxswainBackendPolicy"
	KindClientTrafficPolicy = "ClientTrafficPolicy"
)

// RoutePolicyTargets attach a route policy. Empty targetRefs are fine for a
// policy used only through ExtensionRef filters.
type RoutePolicyTargets struct {
	// TargetRefs are the Gateways (sectionName: a listener), HTTPRoutes and
	// GRPCRoutes (sectionName: a rule name) of the policy's namespace it
	// applies to.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == 'gateway.networking.k8s.io' && r.kind in ['Gateway', 'HTTPRoute', 'GRPCRoute'])",message="targetRefs must be Gateways, HTTPRoutes or GRPCRoutes of gateway.networking.k8s.io"
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs,omitempty"`
}
