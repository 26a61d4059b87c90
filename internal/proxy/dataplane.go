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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coxswain-go/coxswain/internal/memrelease"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// DataPlane applies snapshots atomically and binds and unbinds listeners.
type DataPlane struct {
	opts  Options
	log   *slog.Logger
	m     *metrics
	alog  *accessLogger
	state atomic.Pointer[state]
	// release returns the memory a swap left free once swaps stop
	// (memrelease: the heap's goal is set while both states are live).
	release memrelease.Releaser
	// h1 and h2c are the transports of HTTP/1.1 and HTTP/2 upstreams (h2c
	// in cleartext, h2 over TLS), per pool key.
	h1, h2c   *addrTransports
	lean      *h1Client
	mirrorSem chan struct{}
	// dialer connects to upstreams: net/http's transports, the lean
	// client and the stream listeners.
	dialer *net.Dialer

	mu    sync.Mutex // serialises Apply and Shutdown
	bound map[listenerAddr]*boundListener
	// keys counts the pool keys of the state in force (dropUpstreams).
	keys   keyCounts
	closed bool
	ports  atomic.Pointer[[]int32]

	cbMu      sync.Mutex
	callbacks []func([]int32)
	drains    sync.WaitGroup

	// drainFlag is set by BeginDrain (drain.go).
	drainFlag atomic.Bool

	// env is the policy filters' state across snapshots (policies.go).
	env *policyEnv
	// lastApplyError is the latest refused snapshot's reason (debug.go).
	lastApplyError atomic.Pointer[applyError]
	// tracer makes the requests' spans; nil when tracing is off
	// (tracing.go).
	tracer trace.Tracer
}

// NewDataPlane builds a data plane with no listeners; Apply binds them.
func NewDataPlane(opts Options) *DataPlane {
	opts = opts.withDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &DataPlane{
		opts:      opts,
		log:       log,
		m:         newMetrics(opts.Registry),
		bound:     map[listenerAddr]*boundListener{},
		mirrorSem: make(chan struct{}, opts.MirrorConcurrency),
	}
	if opts.AccessLog != nil {
		d.alog = &accessLogger{w: opts.AccessLog}
	}
	if opts.TracerProvider != nil {
		d.tracer = opts.TracerProvider.Tracer(tracerName)
	}
	empty := []int32{}
	d.ports.Store(&empty)
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	d.dialer = dialer
	newTransport := func(h2 bool) func(*upstreamTLS) *http.Transport {
		return func(u *upstreamTLS) *http.Transport { return newUpstreamTransport(opts, dialer, h2, u) }
	}
	d.h1, d.h2c = newAddrTransports(newTransport(false)), newAddrTransports(newTransport(true))
	if !opts.DisableLeanClient {
		d.lean = newH1Client(dialer, opts.MaxIdleConnsPerHost, opts.UpstreamIdleTimeout, opts.MaxResponseHeaderBytes)
	}
	d.env = newPolicyEnv(d)
	d.startReaper(opts.reapInterval)
	return d
}

// Apply validates and compiles a snapshot, binds new listeners, publishes
// the new routing table with one atomic store and drains listeners that
// are gone. On any error the previous state stays in force.
func (d *DataPlane) Apply(s *snapshot.Snapshot) error {
	return d.ApplyVersioned(s, "")
}

// ApplyVersioned is Apply for a snapshot its source has validated and
// named (discovery.VersionedApplier): it is neither validated nor encoded
// again, and version is what /statusz and coxswain_proxy_snapshot_info
// show. An empty version is Apply.
func (d *DataPlane) ApplyVersioned(s *snapshot.Snapshot, version string) error {
	changed, ports, err := d.apply(s, version)
	if err != nil {
		d.m.applies.WithLabelValues("error").Inc()
		return err
	}
	d.m.applies.WithLabelValues("success").Inc()
	d.release.Busy()
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

func (d *DataPlane) apply(s *snapshot.Snapshot, version string) (bool, []int32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, nil, errors.New("data plane is shut down")
	}
	prev := d.state.Load()
	st, err := compileEnv(s, version, prev, d.m, d.env)
	if err != nil {
		d.noteApplyError(err)
		return false, nil, err
	}
	// The listeners of the state before, every one bound (a listener
	// lost restoring a failed protocol switch is bound again below).
	sameBound := st.sameListeners && len(d.bound) == len(st.listeners)
	// Bind what is new before publishing, so a bind failure leaves the old
	// state and every old listener untouched.
	var opened []*boundListener
	if !sameBound {
		if opened, err = d.bindListeners(st); err != nil {
			d.noteApplyError(err)
			return false, nil, err
		}
	}
	st.applied = time.Now()
	d.state.Store(st)
	d.env.backends.sync(prev, st)
	d.dropUpstreams(prev, st)
	changed, ports := false, *d.ports.Load() // never modified: publishPorts stores a new list
	if !sameBound {
		changed = len(opened) > 0
		for _, bl := range opened {
			if old := d.bound[bl.addr]; old != nil {
				d.unbind(old) // the protocol changed: drain the old listener
			}
			d.bound[bl.addr] = bl
			d.serveListener(bl)
		}
		for addr, bl := range d.bound {
			if _, ok := st.listeners[addr]; !ok {
				d.unbind(bl)
				changed = true
			}
		}
		ports = d.publishPorts()
	}
	if prev == nil || prev.version != st.version {
		d.m.setVersion(st.version)
	}
	if d.opts.Readiness != nil {
		d.opts.Readiness.Ready()
	}
	if sameBound {
		// Its ports are the last one's, listed when they changed.
		d.log.Info("applied routing snapshot", "version", st.version, "listeners", len(st.listeners))
	} else {
		d.log.Info("applied routing snapshot", "version", st.version, "ports", ports)
	}
	return changed, ports, nil
}

// BoundPorts lists the ports currently listening, sorted, each once: a
// port with both a TCP and a UDP listener is listed once.
func (d *DataPlane) BoundPorts() []int32 { return slices.Clone(*d.ports.Load()) }

// OnBoundPortsChange registers f, called with the sorted bound ports after
// an Apply that bound or unbound a listener.
func (d *DataPlane) OnBoundPortsChange(f func([]int32)) {
	d.cbMu.Lock()
	defer d.cbMu.Unlock()
	d.callbacks = append(d.callbacks, f)
}

// Version is the version of the applied snapshot: its snapshot.Version, or
// the one discovery named it by ("" before the first Apply).
func (d *DataPlane) Version() string {
	if st := d.state.Load(); st != nil {
		return st.version
	}
	return ""
}

// Shutdown stops accepting on every listener, lets in-flight requests and
// stream connections finish until ctx ends, then closes what is left; UDP
// sessions end at once. Later Applies fail.
func (d *DataPlane) Shutdown(ctx context.Context) error {
	d.release.Stop()
	d.mu.Lock()
	d.closed = true
	if d.opts.Readiness != nil {
		d.opts.Readiness.NotReady("shutting down")
	}
	bound := make([]*boundListener, 0, len(d.bound))
	for _, bl := range d.bound {
		bound = append(bound, bl)
	}
	d.bound = map[listenerAddr]*boundListener{}
	empty := []int32{}
	d.ports.Store(&empty)
	d.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(bound))
	for i, bl := range bound {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bl.closeSocket()
			if err := bl.drain(ctx); err != nil {
				errs[i] = fmt.Errorf("port %s: %w", bl.addr, err)
			}
		}()
	}
	wg.Wait()
	d.env.close()
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
