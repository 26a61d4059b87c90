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

package provision

import (
	"fmt"
	"net/netip"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A Gateway's spec.addresses (GatewayStaticAddresses): one IPAddress with a
// value pins the ClusterIP of the Service that carries the Gateway's
// traffic (its dedicated Service, or its VIP Service in the shared pool),
// and becomes the Gateway's address. An IPAddress without a value asks for
// any address, which the Gateway gets anyway (GatewayAddressEmpty). Other
// address types are not supported; more than one value cannot be pinned
// (a Service has one ClusterIP per IP family, and Coxswain pins one).

// StaticAddress is what a Gateway's spec.addresses asks of its Service.
type StaticAddress struct {
	// IP is the ClusterIP to pin; empty for none.
	IP string
	// Unsupported names an address whose type is not IPAddress;
	// Unusable says why the IP addresses cannot be pinned. Both empty
	// when the addresses are fine.
	Unsupported, Unusable string
}

// StaticAddressOf reads a Gateway's spec.addresses.
func StaticAddressOf(gw *gwv1.Gateway) StaticAddress {
	var out StaticAddress
	var ips []string
	for _, a := range gw.Spec.Addresses {
		t := gwv1.IPAddressType
		if a.Type != nil {
			t = *a.Type
		}
		if t != gwv1.IPAddressType {
			if out.Unsupported == "" {
				out.Unsupported = fmt.Sprintf("address type %q is not supported; use IPAddress", t)
			}
			continue
		}
		if a.Value == "" {
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil {
			if out.Unsupported == "" {
				out.Unsupported = fmt.Sprintf("address %q is not an IP address", a.Value)
			}
			continue
		}
		ips = append(ips, ip.String())
	}
	switch {
	case len(ips) == 1:
		out.IP = ips[0]
	case len(ips) > 1:
		out.Unusable = fmt.Sprintf("addresses %v: a Gateway's Service takes one static IP address", ips)
	}
	return out
}

// pinnedClusterIP is the ClusterIP a Gateway's Service is rendered with
// ("" lets the cluster assign one).
func pinnedClusterIP(gw *gwv1.Gateway) string {
	sa := StaticAddressOf(gw)
	if sa.Unsupported != "" || sa.Unusable != "" {
		return ""
	}
	return sa.IP
}
