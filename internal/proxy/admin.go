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

package proxy

// The admin side: health, readiness and metrics endpoints, and Run, which
// starts a proxy.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Mode is how a proxy is scoped: the shared pool or one dedicated Gateway.
type Mode string

// The two proxy scopes.
const (
	ModeShared    Mode = "shared"
	ModeDedicated Mode = "dedicated"
)

// Config identifies a proxy and where its admin endpoints listen.
type Config struct {
	Mode             Mode
	GatewayName      string
	GatewayNamespace string
	HealthAddr       string
	MetricsAddr      string

	// DataPlane configures the listeners that carry user traffic.
	DataPlane Options
	// SnapshotFile, when set, is a static snapshot (JSON or YAML) applied
	// at start and re-applied whenever its content changes.
	SnapshotFile string
	// SnapshotPollInterval is how often SnapshotFile is checked (default 1s).
	SnapshotPollInterval time.Duration
	// Source, when set, feeds snapshots to the data plane (the discovery
	// client); it runs until ctx ends.
	Source func(ctx context.Context, dp *DataPlane, reg prometheus.Registerer) error
	// DrainWindow is how long the proxy keeps accepting and serving after
	// ctx ends (SIGTERM) before it closes its listeners: /readyz answers
	// 503 at once and every response ends its connection (Connection: close,
	// HTTP/2 GOAWAY), so clients move to other replicas while the
	// Service's endpoints converge. Zero closes the listeners at once.
	DrainWindow time.Duration
	// ShutdownTimeout bounds, after the drain window, how long in-flight
	// requests may finish once the listeners are closed (default 25s).
	ShutdownTimeout time.Duration
	// EnablePprof serves Go's profiles under /debug/pprof/ on the health
	// port (debug.go).
	EnablePprof bool
}

// Validate reports a clear error for a configuration the proxy cannot run with.
func (c Config) Validate() error {
	switch c.Mode {
	case ModeShared:
		if c.GatewayName != "" || c.GatewayNamespace != "" {
			return errors.New("--gateway-name and --gateway-namespace are only valid with --dedicated")
		}
	case ModeDedicated:
		if c.GatewayName == "" || c.GatewayNamespace == "" {
			return errors.New("--dedicated requires --gateway-name and --gateway-namespace")
		}
	default:
		return errors.New("exactly one of --shared or --dedicated is required")
	}
	return nil
}

// Readiness is the proxy's answer to /readyz. A proxy is ready only once it
// has applied a routing snapshot: before that it would answer every request
// with 404, so it must not receive traffic.
type Readiness struct {
	reason atomic.Pointer[string]
	// shuttingDown is final: once set, the proxy is not ready whatever
	// the snapshot source reports afterwards.
	shuttingDown atomic.Bool
	// note is shown by a ready proxy that is degraded (serving its last
	// good snapshot while disconnected from discovery).
	note atomic.Pointer[string]
}

// NewReadiness starts not ready, for the given reason.
func NewReadiness(reason string) *Readiness {
	r := &Readiness{}
	r.NotReady(reason)
	return r
}

// Ready marks the proxy ready and clears any degraded note.
func (r *Readiness) Ready() {
	r.reason.Store(nil)
	r.note.Store(nil)
}

// Degraded keeps the proxy ready (it still serves its last good snapshot)
// and shows note on /readyz.
func (r *Readiness) Degraded(note string) { r.note.Store(&note) }

// Note is the degraded note, empty when none.
func (r *Readiness) Note() string {
	if p := r.note.Load(); p != nil {
		return *p
	}
	return ""
}

// NotReady marks the proxy not ready, with a reason shown on /readyz.
func (r *Readiness) NotReady(reason string) { r.reason.Store(&reason) }

// ShuttingDown marks the proxy not ready for good: it is terminating, and
// load balancers must stop sending it new connections.
func (r *Readiness) ShuttingDown() { r.shuttingDown.Store(true) }

// Reason is empty when ready, else why not.
func (r *Readiness) Reason() string {
	if r.shuttingDown.Load() {
		return "shutting down"
	}
	if p := r.reason.Load(); p != nil {
		return *p
	}
	return ""
}

// Admin serves /healthz and /readyz on one listener and /metrics on another.
type Admin struct {
	cfg       Config
	readiness *Readiness
	registry  *prometheus.Registry
	// dp, once set (AttachDataPlane), adds the debug endpoints (debug.go).
	dp *DataPlane
}

// AttachDataPlane serves dp's /debug/snapshot and /statusz on the health
// port; call it before Serve.
func (a *Admin) AttachDataPlane(dp *DataPlane) { a.dp = dp }

// NewAdmin builds the admin endpoints of a proxy with its own metrics registry.
func NewAdmin(cfg Config, readiness *Readiness) *Admin {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "coxswain_proxy_ready",
			Help: "1 when the proxy has applied a routing snapshot and accepts traffic, else 0.",
		}, func() float64 {
			if readiness.Reason() == "" {
				return 1
			}
			return 0
		}),
	)
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "coxswain_proxy_info",
		Help:        "Identity of this proxy: its mode and, when dedicated, its Gateway.",
		ConstLabels: prometheus.Labels{"mode": string(cfg.Mode), "gateway_namespace": cfg.GatewayNamespace, "gateway_name": cfg.GatewayName},
	})
	info.Set(1)
	reg.MustRegister(info)
	return &Admin{cfg: cfg, readiness: readiness, registry: reg}
}

// Registry is where the proxy's components register their metrics.
func (a *Admin) Registry() *prometheus.Registry { return a.registry }

// HealthHandler serves /healthz (the process is alive) and /readyz.
func (a *Admin) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := a.readiness.Reason(); reason != "" {
			http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
			return
		}
		if note := a.readiness.Note(); note != "" {
			_, _ = fmt.Fprintln(w, "ok (degraded: "+note+")")
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	if a.dp != nil {
		addDebugHandlers(mux, a.cfg, a.dp, a.readiness)
	}
	return mux
}

// MetricsHandler serves /metrics in the Prometheus text format.
func (a *Admin) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry}))
	return mux
}

// Serve serves health on healthLn and metrics on metricsLn until ctx ends,
// then shuts both down gracefully.
func (a *Admin) Serve(ctx context.Context, healthLn, metricsLn net.Listener) error {
	servers := []*http.Server{
		{Handler: a.HealthHandler(), ReadHeaderTimeout: 5 * time.Second},
		{Handler: a.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second},
	}
	errs := make(chan error, len(servers))
	for i, ln := range []net.Listener{healthLn, metricsLn} {
		go func(s *http.Server, ln net.Listener) {
			if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		}(servers[i], ln)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdownCtx)
	}
	return serveErr
}

// Run listens on the configured addresses, serves the admin endpoints and
// the data plane and feeds it from SnapshotFile and Source. When ctx ends
// it terminates without dropping requests: /readyz turns 503 at once, the
// listeners keep accepting and serving for DrainWindow while every
// response ends its connection, then they close and in-flight requests
// finish, bounded by ShutdownTimeout. The snapshot sources and the admin
// endpoints run until the data plane has stopped.
func Run(ctx context.Context, cfg Config, readiness *Readiness) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	healthLn, err := net.Listen("tcp", cfg.HealthAddr)
	if err != nil {
		return fmt.Errorf("health listener: %w", err)
	}
	metricsLn, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		_ = healthLn.Close()
		return fmt.Errorf("metrics listener: %w", err)
	}
	admin := NewAdmin(cfg, readiness)
	opts := cfg.DataPlane
	opts.Registry = admin.Registry()
	opts.Readiness = readiness
	dp := NewDataPlane(opts)
	admin.AttachDataPlane(dp)

	// Neither the sources nor the admin endpoints stop with ctx: during the
	// drain the data plane keeps taking snapshots (endpoints still change)
	// and /readyz must answer 503 rather than refuse connections.
	sourceCtx, stopSources := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSources()
	adminCtx, stopAdmin := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAdmin()
	errs := make(chan error, 3)
	var workers sync.WaitGroup
	if cfg.SnapshotFile != "" {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := WatchSnapshotFile(sourceCtx, cfg.SnapshotFile, cfg.SnapshotPollInterval, dp.Apply, dp.log); err != nil {
				dp.log.Error("snapshot file never applied", "path", cfg.SnapshotFile, "error", err)
			}
		}()
	}
	if cfg.Source != nil {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := cfg.Source(sourceCtx, dp, admin.Registry()); err != nil && sourceCtx.Err() == nil {
				errs <- fmt.Errorf("snapshot source: %w", err)
			}
		}()
	}
	adminDone := make(chan error, 1)
	go func() { adminDone <- admin.Serve(adminCtx, healthLn, metricsLn) }()

	var runErr error
	select {
	case <-ctx.Done():
		drain(dp, cfg.DrainWindow)
	case runErr = <-errs:
	case runErr = <-adminDone:
		adminDone = nil
	}
	stopSources()
	workers.Wait()
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 25 * time.Second
	}
	shutdownCtx, stop := context.WithTimeout(context.Background(), timeout)
	defer stop()
	if err := dp.Shutdown(shutdownCtx); err != nil {
		dp.log.Error("data plane drain incomplete", "error", err)
	}
	stopAdmin()
	if adminDone != nil {
		if err := <-adminDone; runErr == nil {
			runErr = err
		}
	}
	return runErr
}
