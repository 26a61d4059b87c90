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

package translator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// gatewayService is the Service that carries a Gateway's traffic: its
// dedicated Service, or its VIP Service in the shared pool (nil before it
// exists).
func (t *translator) gatewayService(gi *gatewayInfo) *corev1.Service {
	if gi.dedicated {
		// The Service name is shortened (hashed) when the Deployment's name
		// is not a valid Service name; look it up as provision names it.
		return t.ix.dedSvc[nn{Namespace: gi.gw.Namespace, Name: names.DedicatedServiceName(gi.gw.Name, string(gi.gw.Spec.GatewayClassName))}]
	}
	return t.ix.vip[key(&gi.gw.ObjectMeta)]
}

// addressNotUsable says why the static address a Gateway asks for is not
// its address ("" when it asks none or has it).
func (t *translator) addressNotUsable(gi *gatewayInfo) string {
	if gi.address.Unusable != "" {
		return gi.address.Unusable
	}
	ip := gi.address.IP
	if ip == "" {
		return ""
	}
	svc := t.gatewayService(gi)
	if svc != nil && slices.Contains(svc.Spec.ClusterIPs, ip) {
		return ""
	}
	return "static address " + ip + " is not assigned to the Gateway's Service yet: the cluster refuses it " +
		"(outside its Service IP range, or taken by another Service) or it is being applied"
}

func (t *translator) gatewayAddresses(gi *gatewayInfo) []gwv1.GatewayStatusAddress {
	svc := t.gatewayService(gi)
	if svc == nil {
		return nil
	}
	ipType, hostType := gwv1.IPAddressType, gwv1.HostnameAddressType
	if ip := gi.address.IP; ip != "" && slices.Contains(svc.Spec.ClusterIPs, ip) {
		// A pinned address is the Gateway's address.
		return []gwv1.GatewayStatusAddress{{Type: &ipType, Value: ip}}
	}
	var out []gwv1.GatewayStatusAddress
	seen := map[string]bool{}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" && !seen[ing.IP] {
			seen[ing.IP] = true
			out = append(out, gwv1.GatewayStatusAddress{Type: &ipType, Value: ing.IP})
		} else if ing.Hostname != "" && !seen[ing.Hostname] {
			seen[ing.Hostname] = true
			out = append(out, gwv1.GatewayStatusAddress{Type: &hostType, Value: ing.Hostname})
		}
	}
	if len(out) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		out = append(out, gwv1.GatewayStatusAddress{Type: &ipType, Value: svc.Spec.ClusterIP})
	}
	return out
}

func (t *translator) ingressLoadBalancer() networkingv1.IngressLoadBalancerStatus {
	var out networkingv1.IngressLoadBalancerStatus
	svc := t.res.SharedProxyService
	if svc == nil {
		return out
	}
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" || ing.Hostname != "" {
			out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{IP: ing.IP, Hostname: ing.Hostname})
		}
	}
	if len(out.Ingress) == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{IP: svc.Spec.ClusterIP})
	}
	return out
}
