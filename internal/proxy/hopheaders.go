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
	"bufio"
	"net"
	"net/http"
	"strings"
)

// isHop reports the hop-by-hop headers, removed in both directions (RFC
// 9110 7.6.1).
func isHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// isClientForwarding reports headers a client must not be able to set:
// the forwarding headers, and the client certificate the proxy verified
// (clientauth.go).
func isClientForwarding(k string) bool {
	return k == "Forwarded" || k == "X-Real-Ip" || strings.HasPrefix(k, "X-Forwarded-") || k == clientCertHeader
}

// Shared, never mutated: header modifiers copy before appending.
var (
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

// outboundHeader copies the request headers for the upstream: no
// hop-by-hop headers, no client-supplied forwarding headers, and fresh
// X-Forwarded-For/Proto/Host.
func outboundHeader(in http.Header, clientIP, proto, host string) http.Header {
	out := make(http.Header, len(in)+3)
	var conn []string
	if c := in["Connection"]; len(c) > 0 {
		for _, v := range c {
			for _, f := range strings.Split(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					conn = append(conn, http.CanonicalHeaderKey(f))
				}
			}
		}
	}
outer:
	for k, v := range in {
		if isHop(k) || isClientForwarding(k) {
			continue
		}
		for _, c := range conn {
			if c == k {
				continue outer
			}
		}
		out[k] = v
	}
	if teTrailers(in["Te"]) {
		out["Te"] = []string{"trailers"}
	}
	if clientIP != "" {
		out["X-Forwarded-For"] = []string{clientIP}
	}
	if proto == "https" {
		out["X-Forwarded-Proto"] = protoHTTPS
	} else {
		out["X-Forwarded-Proto"] = protoHTTP
	}
	if host != "" {
		out["X-Forwarded-Host"] = []string{host}
	}
	return out
}

// clientIP is the address X-Forwarded-For carries: the peer's host.
func clientIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

// upstreamHeaders are the request headers for the upstream: either a
// prepared map (filters applied), or the client's headers to filter while
// writing them, which spares building a map per request.
type upstreamHeaders struct {
	h                        http.Header
	in                       http.Header
	clientIP, proto, fwdHost string
}

// writeHeaderLine writes one "name: value" line of a head.
func writeHeaderLine(bw *bufio.Writer, k, v string) {
	_, _ = bw.WriteString(k)
	_, _ = bw.WriteString(": ")
	_, _ = bw.WriteString(v)
	_, _ = bw.WriteString("\r\n")
}

// write writes the header lines of the upstream request (the lean
// client's; Host and framing headers are its own).
func (uh *upstreamHeaders) write(bw *bufio.Writer) {
	if uh.h != nil {
		for k, vv := range uh.h {
			if k == "Host" || k == "Content-Length" || k == "Transfer-Encoding" {
				continue
			}
			for _, v := range vv {
				writeHeaderLine(bw, k, v)
			}
		}
		return
	}
	// Same rules as outboundHeader; the caller made sure there is no
	// Connection header whose tokens would name more headers to drop.
	for k, vv := range uh.in {
		if k == "Te" {
			if teTrailers(vv) {
				writeHeaderLine(bw, "Te", "trailers")
			}
			continue
		}
		if isHop(k) || isClientForwarding(k) || k == "Host" || k == "Content-Length" {
			continue
		}
		for _, v := range vv {
			writeHeaderLine(bw, k, v)
		}
	}
	if uh.clientIP != "" {
		writeHeaderLine(bw, "X-Forwarded-For", uh.clientIP)
	}
	writeHeaderLine(bw, "X-Forwarded-Proto", uh.proto)
	if uh.fwdHost != "" {
		writeHeaderLine(bw, "X-Forwarded-Host", uh.fwdHost)
	}
}

// endToEndHeader copies the upstream's response header into the client's,
// without hop-by-hop headers and those the upstream's Connection header
// names, and returns the client's header. A writer that can adopt the
// upstream's map (the fast path's) takes it instead of a copy.
func endToEndHeader(ex *exchange, upstream http.Header) http.Header {
	respConn := upstream["Connection"]
	dst := ex.Header()
	if len(dst) == 0 && ex.adoptHeader(upstream) {
		dst = upstream
		for k := range dst {
			if isHop(k) {
				delete(dst, k)
			}
		}
	} else {
		for k, v := range upstream {
			if isHop(k) {
				continue
			}
			dst[k] = v
		}
	}
	for _, c := range respConn {
		for _, f := range strings.Split(c, ",") {
			delete(dst, http.CanonicalHeaderKey(strings.TrimSpace(f)))
		}
	}
	return dst
}

// teTrailers reports whether the client's TE header accepts trailers, the
// one TE value relayed upstream (gRPC needs it); the rest is hop-by-hop.
func teTrailers(vv []string) bool {
	for _, v := range vv {
		if strings.Contains(strings.ToLower(v), "trailers") {
			return true
		}
	}
	return false
}
