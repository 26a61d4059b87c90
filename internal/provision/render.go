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
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// DedicatedInput is everything the dedicated renderer reads.
type DedicatedInput struct {
	// Gateway is the dedicated Gateway (its UID goes into owner references).
	Gateway *gwv1.Gateway
	// Effective is the result of Resolve.
	Effective Effective
	// InstallNamespace is the controller's namespace (discovery endpoints).
	InstallNamespace string
	// DefaultImage is the controller's own image, used unless parameters set one.
	DefaultImage string
	// TrustBundle is the PEM discovery CA bundle copied into the Gateway's
	// namespace; empty when the install namespace does not publish it yet.
	TrustBundle string
}

// Dedicated is the rendered set of a Gateway's dedicated proxy objects.
type Dedicated struct {
	ServiceAccount *corev1.ServiceAccount
	ConfigMap      *corev1.ConfigMap
	Service        *corev1.Service
	Deployment     *appsv1.Deployment
	// HPA is nil unless autoscaling is enabled.
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// PDB is nil unless the replica floor is at least 2.
	PDB *policyv1.PodDisruptionBudget
	// Sanitized lists what the podTemplate asked for that was dropped: the
	// security envelope's overrides and fields core/v1 does not know.
	Sanitized []string
}

// Objects returns the rendered objects in apply order.
func (d *Dedicated) Objects() []Object {
	objs := []Object{d.ServiceAccount, d.ConfigMap, d.Service, d.Deployment}
	if d.HPA != nil {
		objs = append(objs, d.HPA)
	}
	if d.PDB != nil {
		objs = append(objs, d.PDB)
	}
	return objs
}

// DefaultResources are the proxy container's resources when no parameters
// set them (requests only, so the CPU autoscaler has a base).
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("128Mi"),
	}}
}

// DedicatedLabels are the reserved labels of every dedicated object of gw.
func DedicatedLabels(gw *gwv1.Gateway) map[string]string {
	return map[string]string{
		names.LabelName:        names.ValueName,
		names.LabelInstance:    names.LabelValue(gw.Name),
		names.LabelManagedBy:   names.ValueManagedBy,
		names.LabelComponent:   names.ComponentDedicatedProxy,
		names.LabelGatewayName: names.LabelValue(gw.Name),
	}
}

// DedicatedSelector selects the dedicated proxy pods of gw.
func DedicatedSelector(gw *gwv1.Gateway) map[string]string {
	return map[string]string{
		names.LabelName:      names.ValueName,
		names.LabelInstance:  names.LabelValue(gw.Name),
		names.LabelComponent: names.ComponentDedicatedProxy,
	}
}

// RenderDedicated renders a dedicated Gateway's objects. It fails, rendering
// nothing, when the input is incomplete or a podTemplate cannot be merged.
func RenderDedicated(in DedicatedInput) (*Dedicated, error) {
	gw := in.Gateway
	switch {
	case gw == nil:
		return nil, errors.New("render dedicated proxies: no Gateway")
	case gw.Spec.GatewayClassName == "":
		return nil, fmt.Errorf("render dedicated proxies of Gateway %s/%s: no gatewayClassName", gw.Namespace, gw.Name)
	case in.InstallNamespace == "":
		return nil, errors.New("render dedicated proxies: no install namespace")
	}
	eff := in.Effective
	image := eff.Image
	if image == "" {
		image = in.DefaultImage
	}
	if image == "" {
		return nil, fmt.Errorf("render dedicated proxies of Gateway %s/%s: no image (parameters set none and the controller has no default)", gw.Namespace, gw.Name)
	}
	name := names.DedicatedName(gw.Name, string(gw.Spec.GatewayClassName))
	reserved := DedicatedLabels(gw)
	infraLabels, infraAnnotations := infrastructureMetadata(gw)
	labels := mergeStrings(infraLabels, reserved)
	owner := ownerReference(gw)
	meta := func(n string, extraAnnotations map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:            n,
			Namespace:       gw.Namespace,
			Labels:          copyStrings(labels),
			Annotations:     mergeStrings(infraAnnotations, extraAnnotations),
			OwnerReferences: []metav1.OwnerReference{owner},
		}
	}

	out := &Dedicated{}
	out.ServiceAccount = &corev1.ServiceAccount{
		TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta:                   meta(name, nil),
		AutomountServiceAccountToken: ptrTo(false),
	}
	out.ConfigMap = &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(name, nil),
		Data:       map[string]string{names.TrustBundleKey: in.TrustBundle},
	}

	listeners := listenerPorts(gw)
	selector := DedicatedSelector(gw)
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(names.DedicatedServiceName(gw.Name, string(gw.Spec.GatewayClassName)), eff.ServiceAnnotations),
		Spec: corev1.ServiceSpec{
			Type:      eff.ServiceType,
			Selector:  selector,
			ClusterIP: pinnedClusterIP(gw),
		},
	}
	for _, lp := range listeners {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:       lp.name(),
			Protocol:   lp.protocol,
			Port:       lp.port,
			TargetPort: intstr.FromInt32(lp.port),
		})
	}
	out.Service = svc

	resources := DefaultResources()
	if eff.Resources != nil {
		resources = *eff.Resources.DeepCopy()
	}
	args := []string{
		"serve", "proxy", "--dedicated",
		"--gateway-name", gw.Name,
		"--gateway-namespace", gw.Namespace,
	}
	args = append(args, discoveryArgs(in.InstallNamespace)...)
	args = append(args, eff.proxyArgs()...)
	proxy := proxyContainer(image, args, resources)
	proxy.Lifecycle = eff.Shutdown.orDefault().lifecycle()
	proxy.Env = append(proxy.Env,
		corev1.EnvVar{Name: EnvLogLevel, Value: string(eff.LogLevel)},
		corev1.EnvVar{Name: EnvAccessLog, Value: strconv.FormatBool(eff.AccessLog)},
	)
	seen := map[int32]bool{names.HealthPort: true, names.MetricsPort: true}
	var listenerContainerPorts []corev1.ContainerPort
	for _, lp := range listeners {
		if seen[lp.port] && lp.protocol == corev1.ProtocolTCP {
			continue
		}
		seen[lp.port] = true
		listenerContainerPorts = append(listenerContainerPorts, corev1.ContainerPort{Name: lp.name(), ContainerPort: lp.port, Protocol: lp.protocol})
	}
	proxy.Ports = append(listenerContainerPorts, proxy.Ports...)

	podLabels := mergeStrings(infraLabels, reserved)
	podLabels[names.LabelGatewayNamespace] = names.LabelValue(gw.Namespace)
	reservedPod := copyStrings(reserved)
	reservedPod[names.LabelGatewayNamespace] = names.LabelValue(gw.Namespace)
	volumes := proxyVolumes(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
		Items:                []corev1.KeyToPath{{Key: names.TrustBundleKey, Path: names.TrustBundleKey}},
	}})
	base := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: copyStrings(infraAnnotations)},
		Spec:       proxyPodSpec(name, proxy, volumes),
	}
	base.Spec.TerminationGracePeriodSeconds = eff.Shutdown.orDefault().gracePeriod()
	tmpl, unknown, err := MergePodTemplate(base, eff.PodTemplates)
	if err != nil {
		return nil, fmt.Errorf("render dedicated proxies of Gateway %s/%s: %w", gw.Namespace, gw.Name, err)
	}
	out.Sanitized = append(out.Sanitized, unknown...)
	out.Sanitized = append(out.Sanitized, ApplyEnvelope(&tmpl, Envelope{
		ServiceAccountName: name,
		ReservedLabels:     reservedPod,
		ProxyContainer:     proxy,
		Volumes:            volumes,
		Sysctls:            proxySysctls(),
	})...)

	out.Deployment = &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(name, nil),
		Spec: appsv1.DeploymentSpec{
			Replicas: eff.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: copyStrings(selector)},
			Template: tmpl,
			Strategy: rollingUpdate(),
		},
	}
	if eff.Autoscaling != nil {
		out.Deployment.Spec.Replicas = nil
		out.HPA = &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: meta(name, nil),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
				MinReplicas:    ptrTo(*eff.Autoscaling.MinReplicas),
				MaxReplicas:    *eff.Autoscaling.MaxReplicas,
				Metrics: []autoscalingv2.MetricSpec{{
					Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{
						Name: corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{
							Type:               autoscalingv2.UtilizationMetricType,
							AverageUtilization: ptrTo(*eff.Autoscaling.TargetCPUUtilizationPercentage),
						},
					},
				}},
			},
		}
	}
	if eff.ReplicaFloor() >= 2 {
		out.PDB = &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: meta(name, nil),
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptrTo(intstr.FromInt32(1)),
				Selector:       &metav1.LabelSelector{MatchLabels: copyStrings(selector)},
			},
		}
	}
	return out, nil
}

// listenerPort is one (port, protocol) the Gateway's listeners use.
type listenerPort struct {
	port     int32
	protocol corev1.Protocol
}

func (l listenerPort) name() string {
	return strings.ToLower(string(l.protocol)) + "-" + strconv.Itoa(int(l.port))
}

// listenerPorts returns the distinct (port, protocol) pairs of gw's
// listeners, sorted: UDP listeners need a UDP port, every other protocol TCP.
func listenerPorts(gw *gwv1.Gateway) []listenerPort {
	seen := map[listenerPort]bool{}
	var out []listenerPort
	for _, l := range gw.Spec.Listeners {
		lp := listenerPort{port: int32(l.Port), protocol: listenerProtocol(l.Protocol)}
		if lp.port <= 0 || seen[lp] {
			continue
		}
		seen[lp] = true
		out = append(out, lp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].port != out[j].port {
			return out[i].port < out[j].port
		}
		return out[i].protocol < out[j].protocol
	})
	return out
}

func listenerProtocol(p gwv1.ProtocolType) corev1.Protocol {
	if p == gwv1.UDPProtocolType {
		return corev1.ProtocolUDP
	}
	return corev1.ProtocolTCP
}

// discoveryArgs are the proxy flags that reach the controller's discovery.
func discoveryArgs(installNS string) []string {
	return []string{
		"--discovery-endpoint", names.DiscoveryEndpoint(installNS),
		"--discovery-bootstrap-endpoint", names.BootstrapEndpoint(installNS),
		"--discovery-token-path", TokenPath,
		"--discovery-trust-bundle", TrustBundlePath,
		"--discovery-controller-namespace", installNS,
	}
}

// proxyContainer is the proxy container before the podTemplate merge; the
// security envelope fills in its securityContext.
func proxyContainer(image string, args []string, resources corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name:  ProxyContainerName,
		Image: image,
		Args:  args,
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		},
		Ports: []corev1.ContainerPort{
			{Name: "health", ContainerPort: names.HealthPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: names.MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: resources,
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}},
			PeriodSeconds:    5,
			FailureThreshold: 3,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("health")}},
			PeriodSeconds:    10,
			FailureThreshold: 3,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: TokenVolumeName, MountPath: TokenMountPath, ReadOnly: true},
			{Name: TrustVolumeName, MountPath: TrustMountPath, ReadOnly: true},
		},
	}
}

// proxyVolumes are the token and trust-bundle volumes of a proxy pod.
func proxyVolumes(trust corev1.VolumeSource) []corev1.Volume {
	return []corev1.Volume{
		{Name: TokenVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience:          names.TokenAudience,
				ExpirationSeconds: ptrTo(TokenExpirationSeconds),
				Path:              "token",
			}}},
		}}},
		{Name: TrustVolumeName, VolumeSource: trust},
	}
}

func proxySysctls() []corev1.Sysctl {
	return []corev1.Sysctl{{Name: UnprivilegedPortSysctl, Value: "0"}}
}

// proxyPodSpec is the pod spec before the podTemplate merge.
func proxyPodSpec(sa string, proxy corev1.Container, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName:           sa,
		AutomountServiceAccountToken: ptrTo(false),
		Containers:                   []corev1.Container{proxy},
		Volumes:                      volumes,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptrTo(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			Sysctls:        proxySysctls(),
		},
	}
}

func rollingUpdate() appsv1.DeploymentStrategy {
	return appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptrTo(intstr.FromInt32(0)),
			MaxSurge:       ptrTo(intstr.FromInt32(1)),
		},
	}
}

func ownerReference(gw *gwv1.Gateway) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         gwv1.GroupVersion.String(),
		Kind:               "Gateway",
		Name:               gw.Name,
		UID:                gw.UID,
		Controller:         ptrTo(true),
		BlockOwnerDeletion: ptrTo(true),
	}
}

// infrastructureMetadata returns the Gateway's spec.infrastructure labels
// and annotations.
func infrastructureMetadata(gw *gwv1.Gateway) (map[string]string, map[string]string) {
	if gw.Spec.Infrastructure == nil {
		return nil, nil
	}
	var labels, annotations map[string]string
	for k, v := range gw.Spec.Infrastructure.Labels {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[string(k)] = string(v)
	}
	for k, v := range gw.Spec.Infrastructure.Annotations {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[string(k)] = string(v)
	}
	return labels, annotations
}

// mergeStrings returns a new map with every entry of the maps, later wins;
// nil when all are empty.
func mergeStrings(ms ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range ms {
		for k, v := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

func copyStrings(m map[string]string) map[string]string {
	return mergeStrings(m)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
