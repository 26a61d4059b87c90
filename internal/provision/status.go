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
	"github.com/coxswain-go/coxswain/internal/status"
)

// Pure status helpers over the objects provision renders: the translator
// decides a dedicated Gateway's cut-over condition from its Deployment
// with DedicatedProxyReady, and the shared pool applier finds the VIP
// Services to delete with StaleVIPServices.

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

// DedicatedProxyReady decides the cut-over of a dedicated Gateway from its
// dedicated Deployment d (nil when it does not exist yet), as the
// condition status.TypeDedicatedProxyReady: True, reason Ready, once the
// Deployment controller has observed d's current generation, its rollout
// has created an updated pod and at least one pod is ready; otherwise
// False, reason Provisioning, and the shared pool keeps serving the Gateway
// (make-before-break). Any ready pod counts once the rollout has begun: a
// proxy takes its routes from discovery, not from the pod template, so
// old pods serve the current routes too. observedGeneration is the
// Gateway's generation, so a True computed for an older Gateway spec does
// not count after a change.
func DedicatedProxyReady(gw *gwv1.Gateway, d *appsv1.Deployment) metav1.Condition {
	const fallback = "; the shared pool keeps serving"
	var msg string
	switch {
	case d == nil:
		msg = fmt.Sprintf("Deployment %s is not created yet", names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName)))
	case d.Status.ObservedGeneration < d.Generation:
		msg = fmt.Sprintf("Deployment %s: generation %d not observed by the Deployment controller yet", d.Name, d.Generation)
	case d.Status.UpdatedReplicas < 1:
		msg = fmt.Sprintf("Deployment %s: no proxy pod of its current rollout yet", d.Name)
	case d.Status.ReadyReplicas < 1:
		msg = fmt.Sprintf("Deployment %s: no proxy pod ready yet", d.Name)
	default:
		return status.True(status.TypeDedicatedProxyReady, status.ReasonReady,
			fmt.Sprintf("Deployment %s: %d proxy %s ready", d.Name, d.Status.ReadyReplicas, pods(d.Status.ReadyReplicas)), gw.Generation)
	}
	return status.False(status.TypeDedicatedProxyReady, status.ReasonProvisioning, msg+fallback, gw.Generation)
}

func pods(n int32) string {
	if n == 1 {
		return "pod"
	}
	return "pods"
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
