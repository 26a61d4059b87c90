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
// names.TrustBundleConfigMapName (key names.TrustBundleKey). A pod can only
// mount ConfigMaps of its own namespace, so the dedicated renderer copies
// the bundle into a ConfigMap named like the other dedicated objects
// ({gateway}-{gatewayclass}) in the Gateway's namespace, owner-referenced to
// the Gateway; the shared pool runs in the install namespace and mounts the
// source ConfigMap directly.
//
// The names shared with the rest of Coxswain (labels, install-namespace
// objects, ports, naming functions) are in internal/names; names.go keeps
// only what the rendered pods alone agree on.
package provision

import "github.com/coxswain-go/coxswain/internal/names"

// What only the rendered pods agree on.
const (
	// ProxyContainerName is the name of the proxy container in every proxy pod.
	ProxyContainerName = "coxswain"

	// TokenVolumeName is the projected ServiceAccount token volume, mounted at
	// TokenMountPath; the token file is TokenPath.
	TokenVolumeName        = "discovery-token"
	TokenMountPath         = "/var/run/secrets/coxswain/token" //nolint:gosec // G101: a mount path, not a credential
	TokenPath              = TokenMountPath + "/token"
	TokenExpirationSeconds = int64(3600)

	// TrustVolumeName mounts the discovery CA bundle at TrustMountPath; the
	// bundle file is TrustBundlePath.
	TrustVolumeName = "trust-bundle"
	TrustMountPath  = "/var/run/secrets/coxswain/trust"
	TrustBundlePath = TrustMountPath + "/" + names.TrustBundleKey

	// UnprivilegedPortSysctl lets the non-root proxy bind ports below 1024.
	UnprivilegedPortSysctl = "net.ipv4.ip_unprivileged_port_start"

	// Environment variables the proxy reads for the logging parameters.
	EnvLogLevel  = "COXSWAIN_LOG_LEVEL"
	EnvAccessLog = "COXSWAIN_ACCESS_LOG"

	// EventPodTemplateSanitized is the reason of the Warning Event that lists
	// what the security envelope dropped from a podTemplate.
	EventPodTemplateSanitized = "PodTemplateSanitized"

	// sharedPoolInstanceValue is the instance label of the shared pool.
	sharedPoolInstanceValue = names.SharedPoolName
)
