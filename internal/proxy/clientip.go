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
	"net/http"
	"net/netip"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// clientIPPolicy derives a request's client IP (snapshot.ClientIPDetection),
// step 4a. A nil policy takes the connection's peer (after a PROXY
// protocol header, the source it named: proxyprotocol.go).
//
// The forwarding header counts only when the peer is trusted: in
// TrustedCIDRs, or, when TrustedCIDRs is empty and TrustedHops > 0, any
// peer (hop counting alone, as Envoy's xff_num_trusted_hops). Its entries
// are read right to left, all its field lines joined in order (the last
// line is the rightmost), each comma-separated entry trimmed of spaces;
// empty entries are skipped. An entry is an IP address, optionally with a
// port ("10.1.2.3:5678", "[2001:db8::1]:443") or in brackets; IPv4-mapped
// IPv6 is unmapped and a zone dropped. The first entry that is not trusted
// is the client; with TrustedHops = N > 0 the walk also stops at the N-th
// entry from the right (1 is the rightmost, the one the trusted peer
// appended), which is then the client; when every entry is trusted and
// fewer than N, the leftmost is. An entry that is not an address (an
// RFC 7239 "for=" pair, "unknown", garbage) ends the walk as the left end
// of the list would: the last address walked is the client, the peer
// when none was. So an untrusted client can only ever name itself, never
// skip past a trusted hop.
type clientIPPolicy struct {
	// header is the canonical name of the forwarding header.
	header  string
	trusted []netip.Prefix
	hops    int
}

// compileClientIP compiles a route's detection, else returns its
// listener's (lr's ClientTraffic.ClientIP, compiled once per listener);
// nil when neither has one, or when the detection trusts nothing (no
// TrustedCIDRs and no TrustedHops), which is the peer too.
func compileClientIP(in *snapshot.ClientIPDetection, lr *listenerRouter) (*clientIPPolicy, error) {
	if in == nil {
		if lr != nil && lr.clientTraffic != nil {
			return lr.clientTraffic.clientIP, nil
		}
		return nil, nil
	}
	p, err := compileClientIPDetection(in)
	if err != nil {
		return nil, fmt.Errorf("clientIP: %w", err)
	}
	return p, nil
}

// errBadTrustedHops is a negative TrustedHops.
var errBadTrustedHops = errors.New("trustedHops must not be negative")

// compileClientIPDetection compiles one detection, of a route or of a
// listener.
func compileClientIPDetection(in *snapshot.ClientIPDetection) (*clientIPPolicy, error) {
	header := "X-Forwarded-For"
	if in.Header != "" {
		if !validHeaderName(in.Header) {
			return nil, fmt.Errorf("invalid header name %q", in.Header)
		}
		header = http.CanonicalHeaderKey(in.Header)
	}
	if in.TrustedHops < 0 {
		return nil, errBadTrustedHops
	}
	trusted, err := parsePrefixes(in.TrustedCIDRs)
	if err != nil {
		return nil, fmt.Errorf("trustedCIDRs: %w", err)
	}
	if len(trusted) == 0 && in.TrustedHops == 0 {
		return nil, nil
	}
	return &clientIPPolicy{header: header, trusted: trusted, hops: int(in.TrustedHops)}, nil
}

// validHeaderName reports an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// trusts reports whether an address is a trusted hop.
func (p *clientIPPolicy) trusts(a netip.Addr) bool {
	return len(p.trusted) == 0 || containsAddr(p.trusted, a)
}

// clientIP is the request's client address (the zero Addr when the peer
// address cannot be parsed). It reads the client's own forwarding header:
// the one the upstream gets is rebuilt later (step 10, hopheaders.go).
func (p *clientIPPolicy) clientIP(r *http.Request) netip.Addr {
	peer := peerIP(r)
	if p == nil || !peer.IsValid() || !p.trusts(peer) {
		return peer
	}
	client, n := peer, 0
	vals := r.Header[p.header]
	for i := len(vals) - 1; i >= 0; i-- {
		for v := vals[i]; v != ""; {
			var e string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				e, v = v[j+1:], v[:j]
			} else {
				e, v = v, ""
			}
			if e = strings.Trim(e, " \t"); e == "" {
				continue
			}
			a, ok := parseForwardedAddr(e)
			if !ok {
				return client
			}
			client, n = a, n+1
			if !p.trusts(a) || n == p.hops {
				return client
			}
		}
	}
	return client
}

// parseForwardedAddr parses one entry of a forwarding header: an address,
// "[v6]", "v4:port" or "[v6]:port".
func parseForwardedAddr(e string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(e)
	if err != nil {
		if n := len(e); n > 2 && e[0] == '[' && e[n-1] == ']' {
			a, err = netip.ParseAddr(e[1 : n-1])
		} else if ap, perr := netip.ParseAddrPort(e); perr == nil {
			a, err = ap.Addr(), nil
		}
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// peerIP is the address of the connection's peer.
func peerIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}
