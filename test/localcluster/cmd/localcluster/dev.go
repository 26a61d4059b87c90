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

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/coxswain-go/coxswain/test/localcluster"
)

// demoBackends are the echo-basic Deployments and Services the samples
// route to (config/samples: HTTPRoute web -> api:8080 and frontend:80,
// Ingress shop -> shop:80).
const demoBackends = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: {{NAME}}, namespace: default, labels: {app: {{NAME}}}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{NAME}}}}
  template:
    metadata: {labels: {app: {{NAME}}}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.5.1
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: SERVICE_NAME, value: {{NAME}}}
---
apiVersion: v1
kind: Service
metadata: {name: {{NAME}}, namespace: default}
spec:
  selector: {app: {{NAME}}}
  ports: [{name: http, port: {{PORT}}, targetPort: 3000}]
`

type devOptions struct {
	cfg          localcluster.Config
	repo         string
	gatewayCRDs  string
	waitTimeout  time.Duration
	startTimeout time.Duration
	check        bool
}

func newDevCommand() *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start the cluster, install Coxswain (controller and proxies run as local pods), the samples and demo backends; print curl commands",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.cfg.AssetsDir, "assets", "", "directory with etcd, kube-apiserver, kube-controller-manager and kubectl")
	f.StringVar(&o.cfg.Dir, "dir", "", "work directory, wiped at start")
	f.StringVar(&o.cfg.Binaries.EchoBasic, "echo-basic", os.Getenv("LOCALCLUSTER_ECHO_BASIC"), "echo-basic binary (env LOCALCLUSTER_ECHO_BASIC)")
	f.StringVar(&o.cfg.Binaries.Coxswain, "coxswain", os.Getenv("LOCALCLUSTER_COXSWAIN"), "coxswain binary (env LOCALCLUSTER_COXSWAIN)")
	f.StringVar(&o.repo, "repo", ".", "repository root (config/default and config/samples are applied from it)")
	f.StringVar(&o.gatewayCRDs, "gateway-api-crds", "", "directory of the Gateway API CRDs to install (standard channel of the gateway-api module)")
	f.DurationVar(&o.waitTimeout, "wait-timeout", 3*time.Minute, "how long to wait for the controller, the proxies and Programmed")
	f.DurationVar(&o.startTimeout, "start-timeout", 2*time.Minute, "bound on cluster startup")
	f.DurationVar(&o.cfg.LockWait, "lock-wait", 0, "wait this long for another local cluster on this machine to stop (0: fail at once)")
	f.BoolVar(&o.check, "check", false, "send the printed requests, check each reaches its backend, then stop (exit status 1 on failure)")
	return cmd
}

func runDev(parent context.Context, o devOptions) error {
	if o.cfg.Binaries.Coxswain == "" || o.cfg.Binaries.EchoBasic == "" {
		return errors.New("dev needs --coxswain and --echo-basic (make dev builds and passes both)")
	}
	if o.gatewayCRDs == "" {
		return errors.New("dev needs --gateway-api-crds (make dev passes the gateway-api module's config/crd/standard)")
	}
	for _, p := range []*string{&o.cfg.Binaries.EchoBasic, &o.cfg.Binaries.Coxswain, &o.repo, &o.gatewayCRDs} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		*p = abs
	}
	o.cfg.StartTimeout = o.startTimeout
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := localcluster.Start(ctx, o.cfg)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "localcluster: stopping")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localcluster: stop:", err)
		}
	}()
	checks, dashboard, err := installAndWait(ctx, c, o)
	if o.check {
		if err == nil {
			err = runChecks(ctx, checks)
		}
		if err == nil {
			err = checkDashboard(ctx, dashboard)
		}
		if err != nil {
			return err
		}
		fmt.Println("dev check passed")
		return nil
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
		fmt.Fprintln(os.Stderr, "localcluster: the cluster keeps running for debugging:")
		for _, args := range [][]string{{"get", "gateways,httproutes,ingresses", "-A"}, {"get", "pods", "-A", "-o", "wide"}} {
			out, _ := c.Kubectl(ctx, nil, args...)
			fmt.Fprintln(os.Stderr, out)
		}
	}
	fmt.Printf("\nexport KUBECONFIG=%s\n%s get gateways,pods -A\nlogs: %s\nCtrl-C stops everything.\n", c.Kubeconfig, c.KubectlPath(), c.LogDir())
	<-ctx.Done()
	return nil
}

// devCheck is one request make dev prints, with the backend it must reach.
type devCheck struct {
	host, url, service string
}

// runChecks sends each request (bounded retries: routes may still be
// propagating) and checks echo-basic names the expected Service.
func runChecks(ctx context.Context, checks []devCheck) error {
	if len(checks) == 0 {
		return errors.New("no Gateway or Ingress address to check")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, ch := range checks {
		var last string
		ok := false
		for attempt := 0; attempt < 60 && !ok; attempt++ {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, ch.url, nil)
			if err != nil {
				return err
			}
			req.Host = ch.host
			resp, err := client.Do(req)
			if err == nil {
				var body struct {
					Service string `json:"service"`
				}
				derr := json.NewDecoder(resp.Body).Decode(&body)
				_ = resp.Body.Close()
				ok = resp.StatusCode == http.StatusOK && derr == nil && body.Service == ch.service
				last = fmt.Sprintf("status %d, service %q", resp.StatusCode, body.Service)
			} else {
				last = err.Error()
			}
			if !ok {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
		if !ok {
			return fmt.Errorf("curl -H 'Host: %s' %s: want service %q, got %s", ch.host, ch.url, ch.service, last)
		}
		fmt.Printf("ok  Host: %s %s -> %s\n", ch.host, ch.url, ch.service)
	}
	return nil
}

func installAndWait(ctx context.Context, c *localcluster.Cluster, o devOptions) ([]devCheck, string, error) {
	if err := c.InstallBase(ctx, o.gatewayCRDs, o.repo); err != nil {
		return nil, "", err
	}
	// The admin API and dashboard are off by default; make dev opens them
	// (every request still needs a token of a user who may get Gateways).
	if out, err := c.Kubectl(ctx, nil, "set", "env", "-n", "coxswain-system", "deployment/coxswain-controller",
		"COXSWAIN_ADMIN_BIND_ADDRESS=:8085"); err != nil {
		return nil, "", fmt.Errorf("enabling the dashboard: %w\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, []byte(localcluster.DashboardReaderYAML), "apply", "--server-side", "-f", "-"); err != nil {
		return nil, "", fmt.Errorf("dashboard reader: %w\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, nil, "rollout", "status", "-n", "coxswain-system", "deployment/coxswain-controller",
		fmt.Sprintf("--timeout=%ds", int(o.waitTimeout.Seconds()))); err != nil {
		return nil, "", fmt.Errorf("the controller with its dashboard: %w\n%s", err, out)
	}
	var demo strings.Builder
	for _, b := range []struct{ name, port string }{{"api", "8080"}, {"frontend", "80"}, {"shop", "80"}} {
		demo.WriteString(strings.NewReplacer("{{NAME}}", b.name, "{{PORT}}", b.port).Replace(demoBackends))
		demo.WriteString("\n---\n")
	}
	fmt.Println("==> demo backends (echo-basic) and config/samples")
	if out, err := c.Kubectl(ctx, []byte(demo.String()), "apply", "--server-side", "-f", "-"); err != nil {
		return nil, "", fmt.Errorf("demo backends: %w\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, nil, "apply", "--server-side", "-k", filepath.Join(o.repo, "config", "samples")); err != nil {
		return nil, "", fmt.Errorf("config/samples: %w\n%s", err, out)
	}
	fmt.Println("==> waiting for the controller")
	if _, err := c.WaitForPodsReady(ctx, "coxswain-system", "app.kubernetes.io/component=controller", 1, o.waitTimeout); err != nil {
		return nil, "", err
	}
	fmt.Println("==> waiting for Gateway default/web to be Programmed")
	timeout := fmt.Sprintf("--timeout=%ds", int(o.waitTimeout.Seconds()))
	if out, err := c.Kubectl(ctx, nil, "wait", "--for=condition=Programmed", "-n", "default", "gateway/web", timeout); err != nil {
		return nil, "", fmt.Errorf("gateway default/web not Programmed: %w\n%s", err, out)
	}
	gwAddr, _ := c.Kubectl(ctx, nil, "get", "gateway", "web", "-n", "default", "-o", "jsonpath={.status.addresses[0].value}")
	ingAddr, _ := c.Kubectl(ctx, nil, "get", "ingress", "shop", "-n", "default", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}")
	fmt.Println("\nCoxswain is routing. Try:")
	var checks []devCheck
	if gwAddr = strings.TrimSpace(gwAddr); gwAddr != "" {
		checks = append(checks, devCheck{"www.example.com", "http://" + gwAddr + "/", "frontend"},
			devCheck{"www.example.com", "http://" + gwAddr + "/api/x", "api"})
		fmt.Printf("  curl -H 'Host: www.example.com' http://%s/        # Gateway web, HTTPRoute web -> frontend\n", gwAddr)
		fmt.Printf("  curl -H 'Host: www.example.com' http://%s/api/x   # Gateway web, HTTPRoute web -> api\n", gwAddr)
	}
	if ingAddr = strings.TrimSpace(ingAddr); ingAddr != "" {
		checks = append(checks, devCheck{"shop.example.com", "http://" + ingAddr + "/", "shop"})
		fmt.Printf("  curl -H 'Host: shop.example.com' http://%s/       # Ingress shop -> shop\n", ingAddr)
	}
	if gwAddr == "" && ingAddr == "" {
		fmt.Println("  (no Gateway or Ingress address published yet: kubectl get gateways,ingresses -A)")
	}
	dashboard := printDashboard(ctx, c)
	return checks, dashboard, nil
}

// checkDashboard checks that the dashboard answers over TLS and refuses
// the API to a request without a token.
func checkDashboard(ctx context.Context, url string) error {
	if url == "" {
		return errors.New("no dashboard address")
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var last string
	for attempt := 0; attempt < 60; attempt++ {
		page, perr := get(ctx, hc, url)
		api, aerr := get(ctx, hc, url+"api/v1/problems")
		if perr == nil && aerr == nil && page == http.StatusOK && api == http.StatusUnauthorized {
			fmt.Printf("ok  dashboard %s answers, and its API refuses a request without a token\n", url)
			return nil
		}
		last = fmt.Sprintf("page %d %v, API %d %v", page, perr, api, aerr)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("dashboard %s: %s", url, last)
}

func get(ctx context.Context, hc *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// printDashboard prints where the controller's dashboard answers and how
// to get a token for it, and returns its URL ("" when no controller pod
// has an address).
func printDashboard(ctx context.Context, c *localcluster.Cluster) string {
	out, err := c.Kubectl(ctx, nil, "get", "pods", "-n", "coxswain-system", "-l", "app.kubernetes.io/component=controller", "-o", "json")
	var pods struct {
		Items []struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
				PodIP string `json:"podIP"`
			} `json:"status"`
		} `json:"items"`
	}
	ip := ""
	if err == nil && json.Unmarshal([]byte(out), &pods) == nil {
		for _, p := range pods.Items {
			if p.Metadata.DeletionTimestamp == nil && p.Status.Phase == "Running" && p.Status.PodIP != "" {
				ip = p.Status.PodIP
			}
		}
	}
	if ip == "" {
		fmt.Println("\nDashboard: the controller pod has no address yet (kubectl get pods -n coxswain-system -o wide)")
		return ""
	}
	url := "https://" + ip + ":8085/"
	fmt.Printf("\nDashboard (self-signed certificate): %s\n", url)
	fmt.Printf("  token: %s create token dashboard-reader -n coxswain-system\n", c.KubectlPath())
	fmt.Printf("  API:   curl -k -H \"Authorization: Bearer $TOKEN\" %sapi/v1/problems\n", url)
	return url
}
