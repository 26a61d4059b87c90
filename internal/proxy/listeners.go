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
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// bindListeners binds every listener st needs that is not bound with the
// right protocol yet. Nothing is published or unbound here, so a failure
// leaves every old listener serving. Caller holds d.mu; the caller serves
// what it returns and drains the listeners they replace.
//
// A port whose protocol changes (HTTP to HTTPS or back) cannot be bound
// twice. SO_REUSEPORT would allow it, but would also let another process,
// or a second proxy on a host network, share the port silently. Instead
// such ports are switched last, once every new port is bound: the old
// listener stops accepting and the new one binds the freed port at once
// (a connection arriving in between is refused; a client of the old
// protocol fails after the switch anyway). If a switch fails, the ports
// switched so far get a listener of their old protocol back.
func (d *DataPlane) bindListeners(st *state) ([]*boundListener, error) {
	var fresh, switching []int32
	for _, port := range st.ports() {
		if bl := d.bound[port]; bl == nil {
			fresh = append(fresh, port)
		} else if bl.tls != st.listeners[port] {
			switching = append(switching, port)
		}
	}
	var opened []*boundListener
	closeOpened := func() {
		for _, bl := range opened {
			_ = bl.ln.Close()
		}
	}
	for _, port := range fresh {
		bl, err := d.bindListener(port, st.listeners[port])
		if err != nil {
			closeOpened()
			return nil, err
		}
		opened = append(opened, bl)
	}
	for i, port := range switching {
		_ = d.bound[port].ln.Close()
		bl, err := d.bindListener(port, st.listeners[port])
		if err != nil {
			closeOpened() // frees the ports switched so far for their restore
			return nil, errors.Join(err, d.restoreListeners(switching[:i+1]))
		}
		opened = append(opened, bl)
	}
	return opened, nil
}

// restoreListeners gives ports whose listener was closed for a protocol
// switch that failed a new listener of their old protocol, serving the
// state in force, and drains the closed one's connections. Caller holds
// d.mu.
func (d *DataPlane) restoreListeners(ports []int32) error {
	var errs []error
	for _, port := range ports {
		old := d.bound[port]
		d.unbind(old)
		bl, err := d.bindListener(port, old.tls)
		if err != nil {
			d.log.Error("lost a listener restoring it after a failed protocol switch", "port", port, "error", err)
			errs = append(errs, fmt.Errorf("restore: %w", err))
			continue
		}
		d.bound[port] = bl
		d.serveListener(bl)
	}
	d.publishPorts()
	return errors.Join(errs...)
}

// bindListener binds one listener port; serveListener serves it.
func (d *DataPlane) bindListener(port int32, isTLS bool) (*boundListener, error) {
	ln, err := d.opts.listen("tcp", net.JoinHostPort(d.opts.BindHost, strconv.Itoa(int(port))))
	if err != nil {
		return nil, fmt.Errorf("bind listener port %d: %w", port, err)
	}
	return &boundListener{port: port, tls: isTLS, ln: ln, done: make(chan struct{})}, nil
}

// publishPorts stores and returns the sorted bound ports. Caller holds
// d.mu.
func (d *DataPlane) publishPorts() []int32 {
	ports := make([]int32, 0, len(d.bound))
	for p := range d.bound {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	d.ports.Store(&ports)
	return ports
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
