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
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Pure status helpers for the one status writer (the translator): it reads
// the objects the dedicated reconciler applied and derives the Gateway's
// addresses and the cut-over condition from them with these functions.
const (
	// ConditionDedicatedProxyReady is True once a dedicated proxy pod of the
	// Gateway's current rendering is ready; the shared pool keeps serving the
	// Gateway until then (make-before-break).
	ConditionDedicatedProxyReady = "gateway.coxswain-labs.dev/DedicatedProxyReady"
	ReasonReady                  = "Ready"
	ReasonProvisioning           = "Provisioning"
)

// ServiceAddresses returns the Gateway status addresses a Service provides:
// its LoadBalancer ingress IPs and hostnames when it has any, else its
// cluster IPs. Sorted, without duplicates.
func ServiceAddresses(svc *corev1.Service) []gwv1.GatewayStatusAddress {
	if svc == nil {
		return nil
	}
	ipType, hostType := gwv1.IPAddressType, gwv1.HostnameAddressType
	seen := map[string]bool{}
	var out []gwv1.GatewayStatusAddress
	add := func(t *gwv1.AddressType, v string) {
		if v == "" || v == corev1.ClusterIPNone || seen[string(*t)+"/"+v] {
			return
		}
		seen[string(*t)+"/"+v] = true
		out = append(out, gwv1.GatewayStatusAddress{Type: ptrTo(*t), Value: v})
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			add(&ipType, in.IP)
			add(&hostType, in.Hostname)
		}
	}
	if len(out) == 0 {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 && svc.Spec.ClusterIP != "" {
			ips = []string{svc.Spec.ClusterIP}
		}
		for _, ip := range ips {
			add(&ipType, ip)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if *out[i].Type != *out[j].Type {
			return *out[i].Type > *out[j].Type // IPAddress before Hostname
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// DedicatedProxyReady computes the DedicatedProxyReady condition of gw from
// its dedicated Deployment (nil when it does not exist yet): True, reason
// Ready, when the Deployment controller has observed the Deployment's
// current generation and at least one updated pod is ready; otherwise False,
// reason Provisioning. observedGeneration is the Gateway's generation, so a
// True computed for an older Gateway spec does not count after a change.
func DedicatedProxyReady(gw *gwv1.Gateway, d *appsv1.Deployment) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionDedicatedProxyReady,
		Status:             metav1.ConditionFalse,
		Reason:             ReasonProvisioning,
		ObservedGeneration: gw.Generation,
	}
	switch {
	case d == nil:
		c.Message = fmt.Sprintf("Deployment %s is not created yet", names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName)))
	case d.Status.ObservedGeneration < d.Generation:
		c.Message = fmt.Sprintf("Deployment %s: rollout of generation %d not observed yet", d.Name, d.Generation)
	case d.Status.ReadyReplicas < 1 || d.Status.UpdatedReplicas < 1:
		c.Message = fmt.Sprintf("Deployment %s: no ready proxy pod of the current rollout yet", d.Name)
	default:
		c.Status = metav1.ConditionTrue
		c.Reason = ReasonReady
		c.Message = fmt.Sprintf("Deployment %s: %d proxy pod(s) ready", d.Name, d.Status.ReadyReplicas)
	}
	return c
}

// StaleVIPServices returns the VIP Services (among existing) whose Gateway is
// not in shared — the Gateways that still need a VIP Service — so the caller
// can delete them (a VIP Service in the install namespace cannot be
// owner-referenced to a Gateway in another namespace). Non-VIP Services are
// never returned.
func StaleVIPServices(existing []*corev1.Service, shared []types.NamespacedName) []*corev1.Service {
	want := map[string]bool{}
	for _, k := range shared {
		want[names.VIPServiceName(k.Namespace, k.Name)] = true
	}
	var out []*corev1.Service
	for _, s := range existing {
		if s == nil || s.Labels[names.LabelComponent] != names.ComponentSharedVIP || s.Labels[names.LabelManagedBy] != names.ValueManagedBy {
			continue
		}
		if !want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
