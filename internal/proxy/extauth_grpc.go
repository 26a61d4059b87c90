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
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// gRPC mode of external authorization (extauth.go): one
// envoy.service.auth.v3.Authorization/Check call per request, over h2c
// (TLS for a set with upstream TLS), built as Envoy's ext_authz builds it:
//
//   - Source: the client IP the policies see, with the connection's port
//     when that IP is the peer's; Destination: the listener's local
//     address (0.0.0.0 when the server did not record it) and port;
//   - Request.Http: id (the client's X-Request-Id, else a random one),
//     method, headers (lower-case names, multiple values joined with ","
//     and cookies with "; ", no hop-by-hop headers, the pseudo-headers
//     :authority, :method, :path and :scheme; the client's forwarding
//     headers are replaced by the proxy's X-Forwarded-For/-Proto/-Host,
//     as the upstream will see them), path (with the query), host,
//     scheme, protocol ("HTTP/1.0", "HTTP/1.1", "HTTP/2"), size (the
//     declared length, -1 when unknown);
//   - with MaxRequestBytes > 0, the first MaxRequestBytes of the body
//     (Body when it is UTF-8, else RawBody) and the header
//     x-envoy-auth-partial-body; the body read stays on the request, so
//     the upstream still receives all of it. Reading it is bounded by the
//     request body timeout, not by Timeout, and a body that fails to
//     arrive is answered as forward answers it (408 or 400);
//   - TlsSession.Sni on a TLS listener.
//
// The answer: status OK (a missing status too, as Envoy) admits, applying
// OkResponse.Headers to the upstream request (each by its
// HeaderValueOption: the deprecated append when set, else a non-default
// append_action; a header with neither overwrites, the default Envoy
// documents for this message, so a client-sent value is never kept beside
// the server's), then HeadersToRemove, then ResponseHeadersToAdd to the
// client's response (the upstream's headers of the same names win).
// Pseudo-headers, Host, hop-by-hop and framing headers are never touched;
// query parameter mutations are not supported. Any other status denies
// with DeniedResponse: its status (default 403), headers (ClientHeaders
// when set) and body. An ErrorResponse is the server's failure: FailOpen
// admits, otherwise it is relayed like a denial (default 503). A gRPC
// error (Unavailable, DeadlineExceeded, ...) is a failure.

// checkGRPC asks the gRPC server.
func (p *extAuthPolicy) checkGRPC(ctx context.Context, ex *exchange, r *http.Request, rt *route) (extAuthVerdict, error) {
	ep := p.set.pick()
	if ep == nil {
		return extAuthFailed, errExtAuthNoEndpoints
	}
	if p.clients == nil {
		return extAuthFailed, errExtAuthNoClients
	}
	var body *extAuthBody
	if p.maxRequestBytes > 0 {
		var err error
		if body, err = readBodyPrefix(r, p.maxRequestBytes); err != nil {
			answerBodyReadError(ex, r, err)
			return extAuthAnswered, nil
		}
	}
	cc, err := p.clients.conn(ep, p.set.tls)
	if err != nil {
		return extAuthFailed, err
	}
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	resp, err := authv3.NewAuthorizationClient(cc).Check(ctx, checkRequest(ex, r, rt, body))
	if err != nil {
		return extAuthFailed, fmt.Errorf("%s: %w", ep.addr, err)
	}
	if resp.GetStatus().GetCode() == 0 {
		p.applyOK(ex, r, resp.GetOkResponse())
		return extAuthAdmitted, nil
	}
	if er := resp.GetErrorResponse(); er != nil {
		if p.failOpen {
			return extAuthFailed, fmt.Errorf("%s: the authorization server answered an error: %s", ep.addr, resp.GetStatus().GetMessage())
		}
		countExtAuthFailure(ex, rt)
		p.writeDenied(ex, er, http.StatusServiceUnavailable)
		return extAuthAnswered, nil
	}
	p.writeDenied(ex, resp.GetDeniedResponse(), http.StatusForbidden)
	return extAuthAnswered, nil
}

// applyOK applies an admitting answer: the client's UpstreamHeaders out,
// the server's headers in, its removals, its response headers.
func (p *extAuthPolicy) applyOK(ex *exchange, r *http.Request, ok *authv3.OkHttpResponse) {
	p.stripUpstream(r.Header)
	for _, o := range ok.GetHeaders() {
		applyHeaderOption(r.Header, o)
		if k := http.CanonicalHeaderKey(o.GetHeader().GetKey()); isClientForwarding(k) && k != clientCertHeader {
			if v := r.Header[k]; len(v) > 0 {
				setUpstreamFromAuth(ex, r, k, v)
			}
		}
	}
	for _, k := range ok.GetHeadersToRemove() {
		if strings.HasPrefix(k, ":") || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		if ck := http.CanonicalHeaderKey(k); !isFramingOrHop(ck) {
			delete(r.Header, ck)
		}
	}
	if add := ok.GetResponseHeadersToAdd(); len(add) > 0 {
		h := ex.Header()
		for _, o := range add {
			applyHeaderOption(h, o)
		}
	}
}

// writeDenied relays a DeniedHttpResponse (nil: an empty one) with
// status def when it sets none.
func (p *extAuthPolicy) writeDenied(ex *exchange, d *authv3.DeniedHttpResponse, def int) {
	code := int(d.GetStatus().GetCode())
	if code < 200 || code > 599 {
		code = def
	}
	h := ex.Header()
	for _, o := range d.GetHeaders() {
		if k := o.GetHeader().GetKey(); httpguts.ValidHeaderFieldName(k) && p.relayToClient(http.CanonicalHeaderKey(k)) {
			applyHeaderOption(h, o)
		}
	}
	writeDenial(ex, code, []byte(d.GetBody()))
}

// applyHeaderOption applies one HeaderValueOption to h. An invalid name
// or value, a pseudo-header, Host and hop-by-hop or framing headers are
// ignored.
func applyHeaderOption(h http.Header, o *corev3.HeaderValueOption) {
	k, v := o.GetHeader().GetKey(), o.GetHeader().GetValue()
	if v == "" {
		v = string(o.GetHeader().GetRawValue())
	}
	if strings.HasPrefix(k, ":") || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
		return
	}
	ck := http.CanonicalHeaderKey(k)
	if isFramingOrHop(ck) || ck == "Transfer-Encoding" {
		return
	}
	action := o.GetAppendAction()
	switch a := o.GetAppend(); { //nolint:staticcheck // SA1019: servers still send the deprecated append, which Envoy honours first
	case a != nil && a.GetValue():
		action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
	case a != nil || action == corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
		// append false, or neither set: the documented default of ext_authz.
		action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
	}
	_, exists := h[ck]
	switch action {
	case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
		h[ck] = append(slices.Clip(h[ck]), v)
	case corev3.HeaderValueOption_ADD_IF_ABSENT:
		if !exists {
			h[ck] = []string{v}
		}
	case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS:
		if exists {
			h[ck] = []string{v}
		}
	default:
		h[ck] = []string{v}
	}
}

// extAuthBody is the start of a request body sent to the server.
type extAuthBody struct {
	data []byte
	// partial: the body goes on past data.
	partial bool
}

// readBodyPrefix reads up to limit bytes of the request body (nil for a
// request without one) and puts them back in front of the rest, so that
// the body still streams upstream whole. A timed or streamed body stays
// the request's body (the read failures forward answers are its),
// reading through the prefix.
func readBodyPrefix(r *http.Request, limit int64) (*extAuthBody, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength) + 1)
	}
	// One byte more tells whether the body goes on.
	_, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	read := buf.Bytes()
	restoreBodyPrefix(r, read)
	if err != nil {
		return nil, err
	}
	b := &extAuthBody{data: read, partial: int64(len(read)) > limit}
	if b.partial {
		b.data = read[:limit]
	}
	return b, nil
}

// restoreBodyPrefix puts read back in front of what is left of r's body.
func restoreBodyPrefix(r *http.Request, read []byte) {
	if len(read) == 0 {
		return
	}
	if tb, ok := r.Body.(*timedBody); ok {
		tb.rc = &extAuthPrefixBody{prefix: bytes.NewReader(read), rest: tb.rc}
		return
	}
	if fb, ok := r.Body.(*fastBody); ok {
		fb.unread(len(read)) // in memory: read it again
		return
	}
	if sb, ok := r.Body.(*streamedBody); ok {
		sb.unread(read) // read first, then the rest of the connection's
		return
	}
	r.Body = &extAuthPrefixBody{prefix: bytes.NewReader(read), rest: r.Body}
}

// extAuthPrefixBody reads prefix, then rest; closing closes rest.
type extAuthPrefixBody struct {
	prefix *bytes.Reader
	rest   io.ReadCloser
}

func (b *extAuthPrefixBody) Read(p []byte) (int, error) {
	if b.prefix.Len() > 0 {
		return b.prefix.Read(p)
	}
	return b.rest.Read(p)
}

func (b *extAuthPrefixBody) Close() error { return b.rest.Close() }

// checkRequest builds the CheckRequest of r.
func checkRequest(ex *exchange, r *http.Request, rt *route, body *extAuthBody) *authv3.CheckRequest {
	scheme, uri := extAuthScheme(r, rt), extAuthRequestURI(r)
	hdr := make(map[string]string, len(r.Header)+8)
	for k, vv := range r.Header {
		if isHop(k) || isClientForwarding(k) {
			continue
		}
		sep := ","
		if k == "Cookie" {
			sep = "; "
		}
		hdr[strings.ToLower(k)] = strings.Join(vv, sep)
	}
	hdr[":authority"], hdr[":method"], hdr[":path"], hdr[":scheme"] = r.Host, r.Method, uri, scheme
	hdr["x-forwarded-for"], hdr["x-forwarded-proto"] = extAuthClientIP(ex, r), scheme
	if r.Host != "" {
		hdr["x-forwarded-host"] = r.Host
	}
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		id = strconv.FormatUint(rand.Uint64(), 16) //nolint:gosec // G404: a correlation id, not a secret
	}
	size := r.ContentLength
	if r.Body == nil || r.Body == http.NoBody {
		size = 0
	}
	hr := &authv3.AttributeContext_HttpRequest{
		Id:       id,
		Method:   r.Method,
		Headers:  hdr,
		Path:     uri,
		Host:     r.Host,
		Scheme:   scheme,
		Size:     size,
		Protocol: extAuthProtocol(r),
	}
	if body != nil {
		if utf8.Valid(body.data) {
			hr.Body = string(body.data)
		} else {
			hr.RawBody = body.data
		}
		hdr["x-envoy-auth-partial-body"] = strconv.FormatBool(body.partial)
	}
	attrs := &authv3.AttributeContext{
		Source:      &authv3.AttributeContext_Peer{Address: sourceAddress(ex, r)},
		Destination: &authv3.AttributeContext_Peer{Address: destinationAddress(r, rt)},
		Request:     &authv3.AttributeContext_Request{Time: timestamppb.Now(), Http: hr},
	}
	if r.TLS != nil {
		attrs.TlsSession = &authv3.AttributeContext_TLSSession{Sni: r.TLS.ServerName}
	}
	return &authv3.CheckRequest{Attributes: attrs}
}

// extAuthProtocol names the client's protocol as Envoy does.
func extAuthProtocol(r *http.Request) string {
	switch r.ProtoMajor {
	case 2:
		return "HTTP/2"
	case 3:
		return "HTTP/3"
	}
	if r.ProtoMinor == 0 {
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

// sourceAddress is the client's socket address: the client IP the
// policies see, with the peer's port when that IP is the peer's.
func sourceAddress(ex *exchange, r *http.Request) *corev3.Address {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	ip, port := ex.clientIP, uint32(0)
	if !ip.IsValid() {
		ip = peer.Addr()
	}
	if peer.IsValid() && peer.Addr().Unmap() == ip.Unmap() {
		port = uint32(peer.Port())
	}
	host := ""
	if ip.IsValid() {
		host = ip.Unmap().String()
	}
	return socketAddress(host, port)
}

// destinationAddress is the listener's socket address.
func destinationAddress(r *http.Request, rt *route) *corev3.Address {
	host := "0.0.0.0"
	var la *net.TCPAddr
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		la, _ = a.(*net.TCPAddr)
	}
	if la != nil {
		host = la.IP.String()
	}
	return socketAddress(host, uint32(max(rt.port, 0)))
}

// socketAddress is a TCP socket address.
func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}
