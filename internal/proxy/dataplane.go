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

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// DefaultMaxResponseHeaderBytes is the default cap on an upstream's
// response head. nginx answers 502 beyond proxy_buffer_size (4 or 8 KiB);
// this default is generous for backends with large cookie sets and still
// keeps one hostile head from growing the heap without bound.
const DefaultMaxResponseHeaderBytes = 1 << 20

// Options configure a DataPlane. The zero value is usable.
type Options struct {
	// BindHost is the address listeners bind ("" is every address; tests
	// use "127.0.0.1").
	BindHost string
	// AccessLog receives one JSON line per request; nil disables it.
	AccessLog io.Writer
	// Registry receives the data plane's metrics; nil keeps them private.
	Registry prometheus.Registerer
	// Readiness, when set, turns ready after the first successful Apply.
	Readiness *Readiness
	// Logger for operational messages; nil discards them.
	Logger *slog.Logger
	// DrainTimeout bounds the graceful drain of a removed listener
	// (default 10s).
	DrainTimeout time.Duration
	// MaxIdleConnsPerHost of the upstream pools (default 1024).
	MaxIdleConnsPerHost int
	// DialTimeout bounds connecting to an upstream (default 5s).
	DialTimeout time.Duration
	// UpstreamIdleTimeout is how long an idle upstream connection is kept
	// for reuse (default 90s).
	UpstreamIdleTimeout time.Duration
	// MaxResponseHeaderBytes caps the response head an upstream may send
	// (default 1 MiB); a larger one is answered 502.
	MaxResponseHeaderBytes int64
	// MirrorConcurrency bounds in-flight mirrored requests (default 128);
	// more are dropped.
	MirrorConcurrency int
	// MirrorBodyCap is the largest request body copied to mirrors (default
	// 64 KiB); requests with larger bodies are not mirrored.
	MirrorBodyCap int
	// MirrorTimeout bounds one mirrored request (default 10s).
	MirrorTimeout time.Duration
	// DisableFastPath serves every cleartext request with net/http's
	// server instead of the fast path for bodiless HTTP/1.1 GET and HEAD.
	DisableFastPath bool
	// DisableLeanClient sends every request through net/http's Transport
	// instead of the lean HTTP/1.1 client used for bodiless GET and HEAD.
	DisableLeanClient bool
	// HeaderTimeout bounds the arrival of one request head, from its first
	// byte (default 30s); a head that takes longer is dropped.
	HeaderTimeout time.Duration
	// RequestBodyTimeout bounds each read of a request body, as nginx's
	// client_body_timeout (default 60s); a request whose body stalls
	// longer is answered 408.
	RequestBodyTimeout time.Duration
	// BodyDrainTimeout bounds how long an HTTP/1 connection may spend
	// sending the rest of a body the proxy did not read (a 404, a
	// redirect, a direct response) before its next request; past it the
	// connection is closed (default 10s).
	BodyDrainTimeout time.Duration
	// EscapedSlashes is what a request whose path holds %2F or %5C gets
	// (default EscapedSlashRedirect).
	EscapedSlashes EscapedSlashAction

	// reapInterval overrides how often idle upstream connections are
	// reaped (tests).
	reapInterval time.Duration
	// listen binds listeners (default net.Listen; tests inject failures).
	listen func(network, address string) (net.Listener, error)
}

// DataPlane applies snapshots atomically and binds and unbinds listeners.
type DataPlane struct {
	opts      Options
	log       *slog.Logger
	m         *metrics
	alog      *accessLogger
	state     atomic.Pointer[state]
	h1, h2c   *addrTransports
	lean      *h1Client
	mirrorSem chan struct{}

	mu     sync.Mutex // serialises Apply and Shutdown
	bound  map[int32]*boundListener
	closed bool
	ports  atomic.Pointer[[]int32]

	cbMu      sync.Mutex
	callbacks []func([]int32)
	drains    sync.WaitGroup

	// drainFlag is set by BeginDrain (drain.go).
	drainFlag atomic.Bool
}

type boundListener struct {
	port int32
	tls  bool
	ln   net.Listener
	srv  *http.Server
	fast *fastServer
	done chan struct{}
}

// drain stops a listener gracefully: net/http's connections and the fast
// path's, each bounded by ctx.
func (bl *boundListener) drain(ctx context.Context) error {
	var fastErr error
	var wg sync.WaitGroup
	if bl.fast != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fastErr = bl.fast.drain(ctx) }()
	}
	var err error
	if bl.srv != nil {
		if err = bl.srv.Shutdown(ctx); err != nil {
			_ = bl.srv.Close()
		}
	}
	wg.Wait()
	return errors.Join(err, fastErr)
}

// NewDataPlane builds a data plane with no listeners; Apply binds them.
func NewDataPlane(opts Options) *DataPlane {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 1024
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.UpstreamIdleTimeout <= 0 {
		opts.UpstreamIdleTimeout = 90 * time.Second
	}
	if opts.reapInterval <= 0 {
		opts.reapInterval = reapInterval(opts.UpstreamIdleTimeout)
	}
	if opts.MaxResponseHeaderBytes <= 0 {
		opts.MaxResponseHeaderBytes = DefaultMaxResponseHeaderBytes
	}
	if opts.listen == nil {
		opts.listen = net.Listen
	}
	if opts.MirrorConcurrency <= 0 {
		opts.MirrorConcurrency = 128
	}
	if opts.MirrorBodyCap <= 0 {
		opts.MirrorBodyCap = 64 << 10
	}
	if opts.MirrorTimeout <= 0 {
		opts.MirrorTimeout = 10 * time.Second
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = 30 * time.Second
	}
	if opts.RequestBodyTimeout <= 0 {
		opts.RequestBodyTimeout = 60 * time.Second
	}
	if opts.BodyDrainTimeout <= 0 {
		opts.BodyDrainTimeout = 10 * time.Second
	}
	if opts.EscapedSlashes == "" {
		opts.EscapedSlashes = EscapedSlashRedirect
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &DataPlane{
		opts:      opts,
		log:       log,
		m:         newMetrics(opts.Registry),
		bound:     map[int32]*boundListener{},
		mirrorSem: make(chan struct{}, opts.MirrorConcurrency),
	}
	if opts.AccessLog != nil {
		d.alog = &accessLogger{w: opts.AccessLog}
	}
	empty := []int32{}
	d.ports.Store(&empty)
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	newTransport := func(h2c bool) func() *http.Transport {
		return func() *http.Transport { return newUpstreamTransport(opts, dialer, h2c) }
	}
	d.h1, d.h2c = newAddrTransports(newTransport(false)), newAddrTransports(newTransport(true))
	if !opts.DisableLeanClient {
		d.lean = newH1Client(dialer, opts.MaxIdleConnsPerHost, opts.UpstreamIdleTimeout, opts.MaxResponseHeaderBytes)
	}
	d.startReaper(opts.reapInterval)
	return d
}

// Apply validates and compiles a snapshot, binds new listeners, publishes
// the new routing table with one atomic store and drains listeners that
// are gone. On any error the previous state stays in force.
func (d *DataPlane) Apply(s *snapshot.Snapshot) error {
	changed, ports, err := d.apply(s)
	if err != nil {
		d.m.applies.WithLabelValues("error").Inc()
		return err
	}
	d.m.applies.WithLabelValues("success").Inc()
	if changed {
		d.cbMu.Lock()
		cbs := slices.Clone(d.callbacks)
		d.cbMu.Unlock()
		for _, cb := range cbs {
			cb(slices.Clone(ports))
		}
	}
	return nil
}

func (d *DataPlane) apply(s *snapshot.Snapshot) (bool, []int32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, nil, errors.New("data plane is shut down")
	}
	prev := d.state.Load()
	st, err := compile(s, prev, d.m)
	if err != nil {
		return false, nil, err
	}
	// Bind what is new before publishing, so a bind failure leaves the old
	// state and every old listener untouched.
	opened, err := d.bindListeners(st)
	if err != nil {
		return false, nil, err
	}
	d.state.Store(st)
	d.dropUpstreams(prev, st)
	changed := len(opened) > 0
	for _, bl := range opened {
		if old := d.bound[bl.port]; old != nil {
			d.unbind(old) // the protocol changed: drain the old listener
		}
		d.bound[bl.port] = bl
		d.serveListener(bl)
	}
	for port, bl := range d.bound {
		if _, ok := st.listeners[port]; !ok {
			d.unbind(bl)
			changed = true
		}
	}
	ports := d.publishPorts()
	if prev == nil || prev.version != st.version {
		d.m.setVersion(st.version)
	}
	if d.opts.Readiness != nil {
		d.opts.Readiness.Ready()
	}
	d.log.Info("applied routing snapshot", "version", st.version, "ports", ports)
	return changed, ports, nil
}

func (d *DataPlane) serveListener(bl *boundListener) {
	var p http.Protocols
	p.SetHTTP1(true)
	if bl.tls {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	srv := &http.Server{
		Handler:           &portHandler{d: d, port: bl.port, tls: bl.tls},
		Protocols:         &p,
		ReadHeaderTimeout: d.opts.HeaderTimeout,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(d.log.Handler(), slog.LevelDebug),
		ConnState:         d.connState,
	}
	if bl.tls {
		port := bl.port
		srv.TLSConfig = &tls.Config{
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2", "http/1.1"},
			GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return d.certificate(port, hello.ServerName)
			},
		}
	}
	bl.srv = srv
	if !bl.tls && !d.opts.DisableFastPath {
		bl.fast = newFastServer(d, bl.port, bl.ln)
		go bl.fast.acceptLoop()
	}
	go func() {
		defer close(bl.done)
		var err error
		switch {
		case bl.tls:
			err = srv.ServeTLS(bl.ln, "", "")
		case bl.fast != nil:
			err = srv.Serve(bl.fast.handoff)
		default:
			err = srv.Serve(bl.ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("listener stopped", "port", bl.port, "error", err)
		}
	}()
}

func (d *DataPlane) connState(_ net.Conn, cs http.ConnState) {
	switch cs {
	case http.StateNew:
		d.m.activeConns.Inc()
	case http.StateClosed, http.StateHijacked:
		d.m.activeConns.Dec()
	}
}

// unbind stops accepting on a listener at once and drains its connections
// in the background, bounded by DrainTimeout. Caller holds d.mu.
func (d *DataPlane) unbind(bl *boundListener) {
	delete(d.bound, bl.port)
	_ = bl.ln.Close()
	d.drains.Add(1)
	go func() {
		defer d.drains.Done()
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.DrainTimeout)
		defer cancel()
		_ = bl.drain(ctx)
	}()
}

// BoundPorts lists the ports currently listening, sorted.
func (d *DataPlane) BoundPorts() []int32 { return slices.Clone(*d.ports.Load()) }

// OnBoundPortsChange registers f, called with the sorted bound ports after
// an Apply that bound or unbound a listener.
func (d *DataPlane) OnBoundPortsChange(f func([]int32)) {
	d.cbMu.Lock()
	defer d.cbMu.Unlock()
	d.callbacks = append(d.callbacks, f)
}

// Version is the snapshot.Version of the applied snapshot ("" before the
// first Apply).
func (d *DataPlane) Version() string {
	if st := d.state.Load(); st != nil {
		return st.version
	}
	return ""
}

// Shutdown stops accepting on every listener, lets in-flight requests
// finish until ctx ends, then closes what is left. Later Applies fail.
func (d *DataPlane) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	if d.opts.Readiness != nil {
		d.opts.Readiness.NotReady("shutting down")
	}
	bound := make([]*boundListener, 0, len(d.bound))
	for _, bl := range d.bound {
		bound = append(bound, bl)
	}
	d.bound = map[int32]*boundListener{}
	empty := []int32{}
	d.ports.Store(&empty)
	d.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(bound))
	for i, bl := range bound {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = bl.ln.Close()
			if err := bl.drain(ctx); err != nil {
				errs[i] = fmt.Errorf("port %d: %w", bl.port, err)
			}
		}()
	}
	wg.Wait()
	drained := make(chan struct{})
	go func() { d.drains.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
	}
	d.h1.CloseIdleConnections()
	d.h2c.CloseIdleConnections()
	if d.lean != nil {
		d.lean.closeIdle()
	}
	return errors.Join(errs...)
}
