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
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/admin"
	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/describe"
)

// newDescribeCommand is `coxswain describe gateway|httproute|ingress
// NS/NAME` (installed as kubectl-coxswain it is also `kubectl coxswain
// describe ...`): how Coxswain sees the object, in plain words; the exit
// status is 1 when something is wrong.
func newDescribeCommand() *cobra.Command {
	var kubeconfig, adminURL, adminToken string
	var adminInsecure bool
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
			isGateway := false
			switch strings.ToLower(args[0]) {
			case "gateway", "gateways", "gtw":
				fn, isGateway = describe.Gateway, true
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
			if isGateway {
				if err := describeProxies(cmd.Context(), rep, cl, ns, name, adminURL, adminToken, cfg.BearerToken, adminInsecure); err != nil {
					return err
				}
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
	c.Flags().StringVar(&adminURL, "admin-url", os.Getenv("COXSWAIN_ADMIN_URL"),
		"The controller's admin API (e.g. https://localhost:8085 through kubectl port-forward); with it, a Gateway's report lists the proxies serving it and their generations. Default: $COXSWAIN_ADMIN_URL.")
	c.Flags().StringVar(&adminToken, "admin-token", os.Getenv("COXSWAIN_ADMIN_TOKEN"),
		"Bearer token for the admin API. Default: $COXSWAIN_ADMIN_TOKEN, else the kubeconfig's token.")
	c.Flags().BoolVar(&adminInsecure, "admin-insecure-skip-tls-verify", false, "Accept the admin port's self-signed certificate.")
	c.SilenceUsage = true
	return c
}

// describeProxies adds the fleet's proxies of Gateway ns/name to rep when
// an admin URL is known; without one it says how to get them.
func describeProxies(ctx context.Context, rep *describe.Report, cl client.Reader, ns, name, url, token, kubeToken string, insecure bool) error {
	if url == "" {
		rep.Lines = append(rep.Lines, "  proxies: pass --admin-url (the controller's admin API) to list the proxies serving this Gateway and their generations")
		return nil
	}
	if token == "" {
		token = kubeToken
	}
	gw := &gwv1.Gateway{}
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, gw); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	if insecure {
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // asked for with --admin-insecure-skip-tls-verify
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/api/v1/fleet", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reading the fleet from %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading the fleet from %s: %s", url, resp.Status)
	}
	var fleet admin.FleetView
	if err := json.NewDecoder(resp.Body).Decode(&fleet); err != nil {
		return fmt.Errorf("reading the fleet from %s: %w", url, err)
	}
	rep.Proxies(fleet, ns, name, gw.Generation)
	return nil
}
