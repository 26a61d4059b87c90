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
	"net"
	"net/http"
	"sync"
	"time"
)

// addrTransports keeps one http.Transport per upstream address, so the
// idle connections of an address that left the snapshot can be closed
// without closing everyone else's (http.Transport can only close all of
// its idle connections at once). It is the RoundTripper for requests the
// lean client does not take: bodies, upgrades, h2c, mirrors.
type addrTransports struct {
	newTransport func() *http.Transport
	byAddr       sync.Map // host:port → *http.Transport
}

func newAddrTransports(newTransport func() *http.Transport) *addrTransports {
	return &addrTransports{newTransport: newTransport}
}

// RoundTrip sends req through the transport of req.URL.Host, the
// endpoint's address.
func (a *addrTransports) RoundTrip(req *http.Request) (*http.Response, error) {
	return a.transport(req.URL.Host).RoundTrip(req)
}

func (a *addrTransports) transport(addr string) *http.Transport {
	if t, ok := a.byAddr.Load(addr); ok {
		return t.(*http.Transport)
	}
	t, _ := a.byAddr.LoadOrStore(addr, a.newTransport())
	return t.(*http.Transport)
}

// drop forgets the transports of addrs and closes their idle connections;
// connections in use finish their exchange and are closed by their
// transport's idle timeout, or by the next retain.
func (a *addrTransports) drop(addrs []string) {
	for _, addr := range addrs {
		if t, ok := a.byAddr.LoadAndDelete(addr); ok {
			t.(*http.Transport).CloseIdleConnections()
		}
	}
}

// retain drops every address that is not live: the stragglers a request
// still in flight on an older snapshot dialled after its address was
// dropped.
func (a *addrTransports) retain(live map[string]struct{}) {
	var gone []string
	a.byAddr.Range(func(k, _ any) bool {
		if _, ok := live[k.(string)]; !ok {
			gone = append(gone, k.(string))
		}
		return true
	})
	a.drop(gone)
}

// CloseIdleConnections closes the idle connections of every address.
func (a *addrTransports) CloseIdleConnections() {
	a.byAddr.Range(func(_, t any) bool {
		t.(*http.Transport).CloseIdleConnections()
		return true
	})
}

// newUpstreamTransport is the http.Transport of one upstream address.
func newUpstreamTransport(opts Options, dialer *net.Dialer, h2c bool) *http.Transport {
	var p http.Protocols
	if h2c {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	return &http.Transport{
		DialContext:            dialer.DialContext,
		Protocols:              &p,
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        opts.UpstreamIdleTimeout,
		MaxResponseHeaderBytes: opts.MaxResponseHeaderBytes,
		DisableCompression:     true,
		ExpectContinueTimeout:  time.Second,
		WriteBufferSize:        16 << 10,
		ReadBufferSize:         16 << 10,
	}
}
