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
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// addrTransports keeps one http.Transport per upstream pool key (poolKey:
// the endpoint's address, plus the TLS fingerprint of a TLS set), so the
// idle connections of an address that left the snapshot, or of TLS
// settings that changed, can be closed without closing everyone else's
// (http.Transport can only close all of its idle connections at once). An
// endpoint set's own ConnectTimeout and IdleTimeout (EndpointSet) are
// part of the key (timeoutsKey), so its transports dial and keep idle
// connections as it says. It is the RoundTripper for requests the lean client does not take: streamed
// bodies (leanbody.go), upgrades, h2c and h2, mirrors.
type addrTransports struct {
	newTransport func(*upstreamTLS) *http.Transport
	byAddr       sync.Map // pool key → *http.Transport
}

func newAddrTransports(newTransport func(*upstreamTLS) *http.Transport) *addrTransports {
	return &addrTransports{newTransport: newTransport}
}

// roundTrip sends req through the transport of ep's pool key; req.URL is
// ep.addr, with scheme https for a TLS set.
func (a *addrTransports) roundTrip(req *http.Request, ep *endpoint) (*http.Response, error) {
	return a.transport(ep).RoundTrip(req)
}

func (a *addrTransports) transport(ep *endpoint) *http.Transport {
	if t, ok := a.byAddr.Load(ep.key); ok {
		return t.(*http.Transport)
	}
	t, _ := a.byAddr.LoadOrStore(ep.key, a.transportFor(ep))
	return t.(*http.Transport)
}

// transportFor is a new transport for ep's pool key: the data plane's,
// with the set's connect and idle timeouts when it has its own.
func (a *addrTransports) transportFor(ep *endpoint) *http.Transport {
	t := a.newTransport(ep.tls)
	if ep.idleTimeout > 0 {
		t.IdleConnTimeout = ep.idleTimeout
	}
	if ep.dialer != nil {
		setDialer(t, ep.dialer, ep.tls)
	}
	return t
}

// upstreamKeepAlive is the TCP keep-alive period of upstream connections.
const upstreamKeepAlive = 30 * time.Second

// connectDialer is the dialer of an endpoint set with its own
// ConnectTimeout d (nil for none: the data plane's dialer, with
// Options.DialTimeout). Like Options.DialTimeout, d bounds the connect and
// then, separately, a TLS handshake.
func connectDialer(d time.Duration) *net.Dialer {
	if d <= 0 {
		return nil
	}
	return &net.Dialer{Timeout: d, KeepAlive: upstreamKeepAlive}
}

// timeoutsKey is the part of a pool key (poolKey) that a set's own
// ConnectTimeout and IdleTimeout add ("" for neither): connections are
// not shared with a set of the same address that has other timeouts.
func timeoutsKey(in *snapshot.EndpointSet) string {
	if in.ConnectTimeout <= 0 && in.IdleTimeout <= 0 {
		return ""
	}
	return "|ct:" + in.ConnectTimeout.D().String() + "|it:" + in.IdleTimeout.D().String()
}

// drop forgets the transports of the pool keys and closes their idle
// connections; connections in use finish their exchange and are closed by
// their transport's idle timeout, or by the next retain.
func (a *addrTransports) drop(keys []string) {
	for _, key := range keys {
		if t, ok := a.byAddr.LoadAndDelete(key); ok {
			t.(*http.Transport).CloseIdleConnections()
		}
	}
}

// retain drops every pool key that is not live: the stragglers a request
// still in flight on an older snapshot dialled after its key was dropped.
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

// CloseIdleConnections closes the idle connections of every pool.
func (a *addrTransports) CloseIdleConnections() {
	a.byAddr.Range(func(_, t any) bool {
		t.(*http.Transport).CloseIdleConnections()
		return true
	})
}

// newUpstreamTransport is the http.Transport of one upstream pool key:
// HTTP/1.1, or HTTP/2 for an h2c set; over TLS with u (nil: cleartext),
// whose handshake dialTLS makes (HTTP/2 then negotiated by ALPN h2).
func newUpstreamTransport(opts Options, dialer *net.Dialer, h2 bool, u *upstreamTLS) *http.Transport {
	var p http.Protocols
	switch {
	case h2 && u != nil:
		p.SetHTTP2(true)
	case h2:
		p.SetUnencryptedHTTP2(true)
	default:
		p.SetHTTP1(true)
	}
	t := &http.Transport{
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
	setDialer(t, dialer, u)
	if h2 {
		// Request headers encoded without HPACK's dynamic table, as the
		// servers encode responses (http2Config): what the proxy adds
		// to every request (X-Request-Id, X-Forwarded-For) differs from
		// one request to the next, and each would take the place of
		// another in the table.
		t.HTTP2 = &http.HTTP2Config{MaxEncoderHeaderTableSize: responseHeaderTableSize}
	}
	if h2 && u == nil {
		// The HTTP/2 client flushes a request's HEADERS and its DATA
		// apart, and every stream's on its own: gathered (coalesce.go;
		// over TLS, dialTLS gathers once ALPN chose h2).
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return newCoalescingConn(nc), nil
		}
	}
	return t
}

// setDialer makes t connect with dialer, then over TLS with u (nil:
// cleartext).
func setDialer(t *http.Transport, dialer *net.Dialer, u *upstreamTLS) {
	t.DialContext = dialer.DialContext
	t.DialTLSContext = nil
	if u != nil {
		t.DialTLSContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
			nc, _, err := dialTLS(ctx, dialer, addr, u)
			return nc, err
		}
	}
}
