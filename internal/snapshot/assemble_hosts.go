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

package snapshot

import (
	"slices"
	"strings"
)

// Discovery's server assembles every snapshot it publishes from the
// resources it encoded, as a proxy will (for the version, the Gateways and
// the validation a proxy makes). Decoded, the virtual hosts of 10,000
// routes were a second copy of every route in the controller's heap
// besides the translator's own, kept as long as the snapshot. Given the
// snapshot the resources were encoded from (Assembler.Hosts, HostsOf), the
// Assembler takes each virtual host from it instead: the version is still
// that of the bodies, and validation reads the same values (a body is the
// host's JSON, and decoding it gives the host back:
// TestAssemblerHostsOfSource).

// decode is the value of r: its virtual host from a.Hosts when that has
// it, else its body decoded.
func (a *Assembler) decode(r Resource) (any, error) {
	if a.Hosts != nil && strings.HasPrefix(r.Key, vhostKind+"|") {
		if vh, ok := a.Hosts(r.Key); ok {
			return vh, nil
		}
	}
	return decodeResource(r)
}

// HostsOf finds the virtual host of a resource key in s, the snapshot the
// resources were encoded from: by listener key, then by hostname in the
// listener's hosts (in order by hostname, as a normalized snapshot lists
// them; a host not found where it should be is reported missing, and
// decoded).
func HostsOf(s *Snapshot) func(key string) (VirtualHost, bool) {
	var listenerAt map[string]int // made at the first look-up
	return func(key string) (VirtualHost, bool) {
		rest, ok := strings.CutPrefix(key, vhostKind+"|")
		if !ok {
			return VirtualHost{}, false
		}
		lk, host, ok := strings.Cut(rest, "|")
		if !ok {
			return VirtualHost{}, false
		}
		if listenerAt == nil {
			listenerAt = listenerIndex(s)
		}
		li, found := listenerAt[lk]
		if !found {
			return VirtualHost{}, false
		}
		hosts := s.Listeners[li].VirtualHosts
		i, found := slices.BinarySearchFunc(hosts, host, func(vh VirtualHost, h string) int { return strings.Compare(vh.Hostname, h) })
		if !found {
			return VirtualHost{}, false
		}
		return hosts[i], true
	}
}
