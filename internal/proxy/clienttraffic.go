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
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// A listener port's ClientTraffic (snapshot.ClientTraffic) is compiled
// with its listener (compileListener) and applied from the state in
// force, never from what was in force when the port was bound: listeners
// survive snapshot swaps (listeners.go), so every setting is read again
// where it applies, and a change takes effect without a rebind.
//
//   - ProxyProtocol: read at each accept, before the fast path, net/http
//     and TLS see the connection (proxyprotocol.go).
//   - ClientIP: the default detection of the listener's routes
//     (clientip.go), and the access log's client IP of requests no route
//     took.
//   - RequestHeaderTimeout and IdleTimeout: the fast path reads them for
//     every request head and every keep-alive wait; net/http reads them,
//     with the HTTP2 settings, when it is given a connection (at accept,
//     or when the fast path hands one off), which then keeps them for its
//     life (clienttraffic_servers.go). They also bound the PROXY header.
//   - EncodedSlashes and UnderscoreHeaders: per request, in step 3
//     (normalizeOn). UnderscoreHeaders is applied at parse too: Drop (the
//     default) drops them there as before; with Reject or Allow the fast
//     path hands a head with such a field to net/http, whose handler
//     keeps it for step 3. A request is held to the Drop or keep of the
//     policy in force when its head was read, and to the Reject of the
//     one in force at step 3.
//   - MergeSlashes: the proxy always merges slashes before routing
//     (normalize.go), so it asks for what is done anyway; there is no
//     way to turn merging off, since routes are matched on the merged
//     path.

// clientTrafficPolicy is a listener's compiled snapshot.ClientTraffic.
// A nil policy keeps the proxy's defaults; its methods take nil.
type clientTrafficPolicy struct {
	proxyProtocol *proxyProtocolPolicy
	clientIP      *clientIPPolicy
	// headerTimeout and idleTimeout are 0 for the proxy's defaults.
	headerTimeout time.Duration
	idleTimeout   time.Duration
	http2         snapshot.HTTP2Settings
	slashes       snapshot.EncodedSlashAction
	underscores   snapshot.UnderscoreHeaderAction
}

// The bounds of the HTTP/2 settings (RFC 9113 §6.5.2, §6.9.1).
const (
	minH2ConnWindow = 65535
	maxH2Window     = 1<<31 - 1
)

var (
	errNegativeTimeout = errors.New("timeouts must not be negative")
	errBadHTTP2        = errors.New("http2: maxConcurrentStreams and windows must not be negative, the connection window is at least 65535")
)

// compileClientTraffic compiles a listener's ClientTraffic; nil when it
// has none. Unknown actions, negative durations or HTTP/2 settings and
// malformed CIDRs are errors.
func compileClientTraffic(in *snapshot.ClientTraffic) (*clientTrafficPolicy, error) {
	if in == nil {
		return nil, nil
	}
	ct := &clientTrafficPolicy{
		headerTimeout: in.RequestHeaderTimeout.D(),
		idleTimeout:   in.IdleTimeout.D(),
		slashes:       in.EncodedSlashes,
		underscores:   in.UnderscoreHeaders,
	}
	if ct.headerTimeout < 0 || ct.idleTimeout < 0 {
		return nil, errNegativeTimeout
	}
	var err error
	if ct.proxyProtocol, err = compileProxyProtocol(in.ProxyProtocol); err != nil {
		return nil, err
	}
	if in.ClientIP != nil {
		if ct.clientIP, err = compileClientIPDetection(in.ClientIP); err != nil {
			return nil, fmt.Errorf("clientIP: %w", err)
		}
	}
	if h := in.HTTP2; h != nil {
		if h.MaxConcurrentStreams < 0 || h.InitialStreamWindowSize < 0 || h.InitialConnectionWindowSize < 0 ||
			(h.InitialConnectionWindowSize > 0 && h.InitialConnectionWindowSize < minH2ConnWindow) {
			return nil, errBadHTTP2
		}
		ct.http2 = *h
	}
	switch ct.slashes {
	case "", snapshot.EncodedSlashRedirect, snapshot.EncodedSlashReject, snapshot.EncodedSlashDecode, snapshot.EncodedSlashKeep:
	default:
		return nil, fmt.Errorf("unknown encodedSlashes action %q", ct.slashes)
	}
	switch ct.underscores {
	case "", snapshot.UnderscoreHeadersDrop, snapshot.UnderscoreHeadersReject, snapshot.UnderscoreHeadersAllow:
	default:
		return nil, fmt.Errorf("unknown underscoreHeaders action %q", ct.underscores)
	}
	return ct, nil
}

// traffic is the listener's ClientTraffic (nil for no listener).
func (lr *listenerRouter) traffic() *clientTrafficPolicy {
	if lr == nil {
		return nil
	}
	return lr.clientTraffic
}

// portTraffic is the ClientTraffic of a listener port in the state in
// force (nil when it has none, or the port is not an HTTP or HTTPS
// listener of it).
func (d *DataPlane) portTraffic(port int32) *clientTrafficPolicy {
	st := d.state.Load()
	if st == nil {
		return nil
	}
	return st.router.ports[port].traffic()
}

// requestHeaderTimeout is the port's bound on a request head, else def.
func (ct *clientTrafficPolicy) requestHeaderTimeout(def time.Duration) time.Duration {
	if ct == nil || ct.headerTimeout <= 0 {
		return def
	}
	return ct.headerTimeout
}

// keepAliveTimeout is the port's bound on an idle keep-alive connection,
// else the proxy's (fastIdleTimeout, net/http's too).
func (ct *clientTrafficPolicy) keepAliveTimeout() time.Duration {
	if ct == nil || ct.idleTimeout <= 0 {
		return fastIdleTimeout
	}
	return ct.idleTimeout
}

// dropsUnderscores reports whether header fields whose names hold "_" are
// dropped at parse (Drop, the default).
func (ct *clientTrafficPolicy) dropsUnderscores() bool {
	return ct == nil || ct.underscores == "" || ct.underscores == snapshot.UnderscoreHeadersDrop
}

// slashAction is what a path with %2F or %5C gets: the port's action,
// else the proxy's (--escaped-slashes).
func (ct *clientTrafficPolicy) slashAction(def EscapedSlashAction) snapshot.EncodedSlashAction {
	if ct != nil && ct.slashes != "" {
		return ct.slashes
	}
	if def == EscapedSlashReject {
		return snapshot.EncodedSlashReject
	}
	return snapshot.EncodedSlashRedirect
}

// headerTimeout is the bound on the fast path's next request head.
func (fs *fastServer) headerTimeout() time.Duration {
	return fs.d.portTraffic(fs.port).requestHeaderTimeout(fs.d.opts.HeaderTimeout)
}

// idleTimeout is the fast path's bound on a keep-alive wait.
func (fs *fastServer) idleTimeout() time.Duration {
	return fs.d.portTraffic(fs.port).keepAliveTimeout()
}

// keepsUnderscores reports whether the buffered simple head of headLen
// bytes has a field name with "_" that the port's policy keeps (Reject,
// Allow): the fast path, which drops such fields as it parses, hands it
// to net/http instead.
func (fs *fastServer) keepsUnderscores(br *bufio.Reader, headLen int) bool {
	if fs.d.portTraffic(fs.port).dropsUnderscores() {
		return false
	}
	head, _ := br.Peek(headLen)
	return headHasUnderscoreName(head)
}

// headHasUnderscoreName reports a field line of a head (request line
// first, CRLF line ends) whose name holds "_".
func headHasUnderscoreName(head []byte) bool {
	_, rest, _ := bytes.Cut(head, []byte("\r\n"))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, _, _ := bytes.Cut(line, []byte(":"))
		if bytes.IndexByte(name, '_') >= 0 {
			return true
		}
	}
	return false
}

// normalizeOn is step 3 under the listener's ClientTraffic: header fields
// whose names hold "_" are refused (400) or dropped as its policy says,
// then the path is normalised with its EncodedSlashes action
// (normalizeUnder). It also records the listener's client IP detection in
// ex, so the access log of a request no route takes (404) names the
// detected client too; a matched route detects again with its own.
func (d *DataPlane) normalizeOn(ex *exchange, r *http.Request, lr *listenerRouter) bool {
	ct := lr.traffic()
	if ct != nil {
		if ct.clientIP != nil {
			ex.clientIP = ct.clientIP.clientIP(r)
		}
		if !ct.admitUnderscores(ex, r) {
			return false
		}
	}
	return d.normalizeUnder(ex, r, ct)
}

// admitUnderscores applies UnderscoreHeaders in step 3: Reject answers
// 400 to a request with a field whose name holds "_"; Drop drops those a
// head parsed under another policy kept; Allow keeps them.
func (ct *clientTrafficPolicy) admitUnderscores(w http.ResponseWriter, r *http.Request) bool {
	switch ct.underscores {
	case snapshot.UnderscoreHeadersAllow:
	case snapshot.UnderscoreHeadersReject:
		for k := range r.Header {
			if strings.IndexByte(k, '_') >= 0 {
				answer(w, http.StatusBadRequest, "header names with underscores are not accepted")
				return false
			}
		}
	default:
		dropUnderscoreHeaders(r.Header)
	}
	return true
}

// decodeEncodedSlashes turns the %2F and %5C of a normalised path into
// "/" (EncodedSlashDecode, as snapshot.PathNormalization's DecodeSlashes)
// and normalises the result again, so the decoded separators merge and
// their dot segments resolve before routing.
func decodeEncodedSlashes(p string) string {
	return removeDotSegments(strings.NewReplacer("%2F", "/", "%5C", "/").Replace(p))
}
