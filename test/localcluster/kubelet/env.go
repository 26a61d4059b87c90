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

package kubelet

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podFacts are the runtime values downward API references resolve to.
type podFacts struct {
	podIP  string
	hostIP string
}

// resolveEnv computes a container's environment as the kubelet does:
// envFrom first, then env in order (later entries win), with $(VAR)
// references to earlier variables expanded. base comes first and may be
// overridden. Missing non-optional references are errors (the kubelet's
// CreateContainerConfigError), so the caller retries.
func resolveEnv(pod *corev1.Pod, c *corev1.Container, facts podFacts, src objectSource, base []corev1.EnvVar) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, e := range base {
		set(e.Name, e.Value)
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, found, err := src.ConfigMap(pod.Namespace, from.ConfigMapRef.Name)
			if err != nil {
				return nil, err
			}
			if !found {
				if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, fmt.Errorf("configmap %q not found", from.ConfigMapRef.Name)
			}
			for _, k := range sortedKeys(cm.Data) {
				set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			s, found, err := src.Secret(pod.Namespace, from.SecretRef.Name)
			if err != nil {
				return nil, err
			}
			if !found {
				if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, fmt.Errorf("secret %q not found", from.SecretRef.Name)
			}
			keys := make([]string, 0, len(s.Data))
			for k := range s.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, vals))
			continue
		}
		v, ok, err := resolveEnvSource(pod, c, e.ValueFrom, facts, src)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}

// resolveEnvSource resolves one valueFrom; ok is false when an optional
// reference is missing (the variable is then not set).
func resolveEnvSource(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, facts podFacts, src objectSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := podField(pod, from.FieldRef.FieldPath, facts)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := containerResource(c, from.ResourceFieldRef)
		return v, err == nil, err
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, found, err := src.Secret(pod.Namespace, ref.Name)
		if err != nil {
			return "", false, err
		}
		if !found {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q not found", ref.Name)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q has no key %q", ref.Name, ref.Key)
		}
		return string(v), true, nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, found, err := src.ConfigMap(pod.Namespace, ref.Name)
		if err != nil {
			return "", false, err
		}
		if !found {
			if optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configmap %q not found", ref.Name)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("configmap %q has no key %q", ref.Name, ref.Key)
	default:
		return "", false, fmt.Errorf("unsupported valueFrom")
	}
}

// podField resolves a downward API field path.
func podField(pod *corev1.Pod, path string, facts podFacts) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return facts.podIP, nil
	case "status.hostIP", "status.hostIPs":
		return facts.hostIP, nil
	}
	for _, p := range []struct {
		prefix string
		m      map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if strings.HasPrefix(path, p.prefix) && strings.HasSuffix(path, "']") {
			return p.m[strings.TrimSuffix(strings.TrimPrefix(path, p.prefix), "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// containerResource resolves a resourceFieldRef against the container's
// limits (then requests); unset values resolve to "0".
func containerResource(c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	var q resource.Quantity
	name, kind, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	rn := corev1.ResourceName(kind)
	switch name {
	case "limits":
		if v, ok := c.Resources.Limits[rn]; ok {
			q = v
		} else if v, ok := c.Resources.Requests[rn]; ok {
			q = v
		}
	case "requests":
		if v, ok := c.Resources.Requests[rn]; ok {
			q = v
		}
	default:
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		// Rounded up, as the kubelet does for CPU.
		m := q.MilliValue()
		d := divisor.MilliValue()
		return fmt.Sprint((m + d - 1) / d), nil
	}
	return fmt.Sprint((q.Value() + divisor.Value() - 1) / divisor.Value()), nil
}

// formatMap renders labels/annotations as the downward API does:
// key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expandVars expands $(NAME) references to defined variables, leaves
// undefined references as written, and turns $$ into $ - the Kubernetes
// rules for env values, command and args.
func expandVars(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envMap turns KEY=VALUE pairs into a map.
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
