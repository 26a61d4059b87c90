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
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// safeVolumeSources are the volume types a podTemplate may add.
var safeVolumeSources = map[string]bool{
	"configMap":             true,
	"secret":                true,
	"emptyDir":              true,
	"projected":             true,
	"downwardAPI":           true,
	"csi":                   true,
	"ephemeral":             true,
	"persistentVolumeClaim": true,
}

// Envelope is what the security envelope re-asserts on a merged proxy pod
// template, so that no podTemplate patch can weaken the proxy.
type Envelope struct {
	// ServiceAccountName is pinned on the pod.
	ServiceAccountName string
	// ReservedLabels are re-asserted on the pod template.
	ReservedLabels map[string]string
	// ProxyContainer is the rendered proxy container: it is put back if a
	// patch deleted it, and its volume mounts are re-asserted.
	ProxyContainer corev1.Container
	// Volumes are the renderer's own volumes, re-asserted as rendered.
	Volumes []corev1.Volume
	// Sysctls are re-asserted on the pod security context.
	Sysctls []corev1.Sysctl
}

// ApplyEnvelope enforces the security envelope on t in place and returns a
// description of every setting it dropped or overrode (for the
// PodTemplateSanitized event). Filling in an unset field is not reported.
//
// The envelope: pod runAsNonRoot and seccomp RuntimeDefault; the pinned
// serviceAccountName; automountServiceAccountToken false; no hostNetwork,
// hostPID or hostIPC; no ephemeralContainers; volumes limited to configMap,
// secret, emptyDir, projected, downwardAPI, csi, ephemeral and
// persistentVolumeClaim (others are dropped with their mounts); the
// renderer's own volumes and proxy mounts as rendered; every container
// (the proxy and any added sidecar or init container) non-privileged, without
// privilege escalation, with all capabilities dropped and none added, a
// read-only root filesystem, runAsNonRoot, no hostPort, no Unmasked
// procMount and no Unconfined seccomp or AppArmor profile; reserved labels
// re-asserted.
func ApplyEnvelope(t *corev1.PodTemplateSpec, env Envelope) []string {
	var dropped []string
	drop := func(format string, args ...interface{}) {
		dropped = append(dropped, fmt.Sprintf(format, args...))
	}

	// Reserved labels.
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	for _, k := range sortedKeys(env.ReservedLabels) {
		v := env.ReservedLabels[k]
		if old, ok := t.Labels[k]; ok && old != v {
			drop("metadata.labels[%s]: reserved label", k)
		}
		t.Labels[k] = v
	}

	s := &t.Spec
	if s.ServiceAccountName != "" && s.ServiceAccountName != env.ServiceAccountName {
		drop("spec.serviceAccountName: pinned to %s", env.ServiceAccountName)
	}
	s.ServiceAccountName = env.ServiceAccountName
	if s.DeprecatedServiceAccount != "" && s.DeprecatedServiceAccount != env.ServiceAccountName {
		drop("spec.serviceAccount: pinned to %s", env.ServiceAccountName)
	}
	s.DeprecatedServiceAccount = ""
	if s.AutomountServiceAccountToken != nil && *s.AutomountServiceAccountToken {
		drop("spec.automountServiceAccountToken")
	}
	s.AutomountServiceAccountToken = ptrTo(false)
	if s.HostNetwork {
		drop("spec.hostNetwork")
	}
	s.HostNetwork = false
	if s.HostPID {
		drop("spec.hostPID")
	}
	s.HostPID = false
	if s.HostIPC {
		drop("spec.hostIPC")
	}
	s.HostIPC = false
	for _, c := range s.EphemeralContainers {
		drop("spec.ephemeralContainers[%s]", c.Name)
	}
	s.EphemeralContainers = nil

	// Pod security context.
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := s.SecurityContext
	if psc.RunAsNonRoot != nil && !*psc.RunAsNonRoot {
		drop("spec.securityContext.runAsNonRoot")
	}
	psc.RunAsNonRoot = ptrTo(true)
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		drop("spec.securityContext.runAsUser: 0 (root)")
		psc.RunAsUser = nil
	}
	if psc.SeccompProfile != nil && psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		drop("spec.securityContext.seccompProfile: %s", psc.SeccompProfile.Type)
	}
	psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if psc.AppArmorProfile != nil && psc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
		drop("spec.securityContext.appArmorProfile: Unconfined")
		psc.AppArmorProfile = nil
	}
	if psc.WindowsOptions != nil && psc.WindowsOptions.HostProcess != nil && *psc.WindowsOptions.HostProcess {
		drop("spec.securityContext.windowsOptions.hostProcess")
		psc.WindowsOptions.HostProcess = nil
	}
	for _, want := range env.Sysctls {
		found := false
		for i := range psc.Sysctls {
			if psc.Sysctls[i].Name == want.Name {
				if psc.Sysctls[i].Value != want.Value {
					drop("spec.securityContext.sysctls[%s]: pinned to %s", want.Name, want.Value)
				}
				psc.Sysctls[i].Value = want.Value
				found = true
			}
		}
		if !found {
			psc.Sysctls = append(psc.Sysctls, want)
		}
	}

	// Volumes: keep safe ones, re-assert our own.
	own := map[string]corev1.Volume{}
	for _, v := range env.Volumes {
		own[v.Name] = v
	}
	removed := map[string]bool{}
	seenOwn := map[string]bool{}
	kept := s.Volumes[:0:0]
	for _, v := range s.Volumes {
		if o, ok := own[v.Name]; ok {
			if !equality.Semantic.DeepEqual(o.VolumeSource, v.VolumeSource) {
				drop("spec.volumes[%s]: reserved volume", v.Name)
			}
			kept = append(kept, *o.DeepCopy())
			seenOwn[v.Name] = true
			continue
		}
		if src := unsafeVolumeSource(v.VolumeSource); src != "" {
			drop("spec.volumes[%s]: %s volumes are not allowed", v.Name, src)
			removed[v.Name] = true
			continue
		}
		kept = append(kept, v)
	}
	for _, v := range env.Volumes {
		if !seenOwn[v.Name] {
			kept = append(kept, *v.DeepCopy())
		}
	}
	s.Volumes = kept

	// The proxy container must exist.
	proxyIdx := -1
	for i := range s.Containers {
		if s.Containers[i].Name == env.ProxyContainer.Name {
			proxyIdx = i
		}
	}
	if proxyIdx < 0 {
		drop("spec.containers[%s]: the proxy container cannot be removed", env.ProxyContainer.Name)
		s.Containers = append([]corev1.Container{*env.ProxyContainer.DeepCopy()}, s.Containers...)
		proxyIdx = 0
	}
	proxy := &s.Containers[proxyIdx]
	for _, want := range env.ProxyContainer.VolumeMounts {
		found := false
		for i := range proxy.VolumeMounts {
			m := &proxy.VolumeMounts[i]
			if m.MountPath != want.MountPath {
				continue
			}
			if !equality.Semantic.DeepEqual(*m, want) {
				drop("spec.containers[%s].volumeMounts[%s]: reserved mount", proxy.Name, want.MountPath)
			}
			*m = want
			found = true
		}
		if !found {
			proxy.VolumeMounts = append(proxy.VolumeMounts, want)
		}
	}

	for i := range s.InitContainers {
		dropped = append(dropped, restrictContainer(&s.InitContainers[i], "spec.initContainers", removed)...)
	}
	for i := range s.Containers {
		dropped = append(dropped, restrictContainer(&s.Containers[i], "spec.containers", removed)...)
	}
	return dropped
}

// restrictContainer applies the container part of the envelope.
func restrictContainer(c *corev1.Container, path string, removedVolumes map[string]bool) []string {
	var dropped []string
	at := fmt.Sprintf("%s[%s]", path, c.Name)
	drop := func(format string, args ...interface{}) {
		dropped = append(dropped, at+"."+fmt.Sprintf(format, args...))
	}
	if len(removedVolumes) > 0 {
		mounts := c.VolumeMounts[:0:0]
		for _, m := range c.VolumeMounts {
			if removedVolumes[m.Name] {
				drop("volumeMounts[%s]: mounts a dropped volume", m.MountPath)
				continue
			}
			mounts = append(mounts, m)
		}
		c.VolumeMounts = mounts
		devices := c.VolumeDevices[:0:0]
		for _, d := range c.VolumeDevices {
			if removedVolumes[d.Name] {
				drop("volumeDevices[%s]: uses a dropped volume", d.DevicePath)
				continue
			}
			devices = append(devices, d)
		}
		c.VolumeDevices = devices
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.HostPort != 0 {
			drop("ports[%d].hostPort: %d", p.ContainerPort, p.HostPort)
		}
		p.HostPort = 0
		if p.HostIP != "" {
			drop("ports[%d].hostIP", p.ContainerPort)
		}
		p.HostIP = ""
	}
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	if sc.Privileged != nil && *sc.Privileged {
		drop("securityContext.privileged")
	}
	sc.Privileged = ptrTo(false)
	if sc.AllowPrivilegeEscalation != nil && *sc.AllowPrivilegeEscalation {
		drop("securityContext.allowPrivilegeEscalation")
	}
	sc.AllowPrivilegeEscalation = ptrTo(false)
	if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
		names := make([]string, 0, len(sc.Capabilities.Add))
		for _, c := range sc.Capabilities.Add {
			names = append(names, string(c))
		}
		drop("securityContext.capabilities.add: %s", strings.Join(names, ","))
	}
	sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	if sc.ReadOnlyRootFilesystem != nil && !*sc.ReadOnlyRootFilesystem {
		drop("securityContext.readOnlyRootFilesystem")
	}
	sc.ReadOnlyRootFilesystem = ptrTo(true)
	if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot {
		drop("securityContext.runAsNonRoot")
	}
	sc.RunAsNonRoot = ptrTo(true)
	if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		drop("securityContext.runAsUser: 0 (root)")
		sc.RunAsUser = nil
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		drop("securityContext.procMount: %s", *sc.ProcMount)
		sc.ProcMount = nil
	}
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		drop("securityContext.seccompProfile: %s", sc.SeccompProfile.Type)
		sc.SeccompProfile = nil
	}
	if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
		drop("securityContext.appArmorProfile: Unconfined")
		sc.AppArmorProfile = nil
	}
	if sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
		drop("securityContext.windowsOptions.hostProcess")
		sc.WindowsOptions.HostProcess = nil
	}
	return dropped
}

// unsafeVolumeSource returns the JSON name of the volume source v uses when
// it is not one of the safe types, else "".
func unsafeVolumeSource(v corev1.VolumeSource) string {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		name := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if !safeVolumeSources[name] {
			return name
		}
	}
	return ""
}
