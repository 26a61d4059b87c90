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
	"slices"
	"sort"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// SupportedFeatures is what GatewayClass status.supportedFeatures
// advertises when every Gateway API kind is installed, sorted by name. The
// proxy's tests check their coverage against this list; FeaturesFor
// shrinks it to the kinds a cluster serves.
var SupportedFeatures = sortedFeatures(
	features.SupportGateway,
	features.SupportHTTPRoute,
	features.SupportReferenceGrant,
	features.SupportGRPCRoute,
	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteNamedRouteRule,
	// CORS is in the v1.6 standard channel (features.HTTPRouteCORS.Channel).
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryBackendTimeout,
	features.SupportHTTPRouteRetryConnectionError,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportGRPCRouteNamedRouteRule,
	features.SupportListenerSet,
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,
	features.SupportGatewayFrontendClientCertificateValidation,
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportGatewayBackendClientCertificate,
	features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportGatewayStaticAddresses,
	features.SupportGatewayAddressEmpty,
	features.SupportGatewayInfrastructure,
	features.SupportTLSRoute,
	features.SupportTLSRouteModeTerminate,
	features.SupportTLSRouteModeMixed,
	features.SupportTCPRoute,
	features.SupportUDPRoute,
)

// featuresOfKind are the features that need a kind's CRD: without it
// installed (an older Gateway API, or a channel that lacks it) the kind is
// read as empty and its features are not advertised.
var featuresOfKind = map[string][]features.FeatureName{
	kindGRPCRoute:        {features.SupportGRPCRoute, features.SupportGRPCRouteNamedRouteRule},
	kindTLSRoute:         {features.SupportTLSRoute, features.SupportTLSRouteModeTerminate, features.SupportTLSRouteModeMixed},
	kindTCPRoute:         {features.SupportTCPRoute},
	kindUDPRoute:         {features.SupportUDPRoute},
	kindReferenceGrant:   {features.SupportReferenceGrant},
	kindListenerSet:      {features.SupportListenerSet},
	kindBackendTLSPolicy: {features.SupportBackendTLSPolicy, features.SupportBackendTLSPolicySANValidation},
}

// experimentalFields are the features that need fields only the
// experimental channel's CRDs have: on the standard channel the apiserver
// drops HTTPRoute rules[].retry, so retries cannot be configured there.
var experimentalFields = []features.FeatureName{
	features.SupportHTTPRouteRetry, features.SupportHTTPRouteRetryBackendTimeout, features.SupportHTTPRouteRetryConnectionError,
}

// FeaturesFor is SupportedFeatures without the features of absent kinds
// (Resources.AbsentKinds) and, unless the channel is experimental, of
// experimental fields.
func FeaturesFor(absent []string, channel string) []gwv1.FeatureName {
	drop := map[gwv1.FeatureName]bool{}
	if channel != "experimental" {
		for _, f := range experimentalFields {
			drop[gwv1.FeatureName(f)] = true
		}
	}
	for _, k := range absent {
		for _, f := range featuresOfKind[k] {
			drop[gwv1.FeatureName(f)] = true
		}
	}
	out := make([]gwv1.FeatureName, 0, len(SupportedFeatures))
	for _, f := range SupportedFeatures {
		if !drop[f] {
			out = append(out, f)
		}
	}
	return out
}

func sortedFeatures(names ...features.FeatureName) []gwv1.FeatureName {
	out := make([]gwv1.FeatureName, 0, len(names))
	for _, n := range names {
		out = append(out, gwv1.FeatureName(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// dedicatedOnly are the features only a class whose Gateways get proxies
// of their own supports: GatewayInfrastructure propagates
// spec.infrastructure to objects in the Gateway's namespace, and a shared
// Gateway has none there (its VIP Service, which does carry them, lives in
// the install namespace).
var dedicatedOnly = []gwv1.FeatureName{gwv1.FeatureName(features.SupportGatewayInfrastructure)}

// supportedFeatureList is a class's status.supportedFeatures: FeaturesFor
// absent and channel, without dedicatedOnly unless the class is dedicated.
func supportedFeatureList(absent []string, channel string, dedicated bool) []gwv1.SupportedFeature {
	fs := FeaturesFor(absent, channel)
	out := make([]gwv1.SupportedFeature, 0, len(fs))
	for _, n := range fs {
		if !dedicated && slices.Contains(dedicatedOnly, n) {
			continue
		}
		out = append(out, gwv1.SupportedFeature{Name: n})
	}
	return out
}
