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

package serviceproxy

import (
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// backendKey names the endpoints of one Service port: "tcp/<ns>/<svc>/<port
// name>" or "udp/<ns>/<svc>/<port name>". EndpointSlice ports are matched to
// Service ports by name and protocol.
func backendKey(proto corev1.Protocol, namespace, service, portName string) string {
	return strings.ToLower(string(proto)) + "/" + namespace + "/" + service + "/" + portName
}

// proxied reports whether the proxy serves a port of this protocol (an
// empty protocol is TCP); SCTP is not.
func proxied(proto corev1.Protocol) (corev1.Protocol, bool) {
	switch proto {
	case "", corev1.ProtocolTCP:
		return corev1.ProtocolTCP, true
	case corev1.ProtocolUDP:
		return corev1.ProtocolUDP, true
	}
	return proto, false
}

// serviceBackends maps each Service port's backendKey to the endpoint
// addresses new connections (TCP) or sessions (UDP) of that port go to
// ("ip:port", sorted): the ready ones or, as kube-proxy does when a Service
// has none, those still serving while they terminate (a pod being deleted
// shows ready=false, terminating=true and serving while it passes its
// readiness probe). Connections and sessions already open to an endpoint
// that leaves the list are left alone.
func serviceBackends(slices []*discoveryv1.EndpointSlice) map[string][]string {
	ready, terminating := map[string][]string{}, map[string][]string{}
	for _, s := range slices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, p := range s.Ports {
			var proto corev1.Protocol
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			proto, ok := proxied(proto)
			if p.Port == nil || !ok {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			key := backendKey(proto, s.Namespace, svc, name)
			for _, e := range s.Endpoints {
				var into map[string][]string
				switch c := e.Conditions; {
				case c.Ready == nil || *c.Ready:
					into = ready
				case c.Terminating != nil && *c.Terminating && c.Serving != nil && *c.Serving:
					into = terminating
				default:
					continue
				}
				for _, a := range e.Addresses {
					into[key] = append(into[key], net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	for k, addrs := range terminating {
		if len(ready[k]) == 0 {
			ready[k] = addrs
		}
	}
	for k := range ready {
		sort.Strings(ready[k])
	}
	return ready
}

// frontendAddresses are the addresses a Service is served on: its IPv4
// ClusterIPs and, for a LoadBalancer Service, its VIP.
func frontendAddresses(svc *corev1.Service, vip string) []string {
	var out []string
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, ip := range ips {
		if p := net.ParseIP(ip); p != nil && p.To4() != nil {
			out = append(out, ip)
		}
	}
	if vip != "" {
		out = append(out, vip)
	}
	return out
}
