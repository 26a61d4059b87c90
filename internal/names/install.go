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

import (
	"fmt"
	"strconv"
)

// The controller's identity.
const (
	// ControllerName is the GatewayClass and IngressClass controllerName
	// Coxswain serves.
	ControllerName = "coxswain-labs.dev/gateway-controller"

	// FieldManager is the server-side apply field manager of every object
	// the controller applies, and the source of its Events.
	FieldManager = "coxswain-controller"

	// ParametersGroup and ParametersKind identify CoxswainGatewayParameters
	// in a parametersRef; IngressParametersGroup and IngressParametersKind
	// identify CoxswainIngressClassParameters.
	ParametersGroup        = "gateway.coxswain-labs.dev"
	ParametersKind         = "CoxswainGatewayParameters"
	IngressParametersGroup = "ingress.coxswain-labs.dev"
	IngressParametersKind  = "CoxswainIngressClassParameters"
)

// The install namespace and the objects in it that more than one part of
// Coxswain (and the manifests) name.
const (
	// DefaultInstallNamespace is where the controller runs when it cannot
	// tell (no $POD_NAMESPACE), and where proxies look for it by default.
	DefaultInstallNamespace = "coxswain-system"

	// EventSource is the component of every Event the controller records.
	EventSource = "coxswain-controller"
	// ControllerDeploymentName names the controller's Deployment.
	ControllerDeploymentName = "coxswain-controller"
	// ControllerContainerName is the controller's container in its Pod.
	ControllerContainerName = "coxswain"
	// ProxyImageEnv is the controller's environment variable that every
	// install path sets to the controller container's own image; it is the
	// default image of the proxies the controller provisions.
	ProxyImageEnv = "COXSWAIN_PROXY_IMAGE"
	// ProxyBinaryName is the data-plane binary's file name, beside the
	// coxswain binary in the image (/coxswain-proxy) and in bin/: the
	// proxy built without the controller's packages, which coxswain
	// `serve proxy` hands over to when it finds it.
	ProxyBinaryName = "coxswain-proxy"

	// LeaseName is the Lease the controller replicas compete for.
	LeaseName = "coxswain-leader-lock"
	// ControllerServiceAccount is the controller's ServiceAccount; its SVID
	// is the identity proxies expect from both discovery endpoints.
	ControllerServiceAccount = "coxswain-controller"

	// CASecretName holds the discovery CA.
	CASecretName = "coxswain-discovery-ca"
	// TrustBundleConfigMapName holds the discovery CA's public roots under
	// TrustBundleKey, for proxies to mount as their trust bundle (the
	// dedicated renderer copies it into each Gateway's namespace).
	TrustBundleConfigMapName = "coxswain-discovery-trust"
	TrustBundleKey           = "ca.crt"

	// DiscoveryStreamServiceName routes to the leader only (see LeaderLabel).
	DiscoveryStreamServiceName = "coxswain-controller-discovery"
	// DiscoveryBootstrapServiceName routes to every controller replica.
	DiscoveryBootstrapServiceName = "coxswain-controller-discovery-bootstrap"

	// SharedPoolName names the shared proxy Deployment; its ServiceAccount
	// and its public (Ingress) Service are named alike.
	SharedPoolName            = "coxswain-shared-proxy"
	SharedProxyServiceAccount = SharedPoolName
	SharedProxyServiceName    = SharedPoolName
	// SharedInternalServiceName is the shared pool's internal (health and
	// metrics) Service.
	SharedInternalServiceName = "coxswain-shared-proxy-internal"
)

// Ports. They are untyped so that they serve as int and int32 alike.
const (
	// DiscoveryStreamPort serves the snapshot stream (mTLS, leader only).
	DiscoveryStreamPort = 50051
	// DiscoveryBootstrapPort serves SVID bootstrap (server-auth TLS, every
	// replica).
	DiscoveryBootstrapPort = 50052
	// HealthPort serves /healthz and /readyz; MetricsPort serves /metrics,
	// in the controller and in every proxy.
	HealthPort  = 8081
	MetricsPort = 8083
	// AdminPort serves the controller's admin API and dashboard (HTTPS,
	// off unless --admin-bind-address names it).
	AdminPort = 8085
)

// TokenAudience is the audience of the projected ServiceAccount token a
// proxy presents to the bootstrap server.
const TokenAudience = "coxswain-discovery"

// DiscoveryEndpoint is the URL of the leader-only snapshot stream Service of
// the controller installed in installNS.
func DiscoveryEndpoint(installNS string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", DiscoveryStreamServiceName, installNS, DiscoveryStreamPort)
}

// BootstrapEndpoint is the URL of the every-replica SVID bootstrap Service of
// the controller installed in installNS.
func BootstrapEndpoint(installNS string) string {
	return fmt.Sprintf("https://%s.%s.svc:%d", DiscoveryBootstrapServiceName, installNS, DiscoveryBootstrapPort)
}

// BindAddress is the listen address of port on every interface (":port"),
// the default of a bind-address flag.
func BindAddress(port int) string { return ":" + strconv.Itoa(port) }
