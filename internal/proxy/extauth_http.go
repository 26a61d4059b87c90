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
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// HTTP mode of external authorization (extauth.go), as nginx's
// auth_request and Envoy's ext_authz http_service: the server gets a
// request with the client's method, PathPrefix followed by the client's
// path and query, no body, and these headers: the RequestHeaders the
// client sent (default Authorization and Cookie), X-Forwarded-Host (the
// client's Host), X-Forwarded-Method, X-Forwarded-Uri (the request target,
// after path normalisation), X-Forwarded-Proto and X-Forwarded-For (the
// client IP the policies see). Its Host is the endpoint's address; no
// User-Agent or Accept-Encoding is added. It is always HTTP/1.1 (over TLS
// for a set with upstream TLS), whatever the set's AppProtocol.
//
// Its answer: a 2xx admits, copying the UpstreamHeaders it carries into
// the upstream request; a 5xx is the server's failure (503 unless
// FailOpen); anything else (401, 403, a 302 to a login page) is relayed to
// the client: status, headers (ClientHeaders, or all but hop-by-hop and
// framing ones; WWW-Authenticate and Location among them) and the body cut
// at extAuthMaxBody. A denial whose body cannot be read is answered 503,
// never failed open.

// checkHTTP asks the HTTP server.
func (p *extAuthPolicy) checkHTTP(ctx context.Context, ex *exchange, r *http.Request, rt *route) (extAuthVerdict, error) {
	ep := p.set.pick()
	if ep == nil {
		return extAuthFailed, errExtAuthNoEndpoints
	}
	if p.clients == nil {
		return extAuthFailed, errExtAuthNoClients
	}
	tr, err := p.clients.transport(p.set.tls)
	if err != nil {
		return extAuthFailed, err
	}
	ep.inflight.Add(1)
	defer ep.inflight.Add(-1)
	resp, err := tr.RoundTrip(p.authRequest(ctx, ex, r, rt, ep.addr))
	if err != nil {
		return extAuthFailed, fmt.Errorf("%s: %w", ep.addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		// Read a little, so that the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, extAuthMaxBody)
		p.stripUpstream(r.Header)
		for _, k := range p.upstreamHeaders {
			if v := resp.Header[k]; len(v) > 0 {
				setUpstreamFromAuth(ex, r, k, slices.Clone(v))
			}
		}
		return extAuthAdmitted, nil
	case code >= 500:
		return extAuthFailed, fmt.Errorf("%s: the authorization server answered %d", ep.addr, code)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, extAuthMaxBody))
	if err != nil {
		if r.Context().Err() != nil {
			ex.status = 499
		} else {
			answer(ex, http.StatusServiceUnavailable, "external authorization failed")
		}
		return extAuthAnswered, nil
	}
	h := ex.Header()
	for k, v := range resp.Header {
		if p.relayToClient(k) {
			h[k] = v
		}
	}
	writeDenial(ex, resp.StatusCode, body)
	return extAuthAnswered, nil
}

// authRequest is the request to the server at addr.
func (p *extAuthPolicy) authRequest(ctx context.Context, ex *exchange, r *http.Request, rt *route, addr string) *http.Request {
	u := &url.URL{Scheme: "http", Host: addr, Path: p.pathPrefix + r.URL.Path, RawQuery: r.URL.RawQuery}
	if p.set.tls != nil {
		u.Scheme = "https"
	}
	if r.URL.RawPath != "" {
		u.RawPath = p.pathPrefix + r.URL.RawPath
	}
	h := make(http.Header, len(p.requestHeaders)+6)
	for _, k := range p.requestHeaders {
		if v := r.Header[k]; len(v) > 0 {
			h[k] = v
		}
	}
	if len(h["User-Agent"]) == 0 {
		h["User-Agent"] = []string{""} // none, rather than Go's
	}
	h["X-Forwarded-Host"] = []string{r.Host}
	h["X-Forwarded-Method"] = []string{r.Method}
	h["X-Forwarded-Uri"] = []string{extAuthRequestURI(r)}
	h["X-Forwarded-Proto"] = []string{extAuthScheme(r, rt)}
	h["X-Forwarded-For"] = []string{extAuthClientIP(ex, r)}
	req := &http.Request{
		Method:     r.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       addr,
		Body:       http.NoBody,
	}
	return req.WithContext(ctx)
}
