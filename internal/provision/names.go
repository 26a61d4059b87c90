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

// Package provision renders the Kubernetes objects that run Coxswain's
// proxies: the dedicated proxies of a Gateway (Deployment, Service,
// ServiceAccount, trust-bundle ConfigMap, and optionally a
// HorizontalPodAutoscaler and a PodDisruptionBudget) and the shared proxy pool
// with its per-Gateway VIP Services.
//
// Everything here is pure: no client, no clock, no randomness. The same input
// always renders byte-identical objects, which the reconciler server-side
// applies and the golden tests in testdata/ pin down.
//
// Trust bundle: a proxy must verify the controller's discovery endpoints
// before it has an SVID, so it needs the discovery CA bundle on disk. The
// bundle is published in the install namespace as the ConfigMap
// TrustBundleConfigMapName (key TrustBundleKey). A pod can only mount
// ConfigMaps of its own namespace, so the dedicated renderer copies the
// bundle into a ConfigMap named like the other dedicated objects
// ({gateway}-{gatewayclass}) in the Gateway's namespace, owner-referenced to
// the Gateway; the shared pool runs in the install namespace and mounts the
// source ConfigMap directly.
package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Discovery names, mirrored from internal/discovery (doc.go) so that this
// pure package does not link the discovery server; names_test.go checks
// that they agree.
const (
	discoveryStreamServiceName    = "coxswain-controller-discovery"
	discoveryStreamPort           = 50051
	discoveryBootstrapServiceName = "coxswain-controller-discovery-bootstrap"
	discoveryBootstrapPort        = 50052
	// TokenAudience is the audience of the projected token a proxy presents.
	TokenAudience = "coxswain-discovery"
)

const (
	// ControllerName is the GatewayClass controllerName this package serves.
	ControllerName = "coxswain-labs.dev/gateway-controller"

	// FieldManager is the server-side apply field manager of rendered objects.
	FieldManager = "coxswain-controller"

	// ParametersGroup and ParametersKind identify CoxswainGatewayParameters in
	// a parametersRef.
	ParametersGroup = "gateway.coxswain-labs.dev"
	ParametersKind  = "CoxswainGatewayParameters"

	// ProxyContainerName is the name of the proxy container in every proxy pod.
	ProxyContainerName = "coxswain"

	// HealthPort serves /healthz and /readyz; MetricsPort serves /metrics.
	HealthPort  int32 = 8081
	MetricsPort int32 = 8083

	// TokenVolumeName is the projected ServiceAccount token volume, mounted at
	// TokenMountPath; the token file is TokenPath.
	TokenVolumeName        = "discovery-token"
	TokenMountPath         = "/var/run/secrets/coxswain/token"
	TokenPath              = TokenMountPath + "/token"
	TokenExpirationSeconds = int64(3600)

	// TrustBundleConfigMapName is the ConfigMap in the install namespace that
	// holds the discovery CA bundle under TrustBundleKey. The dedicated
	// renderer copies it into the Gateway's namespace.
	TrustBundleConfigMapName = "coxswain-discovery-trust"
	TrustBundleKey           = "ca.crt"
	TrustVolumeName          = "trust-bundle"
	TrustMountPath           = "/var/run/secrets/coxswain/trust"
	TrustBundlePath          = TrustMountPath + "/" + TrustBundleKey

	// UnprivilegedPortSysctl lets the non-root proxy bind ports below 1024.
	UnprivilegedPortSysctl = "net.ipv4.ip_unprivileged_port_start"

	// SharedPoolName names the shared proxy Deployment and ServiceAccount;
	// SharedInternalServiceName its internal (health and metrics) Service.
	SharedPoolName            = "coxswain-shared-proxy"
	SharedInternalServiceName = "coxswain-shared-proxy-internal"

	// Environment variables the proxy reads for the logging parameters.
	EnvLogLevel  = "COXSWAIN_LOG_LEVEL"
	EnvAccessLog = "COXSWAIN_ACCESS_LOG"

	// EventPodTemplateSanitized is the reason of the Warning Event that lists
	// what the security envelope dropped from a podTemplate.
	EventPodTemplateSanitized = "PodTemplateSanitized"
)

// Label keys and values.
const (
	LabelName             = "app.kubernetes.io/name"
	LabelInstance         = "app.kubernetes.io/instance"
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	LabelComponent        = "app.kubernetes.io/component"
	LabelGatewayName      = "gateway.networking.k8s.io/gateway-name"
	LabelGatewayNamespace = "gateway.coxswain-labs.dev/gateway-namespace"

	// AnnotationGateway records "<namespace>/<name>" of the Gateway a shared
	// VIP Service belongs to (label values are capped at 63 characters, so
	// the labels alone cannot always name it).
	AnnotationGateway = "gateway.coxswain-labs.dev/gateway"

	ValueName                = "coxswain"
	ValueManagedBy           = "coxswain"
	ComponentDedicatedProxy  = "dedicated-proxy"
	ComponentSharedProxy     = "shared-proxy"
	ComponentSharedVIP       = "shared-vip"
	sharedPoolInstanceValue  = SharedPoolName
	maxLabelValueLength      = 63
	maxDNSLabelLength        = 63
	vipNamePrefix            = "gw-"
	vipNameReadableMaxLength = 50
)

// DiscoveryEndpoint is the URL of the leader-only snapshot stream Service.
func DiscoveryEndpoint(installNS string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", discoveryStreamServiceName, installNS, discoveryStreamPort)
}

// BootstrapEndpoint is the URL of the every-replica SVID bootstrap Service.
func BootstrapEndpoint(installNS string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", discoveryBootstrapServiceName, installNS, discoveryBootstrapPort)
}

// DedicatedName is the name of every dedicated object of a Gateway (and of
// the ServiceAccount its proxies present): "{gateway}-{gatewayclass}".
func DedicatedName(gatewayName, className string) string {
	return gatewayName + "-" + className
}

// DedicatedServiceName is the name of a Gateway's dedicated Service. It is
// DedicatedName when that is a valid DNS-1035 label (Service names must be);
// otherwise a readable prefix plus a short hash of DedicatedName.
func DedicatedServiceName(gatewayName, className string) string {
	n := DedicatedName(gatewayName, className)
	if isDNS1035Label(n) {
		return n
	}
	return hashedLabel("gw-", n, n)
}

// LabelValue returns v when it fits in a label value, else a truncated prefix
// plus a short hash of v, so long Gateway names still give unique labels.
func LabelValue(v string) string {
	if len(v) <= maxLabelValueLength {
		return v
	}
	return hashedLabel("", v, v)
}

// VIPServiceName is the deterministic name (a DNS-1035 label of at most 63
// characters) of the shared VIP Service of Gateway namespace/name.
func VIPServiceName(namespace, name string) string {
	return hashedLabel(vipNamePrefix, namespace+"-"+name, namespace+"/"+name)
}

// hashedLabel builds prefix + sanitized(readable) truncated so that the
// result with "-" and 8 hex characters of sha256(hashOf) is ≤ 63 characters.
func hashedLabel(prefix, readable, hashOf string) string {
	sum := sha256.Sum256([]byte(hashOf))
	h := hex.EncodeToString(sum[:])[:8]
	var b strings.Builder
	for _, r := range strings.ToLower(readable) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	maxReadable := maxDNSLabelLength - len(prefix) - 1 - len(h)
	if maxReadable > vipNameReadableMaxLength {
		maxReadable = vipNameReadableMaxLength
	}
	if len(s) > maxReadable {
		s = s[:maxReadable]
	}
	s = strings.Trim(s, "-")
	if prefix == "" && (s == "" || s[0] < 'a' || s[0] > 'z') {
		prefix = "x"
	}
	if s == "" {
		return prefix + h
	}
	return prefix + s + "-" + h
}

func isDNS1035Label(s string) bool {
	if len(s) == 0 || len(s) > maxDNSLabelLength {
		return false
	}
	if s[0] < 'a' || s[0] > 'z' {
		return false
	}
	last := s[len(s)-1]
	if (last < 'a' || last > 'z') && (last < '0' || last > '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
