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
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
)

// SharedPoolLabels are the reserved labels of the shared pool's objects.
func SharedPoolLabels() map[string]string {
	return map[string]string{
		names.LabelName:      names.ValueName,
		names.LabelInstance:  sharedPoolInstanceValue,
		names.LabelManagedBy: names.ValueManagedBy,
		names.LabelComponent: names.ComponentSharedProxy,
	}
}

// SharedPoolSelector selects the shared proxy pods; every VIP Service uses it.
func SharedPoolSelector() map[string]string {
	return map[string]string{
		names.LabelName:      names.ValueName,
		names.LabelInstance:  sharedPoolInstanceValue,
		names.LabelComponent: names.ComponentSharedProxy,
	}
}

// SharedPoolOptions tune the shared pool's proxies.
type SharedPoolOptions struct {
	Replicas int32
	// RateLimitRedis is their --rate-limit-redis ("" for none).
	RateLimitRedis string
	// TracingEndpoint, TracingInsecure and TracingSamplingRatio are their
	// tracing flags (TracingArgs; empty endpoint: off).
	TracingEndpoint      string
	TracingInsecure      bool
	TracingSamplingRatio string
}

// RenderSharedPool renders the shared proxy pool in installNS: the
// ServiceAccount and Deployment coxswain-shared-proxy (running
// `serve proxy --shared` with the discovery flags, under the same security
// envelope as dedicated proxies) and the ClusterIP Service
// coxswain-shared-proxy-internal exposing the pool's health and metrics
// ports. The pool's traffic ports are per Gateway, on the VIP Services.
func RenderSharedPool(installNS, image string, o SharedPoolOptions) []Object {
	replicas := o.Replicas
	labels := SharedPoolLabels()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: installNS, Labels: copyStrings(labels)}
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(names.SharedPoolName),
		AutomountServiceAccountToken: ptrTo(false),
	}
	shutdown := DefaultShutdown()
	args := append([]string{"serve", "proxy", "--shared"}, discoveryArgs(installNS)...)
	args = append(args, shutdown.proxyArgs()...)
	if o.RateLimitRedis != "" {
		args = append(args, "--rate-limit-redis", o.RateLimitRedis)
	}
	args = append(args, TracingArgs(o.TracingEndpoint, o.TracingInsecure, o.TracingSamplingRatio)...)
	proxy := proxyContainer(image, args, DefaultResources())
	proxy.Lifecycle = shutdown.lifecycle()
	volumes := proxyVolumes(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: names.TrustBundleConfigMapName},
		Items:                []corev1.KeyToPath{{Key: names.TrustBundleKey, Path: names.TrustBundleKey}},
	}})
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: copyStrings(labels)},
		Spec:       proxyPodSpec(names.SharedPoolName, proxy, volumes),
	}
	tmpl.Spec.TerminationGracePeriodSeconds = shutdown.gracePeriod()
	ApplyEnvelope(&tmpl, Envelope{
		ServiceAccountName: names.SharedPoolName,
		ReservedLabels:     labels,
		ProxyContainer:     proxy,
		Volumes:            volumes,
		Sysctls:            proxySysctls(),
	})
	if replicas < 0 {
		replicas = 0
	}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(names.SharedPoolName),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: SharedPoolSelector()},
			Template: tmpl,
			Strategy: rollingUpdate(),
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(names.SharedInternalServiceName),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: SharedPoolSelector(),
			Ports: []corev1.ServicePort{
				{Name: "health", Protocol: corev1.ProtocolTCP, Port: names.HealthPort, TargetPort: intstr.FromString("health")},
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: names.MetricsPort, TargetPort: intstr.FromString("metrics")},
			},
		},
	}
	// The Ingress entry point: every Ingress is served by the shared pool on
	// 80 and 443; its address fills Ingress status.loadBalancer.
	ingress := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(names.SharedPoolName),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: SharedPoolSelector(),
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80)},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(443)},
			},
		},
	}
	return []Object{sa, deploy, svc, ingress}
}

// VIPLabels are the labels of the shared VIP Service of gw.
func VIPLabels(gw *gwv1.Gateway) map[string]string {
	return map[string]string{
		names.LabelGatewayName:      names.LabelValue(gw.Name),
		names.LabelGatewayNamespace: names.LabelValue(gw.Namespace),
		names.LabelManagedBy:        names.ValueManagedBy,
		names.LabelComponent:        names.ComponentSharedVIP,
	}
}

// RenderVIPService renders the LoadBalancer VIP Service of a shared Gateway;
// see RenderVIPServiceOfType.
func RenderVIPService(gw *gwv1.Gateway, installNS string, assignments []portalloc.Assignment) *corev1.Service {
	return RenderVIPServiceOfType(gw, installNS, assignments, corev1.ServiceTypeLoadBalancer)
}

// RenderVIPServiceOfType renders the VIP Service of a shared Gateway in
// installNS: it selects the shared proxy pods and maps each listener port of
// the Gateway that has an assignment to its internal port (targetPort).
// Listener ports without an assignment are left out (the caller reports
// NoInternalPortAvailable). A port used by both UDP and TCP listeners gets
// both protocols. Assignments of other Gateways are ignored. The Gateway's
// spec.infrastructure labels and annotations propagate; the annotation
// names.AnnotationGateway records the Gateway so AssignmentsFromVIPServices can
// read the assignments back.
func RenderVIPServiceOfType(gw *gwv1.Gateway, installNS string, assignments []portalloc.Assignment, svcType corev1.ServiceType) *corev1.Service {
	internal := map[int32]int32{}
	for _, a := range assignments {
		if a.Namespace == gw.Namespace && a.Name == gw.Name {
			internal[a.Port] = a.Internal
		}
	}
	infraLabels, infraAnnotations := infrastructureMetadata(gw)
	annotations := mergeStrings(infraAnnotations, map[string]string{names.AnnotationGateway: gw.Namespace + "/" + gw.Name})
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        names.VIPServiceName(gw.Namespace, gw.Name),
			Namespace:   installNS,
			Labels:      mergeStrings(infraLabels, VIPLabels(gw)),
			Annotations: annotations,
		},
		Spec: corev1.ServiceSpec{
			Type:      svcType,
			Selector:  SharedPoolSelector(),
			ClusterIP: pinnedClusterIP(gw),
		},
	}
	for _, lp := range listenerPorts(gw) {
		in, ok := internal[lp.port]
		if !ok {
			continue
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:       lp.name(),
			Protocol:   lp.protocol,
			Port:       lp.port,
			TargetPort: intstr.FromInt32(in),
		})
	}
	return svc
}

// AssignmentsFromVIPServices reads back the internal port assignments
// persisted in VIP Services (the inverse of RenderVIPService), so they
// survive controller restarts. Services that are not VIP Services, or whose
// Gateway cannot be told, are skipped; the result is sorted by key.
func AssignmentsFromVIPServices(svcs []*corev1.Service) []portalloc.Assignment {
	seen := map[portalloc.Key]bool{}
	var out []portalloc.Assignment
	for _, svc := range svcs {
		if svc == nil || svc.Labels[names.LabelComponent] != names.ComponentSharedVIP {
			continue
		}
		ns, name := svc.Labels[names.LabelGatewayNamespace], svc.Labels[names.LabelGatewayName]
		if ref := svc.Annotations[names.AnnotationGateway]; ref != "" {
			if i := strings.IndexByte(ref, '/'); i > 0 && i < len(ref)-1 {
				ns, name = ref[:i], ref[i+1:]
			}
		}
		if ns == "" || name == "" {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type != intstr.Int {
				continue
			}
			k := portalloc.Key{Namespace: ns, Name: name, Port: p.Port}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, portalloc.Assignment{Key: k, Internal: p.TargetPort.IntVal})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j].Key) })
	return out
}
