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
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// External authorization (step 5d of the request path, policies.go): a
// route with snapshot.ExtAuth asks an authorization server, an endpoint
// set of the snapshot, whether to admit each request before it goes
// upstream. The endpoint is picked by the set's balancer; a set with
// upstream TLS is reached over TLS with its settings (upstreamtls.go).
//
// HTTP mode (extauth_http.go) sends the client's method and path (after
// PathPrefix) without a body, with the RequestHeaders and the
// X-Forwarded-Host/-Method/-Uri/-Proto/-For of the request. gRPC mode
// (extauth_grpc.go) calls envoy.service.auth.v3.Authorization/Check as
// Envoy's ext_authz filter does, so OPA-Envoy, Authorino and other
// existing servers work unchanged.
//
// Verdicts:
//   - admitted (HTTP: a 2xx answer; gRPC: status OK): the server's
//     headers go into the upstream request (HTTP: the UpstreamHeaders of
//     the answer; gRPC: OkResponse.Headers and HeadersToRemove). The
//     client's own copies of the UpstreamHeaders names are always removed
//     first, so a client cannot pass one off as the server's;
//   - denied (HTTP: any other answer below 500; gRPC: any other status):
//     the server's status, headers (ClientHeaders, or all but hop-by-hop
//     and framing ones) and body (at most extAuthMaxBody) go to the
//     client. A denial is never failed open;
//   - failed: no endpoint, the server unreachable, a timeout (Timeout,
//     default extAuthDefaultTimeout), a transport or protocol error, an
//     HTTP 5xx (as Envoy: the server's own error, not a verdict) or a
//     gRPC ErrorResponse. The request gets 503, or with FailOpen goes on
//     upstream (still without the client's UpstreamHeaders). Failures are
//     counted as coxswain_proxy_upstream_errors_total{kind="ext_auth"}.
//     A client that went away meanwhile is logged 499 and gets nothing.
//
// The connections (HTTP keep-alive pools and one gRPC connection per
// endpoint) are the data plane's, kept across snapshots in
// extAuthClients. A state compiled without the data plane's policy
// environment (compile in tests) has none: its requests fail as above.

// extAuthDefaultTimeout bounds one authorization call when ExtAuth sets
// no Timeout: generous for a server on the cluster network, short enough
// that an overloaded one cannot hold every request for long (Envoy's
// default is 200ms, nginx's auth_request 60s).
const extAuthDefaultTimeout = 2 * time.Second

// extAuthMaxBody bounds the body of a denial relayed to the client (an
// HTTP server's answer is cut there), and what is read of an admitting
// answer's body to keep its connection.
const extAuthMaxBody = 64 << 10

// errExtAuthNoEndpoints fails a call to an endpoint set without
// endpoints.
var errExtAuthNoEndpoints = errors.New("the authorization server's endpoint set has no endpoints")

// errExtAuthNoClients fails a call when the state was compiled without
// the data plane's connections, or after the data plane shut down.
var errExtAuthNoClients = errors.New("no connections to authorization servers (data plane closed)")

// extAuthClients are the connections to external authorization servers,
// across snapshots: an HTTP/1.1 keep-alive transport per TLS setting
// (cleartext under ""), and one gRPC connection per endpoint pool key
// (address and TLS settings, poolKey). A gRPC connection unused for the
// upstream idle timeout closes its transport until the next call.
type extAuthClients struct {
	dialer        *net.Dialer
	log           *slog.Logger
	maxIdle       int
	idleTimeout   time.Duration
	maxHeaderSize int64

	mu         sync.Mutex
	closed     bool
	transports map[string]*http.Transport
	conns      map[string]*grpc.ClientConn
}

// newExtAuthClients builds the (empty) connection cache of d.
func newExtAuthClients(d *DataPlane) *extAuthClients {
	c := &extAuthClients{
		log:           slog.New(slog.DiscardHandler),
		maxIdle:       64,
		idleTimeout:   90 * time.Second,
		maxHeaderSize: DefaultMaxResponseHeaderBytes,
		transports:    map[string]*http.Transport{},
		conns:         map[string]*grpc.ClientConn{},
	}
	if d == nil {
		c.dialer = &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
		return c
	}
	c.dialer, c.log = d.dialer, d.log
	c.maxIdle, c.idleTimeout, c.maxHeaderSize = d.opts.MaxIdleConnsPerHost, d.opts.UpstreamIdleTimeout, d.opts.MaxResponseHeaderBytes
	return c
}

// close closes every connection; later calls fail (errExtAuthNoClients).
func (c *extAuthClients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
	for _, cc := range c.conns {
		_ = cc.Close()
	}
	c.transports, c.conns = map[string]*http.Transport{}, map[string]*grpc.ClientConn{}
}

// transport is the HTTP/1.1 transport of the TLS settings u (nil:
// cleartext), made on first use.
func (c *extAuthClients) transport(u *upstreamTLS) (*http.Transport, error) {
	key := ""
	if u != nil {
		key = u.fp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errExtAuthNoClients
	}
	if t := c.transports[key]; t != nil {
		return t, nil
	}
	t := &http.Transport{
		Proxy:                  nil, // never the environment's proxy
		DialContext:            c.dialer.DialContext,
		MaxIdleConnsPerHost:    c.maxIdle,
		IdleConnTimeout:        c.idleTimeout,
		MaxResponseHeaderBytes: c.maxHeaderSize,
		// The answer's body and Content-Encoding are relayed as they are.
		DisableCompression: true,
	}
	if u != nil {
		h1 := withALPN(u, "http/1.1")
		dialer := c.dialer
		t.DialTLSContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
			nc, _, err := dialTLS(ctx, dialer, addr, h1)
			return nc, err
		}
	}
	c.transports[key] = t
	return t, nil
}

// conn is the gRPC connection to ep (h2c, or TLS with u), made on first
// use; grpc connects lazily, so a server down fails the call, not this.
func (c *extAuthClients) conn(ep *endpoint, u *upstreamTLS) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errExtAuthNoClients
	}
	if cc := c.conns[ep.key]; cc != nil {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if u != nil {
		creds = credentials.NewTLS(withALPN(u, "h2").cfg)
	}
	dialer := c.dialer
	cc, err := grpc.NewClient("passthrough:///"+ep.addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", addr)
		}),
		grpc.WithIdleTimeout(c.idleTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("gRPC client for %s: %w", ep.addr, err)
	}
	c.conns[ep.key] = cc
	return cc, nil
}

// withALPN is u offering only the protocol alpn: the authorization client
// speaks HTTP/1.1 (HTTP mode) or h2 (gRPC) whatever the set's protocol.
func withALPN(u *upstreamTLS, alpn string) *upstreamTLS {
	v := *u
	v.cfg = u.cfg.Clone()
	v.cfg.NextProtos = []string{alpn}
	return &v
}

// extAuthPolicy is a route's compiled snapshot.ExtAuth.
type extAuthPolicy struct {
	grpc bool
	set  *endpointSet
	// clients is nil in a state compiled without the data plane's.
	clients  *extAuthClients
	timeout  time.Duration
	failOpen bool
	// HTTP mode: the path prefix and the client headers sent.
	pathPrefix     string
	requestHeaders []string
	// upstreamHeaders (canonical names) are copied from an admitting HTTP
	// answer; in both modes the client's copies never reach the upstream.
	upstreamHeaders []string
	// clientHeaders (canonical names) are relayed from a denial; nil
	// relays all but hop-by-hop and framing headers.
	clientHeaders map[string]bool
	// maxRequestBytes > 0 (gRPC mode) sends up to this much of the body.
	maxRequestBytes int64
}

// extAuthDefaultRequestHeaders are the client headers an HTTP-mode server
// gets when ExtAuth lists none.
var extAuthDefaultRequestHeaders = []string{"Authorization", "Cookie"}

// compileExtAuth compiles a route's external authorization (nil: none).
// An unknown mode or endpoint set, a negative timeout or body size, a
// path prefix that is not an unescaped absolute path and an invalid
// header name are errors.
func (c *compiler) compileExtAuth(in *snapshot.ExtAuth) (*extAuthPolicy, error) {
	if in == nil {
		return nil, nil
	}
	p := &extAuthPolicy{timeout: in.Timeout.D(), failOpen: in.FailOpen, pathPrefix: in.PathPrefix, maxRequestBytes: in.MaxRequestBytes}
	switch in.Mode {
	case snapshot.ExtAuthHTTP:
	case snapshot.ExtAuthGRPC:
		p.grpc = true
	default:
		return nil, fmt.Errorf("extAuth: unknown mode %q", in.Mode)
	}
	if p.set = c.set(in.EndpointSet); p.set == nil {
		return nil, fmt.Errorf("extAuth: unknown endpoint set %q", in.EndpointSet)
	}
	switch {
	case p.timeout < 0:
		return nil, fmt.Errorf("extAuth: negative timeout %s", p.timeout)
	case p.timeout == 0:
		p.timeout = extAuthDefaultTimeout
	}
	if p.maxRequestBytes < 0 {
		return nil, fmt.Errorf("extAuth: negative maxRequestBytes %d", p.maxRequestBytes)
	}
	if err := checkExtAuthPathPrefix(in.PathPrefix); err != nil {
		return nil, err
	}
	var err error
	if p.requestHeaders, err = extAuthHeaderNames("requestHeaders", in.RequestHeaders); err != nil {
		return nil, err
	}
	// The proxy sets the forwarding headers itself.
	p.requestHeaders = slices.DeleteFunc(p.requestHeaders, isClientForwarding)
	if len(in.RequestHeaders) == 0 {
		p.requestHeaders = extAuthDefaultRequestHeaders
	}
	if p.upstreamHeaders, err = extAuthHeaderNames("upstreamHeaders", in.UpstreamHeaders); err != nil {
		return nil, err
	}
	client, err := extAuthHeaderNames("clientHeaders", in.ClientHeaders)
	if err != nil {
		return nil, err
	}
	if len(in.ClientHeaders) > 0 {
		p.clientHeaders = make(map[string]bool, len(client))
		for _, k := range client {
			p.clientHeaders[k] = true
		}
	}
	if c.env != nil {
		p.clients = c.env.extAuth
	}
	return p, nil
}

// checkExtAuthPathPrefix accepts "" or an absolute path of unescaped path
// characters (RFC 3986 pchar and "/").
func checkExtAuthPathPrefix(s string) error {
	if s == "" {
		return nil
	}
	if s[0] != '/' {
		return fmt.Errorf("extAuth: pathPrefix %q does not start with /", s)
	}
	for i := range len(s) {
		switch b := s[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '/' || b == '-' || b == '.' || b == '_' || b == '~' || b == '!' || b == '$' || b == '&' ||
			b == '\'' || b == '(' || b == ')' || b == '*' || b == '+' || b == ',' || b == ';' || b == '=' || b == ':' || b == '@':
		default:
			return fmt.Errorf("extAuth: pathPrefix %q holds %q, not an unescaped path character", s, b)
		}
	}
	return nil
}

// extAuthHeaderNames canonicalises header names, without hop-by-hop and
// framing headers (never relayed either way) and duplicates; an invalid
// name is an error.
func extAuthHeaderNames(field string, names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !httpguts.ValidHeaderFieldName(n) {
			return nil, fmt.Errorf("extAuth: %s: invalid header name %q", field, n)
		}
		k := http.CanonicalHeaderKey(n)
		if isFramingOrHop(k) || slices.Contains(out, k) {
			continue
		}
		out = append(out, k)
	}
	return out, nil
}

// isFramingOrHop reports the headers an authorization exchange never
// copies: hop-by-hop, framing and Host.
func isFramingOrHop(k string) bool {
	return isHop(k) || k == "Content-Length" || k == "Host"
}

// extAuthVerdict is the outcome of one authorization call.
type extAuthVerdict int

const (
	// extAuthFailed: no verdict; 503 or FailOpen.
	extAuthFailed extAuthVerdict = iota
	// extAuthAdmitted: the request goes on.
	extAuthAdmitted
	// extAuthAnswered: the client got the denial (or an error answer).
	extAuthAnswered
)

// admit asks the server; it relays a denial (or answers 503) and returns
// false when the request may not go on.
func (p *extAuthPolicy) admit(ex *exchange, r *http.Request, rt *route) bool {
	if p == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	var (
		v   extAuthVerdict
		err error
	)
	if p.grpc {
		v, err = p.checkGRPC(ctx, ex, r, rt)
	} else {
		v, err = p.checkHTTP(ctx, ex, r, rt)
	}
	switch v {
	case extAuthAdmitted:
		return true
	case extAuthAnswered:
		return false
	}
	return p.failed(ex, r, rt, err)
}

// failed ends a call without a verdict: a client gone is logged 499;
// otherwise the failure is counted and logged, and the request admitted
// (FailOpen) or answered 503.
func (p *extAuthPolicy) failed(ex *exchange, r *http.Request, rt *route, err error) bool {
	if r.Context().Err() != nil {
		ex.status = 499 // the client went away; nothing to send
		return false
	}
	countExtAuthFailure(ex, rt)
	if p.clients != nil {
		p.clients.log.Debug("external authorization failed", "route", rt.id, "failOpen", p.failOpen, "error", err)
	}
	if p.failOpen {
		p.stripUpstream(r.Header)
		return true
	}
	answer(ex, http.StatusServiceUnavailable, "external authorization unavailable")
	return false
}

// countExtAuthFailure counts a failed authorization call of rt.
func countExtAuthFailure(ex *exchange, rt *route) {
	ex.upstreamError(rt, "ext_auth")
}

// stripUpstream removes the client's copies of the UpstreamHeaders.
func (p *extAuthPolicy) stripUpstream(h http.Header) {
	for _, k := range p.upstreamHeaders {
		delete(h, k)
	}
}

// relayToClient reports whether a denial's header k goes to the client.
func (p *extAuthPolicy) relayToClient(k string) bool {
	if isFramingOrHop(k) || k == "Transfer-Encoding" {
		return false
	}
	return p.clientHeaders == nil || p.clientHeaders[k]
}

// writeDenial answers the client with a denial's status and body; its
// headers are in the client's response header already.
func writeDenial(ex *exchange, code int, body []byte) {
	h := ex.Header()
	if len(body) > 0 && len(h["Content-Type"]) == 0 {
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		h["X-Content-Type-Options"] = []string{"nosniff"}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	ex.WriteHeader(code)
	_, _ = ex.Write(body)
}

// answerBodyReadError answers a request whose body could not be read for
// the server (gRPC MaxRequestBytes) as forward does: 408 for a stalled
// body, 499 for a client gone, else 400.
func answerBodyReadError(ex *exchange, r *http.Request, err error) {
	switch {
	case errors.Is(err, errBodyTimeout):
		ex.Header()["Connection"] = []string{"close"}
		answer(ex, http.StatusRequestTimeout, "request body timed out")
	case r.Context().Err() != nil:
		ex.status = 499
	default:
		ex.Header()["Connection"] = []string{"close"}
		answer(ex, http.StatusBadRequest, "malformed or incomplete request body")
	}
}

// extAuthRequestURI is the request target the client sent (after path
// normalisation), in origin form.
func extAuthRequestURI(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}

// extAuthClientIP is the client address the policies see, else the
// connection's peer.
func extAuthClientIP(ex *exchange, r *http.Request) string {
	if ex.clientIP.IsValid() {
		return ex.clientIP.String()
	}
	return clientIP(r.RemoteAddr)
}

// extAuthScheme is the scheme the client used.
func extAuthScheme(r *http.Request, rt *route) string {
	if rt.tls || r.TLS != nil {
		return "https"
	}
	return "http"
}

// setUpstreamFromAuth sets header k of the upstream request to v, as an
// authorization server asked. A forwarding header name (X-Forwarded-User,
// X-Real-Ip, ...) goes to ex.authForwarded, applied after the proxy strips
// the client's forwarding headers; any other replaces the client's.
func setUpstreamFromAuth(ex *exchange, r *http.Request, k string, v []string) {
	if isClientForwarding(k) && k != clientCertHeader {
		delete(r.Header, k)
		if ex.authForwarded == nil {
			ex.authForwarded = http.Header{}
		}
		ex.authForwarded[k] = v
		return
	}
	r.Header[k] = v
}
