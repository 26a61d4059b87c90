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
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/describe"
)

// newDescribeCommand is `coxswain describe gateway|httproute|ingress
// NS/NAME` (installed as kubectl-coxswain it is also `kubectl coxswain
// describe ...`): how Coxswain sees the object, in plain words; the exit
// status is 1 when something is wrong.
func newDescribeCommand() *cobra.Command {
	var kubeconfig string
	c := &cobra.Command{
		Use:   "describe gateway|httproute|ingress NAMESPACE/NAME",
		Short: "Explain how Coxswain sees a Gateway, HTTPRoute or Ingress (exit 1 when something is wrong)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[1], "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("%q: want NAMESPACE/NAME", args[1])
			}
			var fn func(context.Context, client.Reader, string, string) (*describe.Report, error)
			switch strings.ToLower(args[0]) {
			case "gateway", "gateways", "gtw":
				fn = describe.Gateway
			case "httproute", "httproutes":
				fn = describe.HTTPRoute
			case "ingress", "ingresses", "ing":
				fn = describe.Ingress
			default:
				return fmt.Errorf("%q: want gateway, httproute or ingress", args[0])
			}
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			cl, err := client.New(cfg, client.Options{Scheme: controller.NewScheme()})
			if err != nil {
				return err
			}
			rep, err := fn(cmd.Context(), cl, ns, name)
			if err != nil {
				return err
			}
			if _, err := rep.WriteTo(cmd.OutOrStdout()); err != nil {
				return err
			}
			if rep.Problems > 0 {
				return fmt.Errorf("%d problems found", rep.Problems)
			}
			return nil
		},
	}
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	c.SilenceUsage = true
	return c
}
