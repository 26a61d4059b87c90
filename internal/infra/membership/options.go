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

package membership

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Options are the flags every shard service takes.
type Options struct {
	// ShardID is the shard UUID; it must equal spec.shardID.
	ShardID string
	// InfraAddr is the host[:port] (or https:// URL) of the infra-apiserver.
	InfraAddr string
	// InfraInsecure disables TLS verification of the infra-apiserver
	// (development only).
	InfraInsecure bool
}

// BindFlags adds --shard-id, --infra-addr and --infra-insecure.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ShardID, "shard-id", "", "Shard UUID; it must equal spec.shardID of the Projects this service serves.")
	fs.StringVar(&o.InfraAddr, "infra-addr", "", "Address (host:port or https:// URL) of the infra-apiserver that holds the shard's Projects. Empty: the kubeconfig's server.")
	fs.BoolVar(&o.InfraInsecure, "infra-insecure", false, "Disable TLS verification of the infra-apiserver. Development only.")
}

// Validate checks the options.
func (o Options) Validate() error {
	if !uuidRE.MatchString(o.ShardID) {
		return fmt.Errorf("--shard-id must be a lowercase UUID, got %q", o.ShardID)
	}
	return nil
}

// RESTConfig derives the infra-apiserver client config from base (which
// carries the credentials): --infra-addr replaces the server and
// --infra-insecure turns TLS verification off, with a warning.
func (o Options) RESTConfig(base *rest.Config, log logr.Logger) (*rest.Config, error) {
	if base == nil {
		base = &rest.Config{}
	}
	cfg := rest.CopyConfig(base)
	if o.InfraAddr != "" {
		host := o.InfraAddr
		if !strings.Contains(host, "://") {
			host = "https://" + host
		}
		u, err := url.Parse(host)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("--infra-addr %q is not host:port or a URL", o.InfraAddr)
		}
		cfg.Host = host
	}
	if cfg.Host == "" {
		return nil, errors.New("no infra-apiserver address: set --infra-addr or a kubeconfig")
	}
	if o.InfraInsecure {
		log.Info("WARNING: --infra-insecure is set: the infra-apiserver's TLS certificate is not verified. Use only in development.")
		cfg.Insecure = true
		cfg.CAData, cfg.CAFile = nil, ""
	}
	return cfg, nil
}
