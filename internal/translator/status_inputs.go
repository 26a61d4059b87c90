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
	networkingv1 "k8s.io/api/networking/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
)

// IgnoresStatus reports whether Translate never reads the status of obj's
// kind (statuses our own writer sets, mostly): for these kinds, an update
// that changes no generation, label, annotation or deletionTimestamp
// changes no translation. Services, EndpointSlices and Deployments are
// not among them: their status, or spec without a generation, matters.
func IgnoresStatus(obj any) bool {
	switch obj.(type) {
	case *gwv1.GatewayClass, *gwv1.Gateway, *gwv1.HTTPRoute, *gwv1.GRPCRoute,
		*gwv1.TLSRoute, *gwv1.TCPRoute, *gwv1.UDPRoute, *gwv1.ListenerSet, *gwv1.BackendTLSPolicy, *networkingv1.Ingress,
		*gatewayv1alpha1.IpAccessControl, *gatewayv1alpha1.RateLimit, *gatewayv1alpha1.BasicAuth,
		*gatewayv1alpha1.JwtAuth, *gatewayv1alpha1.CoxswainExternalAuth, *gatewayv1alpha1.Compression,
		*gatewayv1alpha1.RequestSizeLimit, *gatewayv1alpha1.PathRewriteRegex, *gatewayv1alpha1.RetryPolicy,
		*gatewayv1alpha1.CoxswainBackendPolicy, *gatewayv1alpha1.ClientTrafficPolicy:
		return true
	}
	return false
}
