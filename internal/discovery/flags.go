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

package discovery

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Default paths of what a proxy pod mounts.
const (
	DefaultTokenPath       = "/var/run/secrets/coxswain/discovery-token/token" //nolint:gosec // G101: where the projected token is mounted, not a credential
	DefaultTrustBundlePath = "/var/run/secrets/coxswain/discovery-trust/ca.crt"
)

// ProxyFlags are the discovery flags of `serve proxy`.
type ProxyFlags struct {
	Endpoints                string
	BootstrapEndpoint        string
	TokenPath                string
	TrustBundlePath          string
	TrustDomain              string
	ControllerNamespace      string
	ControllerServiceAccount string
}

// AddFlags registers the flags with their defaults.
func (f *ProxyFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Endpoints, "discovery-endpoint", "",
		"Comma-separated discovery stream endpoints, https://host:port (e.g. "+names.DiscoveryEndpoint(names.DefaultInstallNamespace)+").")
	fs.StringVar(&f.BootstrapEndpoint, "discovery-bootstrap-endpoint",
		names.BootstrapEndpoint(names.DefaultInstallNamespace),
		"SVID bootstrap endpoint, https://host:port.")
	fs.StringVar(&f.TokenPath, "discovery-token-path", DefaultTokenPath,
		"Projected ServiceAccount token with audience "+names.TokenAudience+", presented once per SVID bootstrap.")
	fs.StringVar(&f.TrustBundlePath, "discovery-trust-bundle", DefaultTrustBundlePath,
		"PEM roots of the discovery CA (the "+names.TrustBundleConfigMapName+" ConfigMap).")
	fs.StringVar(&f.TrustDomain, "discovery-trust-domain", DefaultTrustDomain, "SPIFFE trust domain of the discovery CA.")
	fs.StringVar(&f.ControllerNamespace, "discovery-controller-namespace", names.DefaultInstallNamespace,
		"Namespace of the controller, whose SVID both discovery endpoints must present.")
	fs.StringVar(&f.ControllerServiceAccount, "discovery-controller-service-account", names.ControllerServiceAccount,
		"ServiceAccount of the controller, whose SVID both discovery endpoints must present.")
}

// ClientOptions turns the flags into client options for a proxy of scope
// named nodeID; the caller adds Applier, Readiness, Registerer and Log.
func (f *ProxyFlags) ClientOptions(scope snapshot.Scope, nodeID string) (ClientOptions, error) {
	eps := ParseEndpoints(f.Endpoints)
	if len(eps) == 0 {
		return ClientOptions{}, errors.New("--discovery-endpoint is required")
	}
	td, err := spiffeid.TrustDomainFromString(f.TrustDomain)
	if err != nil {
		return ClientOptions{}, fmt.Errorf("--discovery-trust-domain: %w", err)
	}
	serverID, err := ServiceAccountID(td, f.ControllerNamespace, f.ControllerServiceAccount)
	if err != nil {
		return ClientOptions{}, fmt.Errorf("controller identity: %w", err)
	}
	return ClientOptions{
		Endpoints:         eps,
		BootstrapEndpoint: f.BootstrapEndpoint,
		TokenPath:         f.TokenPath,
		TrustBundlePath:   f.TrustBundlePath,
		ServerID:          serverID,
		Scope:             scope,
		NodeID:            nodeID,
	}, nil
}
