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

// Package discovery is the control channel between the controller and its
// proxies: the leader-only mTLS snapshot stream and the identity bootstrap
// that every controller replica serves. These names are interface facts that
// manifests, proxies and the controller must agree on.
package discovery

const (
	// StreamPort serves the snapshot stream (mTLS, leader only).
	StreamPort = 50051
	// BootstrapPort serves SVID bootstrap (server-auth TLS, every replica).
	BootstrapPort = 50052

	// StreamServiceName routes to the leader only.
	StreamServiceName = "coxswain-controller-discovery"
	// BootstrapServiceName routes to every controller replica.
	BootstrapServiceName = "coxswain-controller-discovery-bootstrap"

	// LeaderLabel marks the controller pod that holds the Lease.
	LeaderLabel = "discovery.coxswain-labs.dev/leader"
	// TokenAudience is the audience of the projected token a proxy presents.
	TokenAudience = "coxswain-discovery"
	// CASecretName holds the discovery CA, in the controller's namespace.
	CASecretName = "coxswain-discovery-ca"
	// TrustConfigMapName holds the CA's public roots (key ca.crt), in the
	// controller's namespace, for proxies to mount as their trust bundle.
	TrustConfigMapName = "coxswain-discovery-trust"
)
