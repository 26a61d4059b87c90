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
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/coxswain-go/coxswain/internal/infra/membership"
	"github.com/coxswain-go/coxswain/internal/infra/relay"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

// newRelayCommand is `serve relay`: the infra relay for agents of the
// projects of one shard.
func newRelayCommand() *cobra.Command {
	var (
		mopts                                     membership.Options
		kubeconfig, keysFile, snapshotFile        string
		listenAddr, certFile, keyFile, healthAddr string
	)
	c := &cobra.Command{
		Use:   "relay --shard-id UUID --trust-keys-file FILE --snapshot-file FILE --tls-cert-file F --tls-key-file F",
		Short: "Run the infra relay: shard membership, trust snapshot file and the agent mTLS listener",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := ctrl.Log.WithName("relay")
			if err := mopts.Validate(); err != nil {
				return err
			}
			if keysFile == "" || snapshotFile == "" || certFile == "" || keyFile == "" {
				return errors.New("--trust-keys-file, --snapshot-file, --tls-cert-file and --tls-key-file are required")
			}
			keys, err := trust.LoadKeySet(keysFile)
			if err != nil {
				return err
			}
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return fmt.Errorf("loading the relay certificate: %w", err)
			}
			base, err := restConfig(kubeconfig)
			if err != nil && mopts.InfraAddr == "" {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			rc, err := mopts.RESTConfig(base, log)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			r, err := relay.New(relay.Config{ShardID: mopts.ShardID, RESTConfig: rc, Keys: keys, SnapshotPath: snapshotFile,
				ServerCertificate: cert, Log: log, Metrics: membership.NewMetrics(reg)})
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", listenAddr)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			mux := http.NewServeMux()
			mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
			mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
				if err := r.Membership.ReadyzCheck(req); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				_, _ = w.Write([]byte("ok"))
			})
			mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			errc := make(chan error, 3)
			go func() { errc <- r.Run(ctx) }()
			go func() { errc <- r.Serve(ctx, l) }()
			go func() {
				errc <- serveHTTP(ctx, &http.Server{Addr: healthAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second})
			}()
			log.Info("starting relay", "shard", mopts.ShardID, "listen", l.Addr().String(), "snapshot", snapshotFile)
			err = <-errc
			cancel()
			for i := 0; i < 2; i++ {
				if e := <-errc; err == nil {
					err = e
				}
			}
			return err
		},
	}
	f := c.Flags()
	mopts.BindFlags(f)
	f.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig with the relay's infra-apiserver credentials (--infra-addr overrides its server).")
	f.StringVar(&keysFile, "trust-keys-file", "", "YAML file of keyID → PEM public key that verify Project trust signatures.")
	f.StringVar(&snapshotFile, "snapshot-file", "", "Relay snapshot file (written atomically, loaded on start).")
	f.StringVar(&listenAddr, "listen-address", ":8443", "Address of the agent mTLS listener.")
	f.StringVar(&certFile, "tls-cert-file", "", "PEM certificate of the relay's agent listener.")
	f.StringVar(&keyFile, "tls-key-file", "", "PEM private key of the relay's agent listener.")
	f.StringVar(&healthAddr, "health-probe-bind-address", ":8081", "Address of /healthz, /readyz and /metrics.")
	return c
}
