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
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// ipAccessPolicy allows or denies by client IP (snapshot.IPAccess), step
// 4b. The deny list is checked first: a client in it is refused even when
// the allow list holds it too. Then, when the allow list is not empty, a
// client outside it is refused, and so is a request whose client address
// is unknown (the zero Addr). Refused requests get 403. Addresses are
// compared unmapped: ::ffff:10.1.2.3 is 10.1.2.3, for the client and the
// lists alike.
type ipAccessPolicy struct {
	allow, deny []netip.Prefix
}

// compileIPAccess compiles a route's lists; nil when it has none. A bare
// address is a single host (/32, /128); a malformed entry is an error
// that names it.
func compileIPAccess(in *snapshot.IPAccess) (*ipAccessPolicy, error) {
	if in == nil || len(in.Allow) == 0 && len(in.Deny) == 0 {
		return nil, nil
	}
	allow, err := parsePrefixes(in.Allow)
	if err != nil {
		return nil, fmt.Errorf("ipAccess allow: %w", err)
	}
	deny, err := parsePrefixes(in.Deny)
	if err != nil {
		return nil, fmt.Errorf("ipAccess deny: %w", err)
	}
	return &ipAccessPolicy{allow: allow, deny: deny}, nil
}

// parsePrefixes parses CIDRs and bare addresses into masked, unmapped
// prefixes.
func parsePrefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		p, err := parsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePrefix parses one CIDR ("10.0.0.0/8") or bare address ("10.1.2.3",
// a /32). An IPv4-mapped IPv6 prefix of at least /96 becomes the IPv4
// prefix it maps, so it matches the unmapped client addresses.
func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("invalid address or CIDR %q", s)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// admit answers 403 and returns false for a refused client. A nil policy
// admits every client.
func (p *ipAccessPolicy) admit(ex *exchange, ip netip.Addr) bool {
	if p == nil {
		return true
	}
	ip = ip.Unmap().WithZone("")
	if containsAddr(p.deny, ip) || len(p.allow) > 0 && !containsAddr(p.allow, ip) {
		answer(ex, http.StatusForbidden, "access denied")
		return false
	}
	return true
}

// containsAddr reports whether a prefix of ps holds ip (never the zero
// Addr).
func containsAddr(ps []netip.Prefix, ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
