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
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
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
