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

// Package proxycmd is the proxy's command line: `serve proxy`, in both
// binaries, and the whole of coxswain-proxy (Root), the data plane built
// without the controller's packages.
package proxycmd

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/coxswain-go/coxswain/internal/cli"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/proxy"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/tracing"
)

// Root is coxswain-proxy's command tree: `serve proxy` and `version`,
// spelled and flagged as in coxswain, so that either binary runs the
// command line a proxy's Pod is given.
func Root() *cobra.Command {
	return cli.Root(names.ProxyBinaryName, "Coxswain's data plane: the proxy alone", cli.Serve(Command()))
}

// Command is `serve proxy`.
func Command() *cobra.Command {
	var shared, dedicated, accessLog bool
	var disc discovery.ProxyFlags
	var traces tracing.Options
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
			if err := cfg.DataPlane.EscapedSlashes.Validate(); err != nil {
				return err
			}
			log := crlog.Log.WithName("proxy")
			tp, stopTracing, err := tracing.New(cmd.Context(), traces, tracing.ServiceProxy)
			if err != nil {
				return err
			}
			defer tracing.Flush(stopTracing, log)
			tracing.Install(tp, log.WithName("tracing"))
			cfg.DataPlane.TracerProvider = tp
			log.Info("starting proxy", "mode", cfg.Mode,
				"gateway", cfg.GatewayNamespace+"/"+cfg.GatewayName, "health", cfg.HealthAddr, "metrics", cfg.MetricsAddr,
				"snapshotFile", cfg.SnapshotFile, "tracing", traces.Endpoint)
			cfg.DataPlane.Logger = slog.New(logr.ToSlogHandler(log))
			if accessLog {
				cfg.DataPlane.AccessLog = os.Stdout
			}
			readiness := proxy.NewReadiness("no routing snapshot applied yet")
			if disc.Endpoints == "" && cfg.SnapshotFile == "" {
				return errors.New("a proxy needs a source of snapshots: --discovery-endpoint or --snapshot-file")
			}
			if disc.Endpoints != "" {
				scope := snapshot.SharedPool()
				if cfg.Mode == proxy.ModeDedicated {
					scope = snapshot.GatewayScope(cfg.GatewayNamespace, cfg.GatewayName)
				}
				opts, err := disc.ClientOptions(scope, nodeID())
				if err != nil {
					return err
				}
				cfg.Source = func(ctx context.Context, dp *proxy.DataPlane, reg prometheus.Registerer) error {
					opts.Applier = dp
					opts.Readiness = readiness
					opts.Registerer = reg
					opts.Log = log.WithName("discovery")
					client, err := discovery.NewClient(opts)
					if err != nil {
						return err
					}
					return client.Run(ctx)
				}
			}
			return proxy.Run(cmd.Context(), cfg, readiness)
		},
	}
	f := c.Flags()
	f.BoolVar(&shared, "shared", false, "Serve the shared pool: every Ingress and every Gateway without dedicated proxies.")
	f.BoolVar(&dedicated, "dedicated", false, "Serve one Gateway only (with --gateway-name and --gateway-namespace).")
	f.StringVar(&cfg.GatewayName, "gateway-name", "", "Name of the Gateway a dedicated proxy serves.")
	f.StringVar(&cfg.GatewayNamespace, "gateway-namespace", "", "Namespace of the Gateway a dedicated proxy serves.")
	f.StringVar(&cfg.HealthAddr, "health-probe-bind-address", names.BindAddress(names.HealthPort), "Address of the /healthz and /readyz endpoints.")
	f.StringVar(&cfg.MetricsAddr, "metrics-bind-address", names.BindAddress(names.MetricsPort), "Address of the /metrics endpoint.")
	f.StringVar(&cfg.SnapshotFile, "snapshot-file", "", "Serve the routing snapshot in this JSON or YAML file and reload it when it changes (benchmarks, tests, last-known-good).")
	f.DurationVar(&cfg.SnapshotPollInterval, "snapshot-poll-interval", time.Second, "How often --snapshot-file is checked for changes.")
	f.StringVar(&cfg.DataPlane.BindHost, "bind-host", "", "Address the traffic listeners bind (empty: every address).")
	f.BoolVar(&accessLog, "access-log", true, "Write one JSON access log line per request to stdout (routes can turn it off).")
	f.DurationVar(&cfg.DataPlane.DrainTimeout, "drain-timeout", 10*time.Second, "How long a removed listener may drain its connections.")
	f.DurationVar(&cfg.DrainWindow, "shutdown-drain-window", 5*time.Second,
		"On SIGTERM, how long to keep accepting and serving while load balancers stop sending new connections: /readyz answers 503 and every response closes its connection (HTTP/2: GOAWAY). 0 closes the listeners at once.")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 25*time.Second, "After the drain window, how long in-flight requests may finish before the proxy exits.")
	f.Int64Var(&cfg.DataPlane.MaxResponseHeaderBytes, "max-response-header-bytes", proxy.DefaultMaxResponseHeaderBytes,
		"Largest response head an upstream may send; a larger one is answered 502.")
	f.DurationVar(&cfg.DataPlane.HeaderTimeout, "header-timeout", 30*time.Second, "How long one request head may take to arrive; a slower one is dropped.")
	f.DurationVar(&cfg.DataPlane.RequestBodyTimeout, "request-body-timeout", 60*time.Second, "How long a read of a request body may wait (nginx's client_body_timeout); a stalled body is answered 408.")
	f.StringVar((*string)(&cfg.DataPlane.EscapedSlashes), "escaped-slashes", string(proxy.EscapedSlashRedirect),
		"What a request whose path holds %2F or %5C gets: UnescapeAndRedirect (307 to the decoded, normalised path) or Reject (400).")
	f.DurationVar(&cfg.DataPlane.StreamIdleTimeout, "stream-idle-timeout", time.Hour,
		"How long a connection of a TLS or TCP listener may move no bytes either way before it is closed (UDP sessions have their listener's idle timeout).")
	f.IntVar(&cfg.DataPlane.UDPMaxSessions, "udp-max-sessions", 16384, "Most sessions one UDP listener keeps; a datagram that would open one more is dropped and counted.")
	f.IntVar(&cfg.DataPlane.RetryBodyBufferBytes, "retry-body-buffer-bytes", 64<<10,
		"Largest request body kept in memory so a route's retry policy can send it again; a request with a larger body is streamed and never retried.")
	f.BoolVar(&cfg.EnablePprof, "enable-pprof", false, "Serve Go's profiles under /debug/pprof/ on the health port.")
	f.StringVar(&cfg.DataPlane.RateLimitRedis, "rate-limit-redis", "",
		"Address (host:port) of the Redis that Global RateLimits count in, shared by every proxy replica; without it they fail open or closed as each policy says.")
	disc.AddFlags(f)
	traces.AddFlags(f)
	c.MarkFlagsMutuallyExclusive("shared", "dedicated")
	return c
}

// nodeID names this proxy on the discovery stream: the pod name, else the
// host name.
func nodeID() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "coxswain-proxy"
}
