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

package cmd

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/coxswain-go/coxswain/internal/proxy"
)

func newProxyCommand() *cobra.Command {
	var shared, dedicated bool
	cfg := proxy.Config{}
	c := &cobra.Command{
		Use:   "proxy (--shared | --dedicated --gateway-name NAME --gateway-namespace NS)",
		Short: "Run a proxy: the data plane, with no Kubernetes credentials",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case shared && !dedicated:
				cfg.Mode = proxy.ModeShared
			case dedicated && !shared:
				cfg.Mode = proxy.ModeDedicated
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			ctrl.Log.WithName("proxy").Info("starting proxy", "mode", cfg.Mode,
				"gateway", cfg.GatewayNamespace+"/"+cfg.GatewayName, "health", cfg.HealthAddr, "metrics", cfg.MetricsAddr)
			return proxy.Run(cmd.Context(), cfg, proxy.NewReadiness("no routing snapshot applied yet"))
		},
	}
	f := c.Flags()
	f.BoolVar(&shared, "shared", false, "Serve the shared pool: every Ingress and every Gateway without dedicated proxies.")
	f.BoolVar(&dedicated, "dedicated", false, "Serve one Gateway only (with --gateway-name and --gateway-namespace).")
	f.StringVar(&cfg.GatewayName, "gateway-name", "", "Name of the Gateway a dedicated proxy serves.")
	f.StringVar(&cfg.GatewayNamespace, "gateway-namespace", "", "Namespace of the Gateway a dedicated proxy serves.")
	f.StringVar(&cfg.HealthAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	f.StringVar(&cfg.MetricsAddr, "metrics-bind-address", ":8083", "Address of the /metrics endpoint.")
	c.MarkFlagsMutuallyExclusive("shared", "dedicated")
	return c
}
