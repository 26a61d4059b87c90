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

package names

// Label keys and values of the objects Coxswain renders.
const (
	LabelName             = "app.kubernetes.io/name"
	LabelInstance         = "app.kubernetes.io/instance"
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	LabelComponent        = "app.kubernetes.io/component"
	LabelGatewayName      = "gateway.networking.k8s.io/gateway-name"
	LabelGatewayNamespace = "gateway.coxswain-labs.dev/gateway-namespace"

	// LeaderLabel marks the controller pod that holds the Lease, so the
	// leader-only discovery Service routes to it.
	LeaderLabel = "discovery.coxswain-labs.dev/leader"

	ValueName      = "coxswain"
	ValueManagedBy = "coxswain"

	// Values of LabelComponent.
	ComponentDedicatedProxy = "dedicated-proxy"
	ComponentSharedProxy    = "shared-proxy"
	ComponentSharedVIP      = "shared-vip"
	ComponentDiscoveryCA    = "discovery-ca"
	ComponentDiscoveryTrust = "discovery-trust"
)

// AnnotationGateway records "<namespace>/<name>" of the Gateway a shared VIP
// Service belongs to (label values are capped at 63 characters, so the
// labels alone cannot always name it).
const AnnotationGateway = "gateway.coxswain-labs.dev/gateway"

// DedicatedProxySelector selects every object rendered for dedicated proxies,
// of any Gateway.
func DedicatedProxySelector() map[string]string {
	return map[string]string{LabelManagedBy: ValueManagedBy, LabelComponent: ComponentDedicatedProxy}
}

// SharedVIPSelector selects every shared VIP Service (they live in the
// install namespace).
func SharedVIPSelector() map[string]string {
	return map[string]string{LabelManagedBy: ValueManagedBy, LabelComponent: ComponentSharedVIP}
}

// LabelValue returns v when it fits in a label value, else a truncated prefix
// plus a short hash of v, so long Gateway names still give unique labels.
func LabelValue(v string) string {
	if len(v) <= maxLabelValueLength {
		return v
	}
	return hashedLabel("", v, v)
}
