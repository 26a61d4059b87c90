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
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestExpandVars(t *testing.T) {
	vals := map[string]string{"A": "1", "POD_NAME": "p"}
	for in, want := range map[string]string{
		"plain":           "plain",
		"$(A)":            "1",
		"x-$(POD_NAME)-y": "x-p-y",
		"$(MISSING)":      "$(MISSING)",
		"$$(A)":           "$(A)",
		"cost $5":         "cost $5",
		"$(A":             "$(A",
		"trailing $":      "trailing $",
	} {
		if got := expandVars(in, vals); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeObjects is an in-memory objectSource for pure helper tests.
type fakeObjects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (f fakeObjects) Secret(_, name string) (*corev1.Secret, bool, error) {
	s, ok := f.secrets[name]
	return s, ok, nil
}

func (f fakeObjects) ConfigMap(_, name string) (*corev1.ConfigMap, bool, error) {
	cm, ok := f.configMaps[name]
	return cm, ok, nil
}

func TestResolveEnv(t *testing.T) {
	src := fakeObjects{
		secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"token": []byte("t0k"), "B": []byte("b")}}},
		configMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"mode": "fast", "A": "a"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-abc-12345", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"}}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "token"}}},
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "mode"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "ADDR", Value: "$(POD_IP):8080"},
			{Name: "HOME", Value: "/override"},
		},
	}
	base := []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "PATH", Value: "/bin"}}
	got, err := resolveEnv(pod, c, podFacts{podIP: "10.244.1.5", hostIP: "10.244.0.1"}, src, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HOME=/override", "PATH=/bin", "CM_A=a", "CM_mode=fast", "POD_NAME=web-abc-12345", "POD_NAMESPACE=ns",
		"POD_IP=10.244.1.5", "HOST_IP=10.244.0.1", "APP=web", "TOKEN=t0k", "MODE=fast", "ADDR=10.244.1.5:8080"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %q\nwant %q", got, want)
	}

	// Missing required references are errors the caller retries.
	for name, env := range map[string]corev1.EnvVar{
		"secret":     {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}},
		"secret key": {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "absent"}}},
		"configmap":  {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}},
		"field":      {Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}},
	} {
		if _, err := resolveEnv(pod, &corev1.Container{Env: []corev1.EnvVar{env}}, podFacts{}, src, nil); err == nil {
			t.Errorf("%s: missing reference resolved without error", name)
		}
	}
}

func TestContainerResource(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	for _, tt := range []struct {
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "2"},
		{corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "1500"},
		{corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, "250"},
		{corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, "64"},
		{corev1.ResourceFieldSelector{Resource: "requests.memory"}, "0"},
	} {
		got, err := containerResource(c, &tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("%s/%s: %q, %v; want %q", tt.ref.Resource, tt.ref.Divisor.String(), got, err, tt.want)
		}
	}
}
