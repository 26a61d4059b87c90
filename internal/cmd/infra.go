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
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra"
	"github.com/coxswain-go/coxswain/internal/infra/lifecycle"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

func infraClient(kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := infrav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// serveHTTP runs srv until ctx ends.
func serveHTTP(ctx context.Context, srv *http.Server) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// newInfraProberCommand is `serve infra-prober`: the Project health prober,
// run as the infra-apiserver loopback identity (get/list/watch projects,
// patch projects/status).
func newInfraProberCommand() *cobra.Command {
	var (
		kubeconfig, caFile, metricsAddr string
		pr                              infra.Prober
	)
	c := &cobra.Command{
		Use:   "infra-prober",
		Short: "Probe each infra Project's API server /readyz and record health in its status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kc, err := infraClient(kubeconfig)
			if err != nil {
				return err
			}
			var tlsCfg *tls.Config
			if caFile != "" {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					return fmt.Errorf("reading --probe-ca-file: %w", err)
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(pem) {
					return fmt.Errorf("--probe-ca-file %s holds no PEM certificates", caFile)
				}
				tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			}
			reg := prometheus.NewRegistry()
			pr.Client, pr.Checker = kc, infra.NewHTTPChecker(tlsCfg)
			pr.Log, pr.Metrics = ctrl.Log.WithName("infra-prober"), infra.NewProberMetrics(reg)
			ctx := cmd.Context()
			if metricsAddr != "" && metricsAddr != "0" {
				mux := http.NewServeMux()
				mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
				go func() {
					if err := serveHTTP(ctx, &http.Server{Addr: metricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}); err != nil {
						pr.Log.Error(err, "metrics server")
					}
				}()
			}
			pr.Log.Info("starting infra prober", "interval", pr.Interval, "timeout", pr.Timeout, "concurrency", pr.Concurrency)
			return pr.Run(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "Path to the infra-apiserver kubeconfig. Default: $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	f.DurationVar(&pr.Interval, "interval", 10*time.Second, "Time between probe rounds.")
	f.DurationVar(&pr.Timeout, "timeout", 5*time.Second, "Timeout of one probe.")
	f.IntVar(&pr.Concurrency, "concurrency", 8, "Most probes in flight at once.")
	f.StringVar(&caFile, "probe-ca-file", "", "PEM CA bundle that project API server certificates chain to. Default: the system roots.")
	f.StringVar(&metricsAddr, "metrics-bind-address", ":8083", "Address of the /metrics endpoint; \"0\" disables it.")
	return c
}

type lifecycleFlags struct {
	kubeconfig, signingKeyFile, signingKeyID, kekFile string
}

func (l *lifecycleFlags) bind(c *cobra.Command, needKEK bool) {
	f := c.Flags()
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "Path to the infra-apiserver kubeconfig of the lifecycle identity.")
	f.StringVar(&l.signingKeyFile, "signing-key-file", "", "PEM PKCS #8 Ed25519 (or ECDSA P-256) key that signs trust signatures.")
	f.StringVar(&l.signingKeyID, "signing-key-id", "", "Key ID recorded in spec.trustSignature.keyID.")
	_ = c.MarkFlagRequired("signing-key-file")
	_ = c.MarkFlagRequired("signing-key-id")
	if needKEK {
		f.StringVar(&l.kekFile, "kek-file", "", "File with the 32-byte key-encryption key (raw, hex or base64) that wraps CA data keys.")
		_ = c.MarkFlagRequired("kek-file")
	}
}

func (l *lifecycleFlags) tool() (*lifecycle.Tool, error) {
	kc, err := infraClient(l.kubeconfig)
	if err != nil {
		return nil, err
	}
	s, err := trust.LoadSigner(l.signingKeyID, l.signingKeyFile)
	if err != nil {
		return nil, err
	}
	t := &lifecycle.Tool{Client: kc, Signer: s, Log: ctrl.Log.WithName("infra-project")}
	if l.kekFile != "" {
		if t.KEK, err = lifecycle.LoadKEKFile(l.kekFile); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func printResult(cmd *cobra.Command, name string, res lifecycle.Result) {
	msg := fmt.Sprintf("project %s %s", name, res.Outcome)
	if res.CACreated {
		msg += " (new agent CA)"
	}
	if res.RetireAfter != nil {
		msg += fmt.Sprintf("; old agent CA certificates kept until %s: rerun finish after that", res.RetireAfter.Format(time.RFC3339))
	}
	fmt.Fprintln(cmd.OutOrStdout(), msg)
}

// newInfraCommand is `infra project setup|rotate-ca|teardown`, run as the
// Project lifecycle identity.
func newInfraCommand() *cobra.Command {
	zapOpts := zap.Options{}
	infraCmd := &cobra.Command{
		Use:   "infra",
		Short: "Infra Project lifecycle tooling",
		PersistentPreRun: func(*cobra.Command, []string) {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
		},
	}
	project := &cobra.Command{Use: "project", Short: "Set up, rotate the agent CA of, or tear down a Project"}
	infraCmd.AddCommand(project)

	var setupFlags lifecycleFlags
	var in lifecycle.SetupInput
	var relayRootsFile string
	setup := &cobra.Command{
		Use:   "setup",
		Short: "Upsert a Project: shard, endpoint, relay roots; create its agent CA when it has none; sign",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if relayRootsFile != "" {
				b, err := os.ReadFile(relayRootsFile)
				if err != nil {
					return fmt.Errorf("reading --relay-roots-file: %w", err)
				}
				in.RelayRoots = string(b)
			}
			t, err := setupFlags.tool()
			if err != nil {
				return err
			}
			res, err := t.Setup(cmd.Context(), in)
			if err != nil {
				return err
			}
			printResult(cmd, in.Name, res)
			return nil
		},
	}
	setupFlags.bind(setup, true)
	setup.Flags().StringVar(&in.Name, "name", "", "Project UUID.")
	setup.Flags().StringVar(&in.ShardID, "shard-id", "", "Shard UUID the project is assigned to.")
	setup.Flags().StringVar(&in.APIServerEndpoint, "endpoint", "", "host[:port] of the project API server.")
	setup.Flags().StringVar(&relayRootsFile, "relay-roots-file", "", "PEM CA certificates relay certificates chain to (empty: system roots).")
	for _, n := range []string{"name", "shard-id", "endpoint"} {
		_ = setup.MarkFlagRequired(n)
	}

	rotate := &cobra.Command{Use: "rotate-ca", Short: "Rotate a Project's agent CA: start, then finish"}
	var startFlags, finishFlags lifecycleFlags
	var startName, finishName string
	var grace time.Duration
	start := &cobra.Command{
		Use:   "start",
		Short: "Create the next agent CA; agents of both CAs are accepted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := startFlags.tool()
			if err != nil {
				return err
			}
			res, err := t.RotateCAStart(cmd.Context(), startName)
			if err != nil {
				return err
			}
			printResult(cmd, startName, res)
			return nil
		},
	}
	startFlags.bind(start, true)
	start.Flags().StringVar(&startName, "name", "", "Project UUID.")
	_ = start.MarkFlagRequired("name")
	finish := &cobra.Command{
		Use:   "finish",
		Short: "Promote the next agent CA; drop the old one once the grace period has passed (rerun)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := finishFlags.tool()
			if err != nil {
				return err
			}
			res, err := t.RotateCAFinish(cmd.Context(), finishName, grace)
			if err != nil {
				return err
			}
			printResult(cmd, finishName, res)
			return nil
		},
	}
	finishFlags.bind(finish, false)
	finish.Flags().StringVar(&finishName, "name", "", "Project UUID.")
	finish.Flags().DurationVar(&grace, "grace-period", 24*time.Hour, "How long the old CA stays accepted after promotion.")
	_ = finish.MarkFlagRequired("name")
	rotate.AddCommand(start, finish)

	var tdKubeconfig, tdName, tdShard string
	teardown := &cobra.Command{
		Use:   "teardown",
		Short: "Delete a Project (before later resource cleanup)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kc, err := infraClient(tdKubeconfig)
			if err != nil {
				return err
			}
			t := &lifecycle.Tool{Client: kc, Log: ctrl.Log.WithName("infra-project")}
			res, err := t.Teardown(cmd.Context(), tdName, tdShard)
			if err != nil {
				return err
			}
			printResult(cmd, tdName, res)
			return nil
		},
	}
	teardown.Flags().StringVar(&tdKubeconfig, "kubeconfig", "", "Path to the infra-apiserver kubeconfig of the lifecycle identity.")
	teardown.Flags().StringVar(&tdName, "name", "", "Project UUID.")
	teardown.Flags().StringVar(&tdShard, "shard-id", "", "If set, refuse to delete a Project of another shard.")
	_ = teardown.MarkFlagRequired("name")

	project.AddCommand(setup, rotate, teardown)
	return infraCmd
}
