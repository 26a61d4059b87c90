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
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestVolumeWriter(t *testing.T) {
	dir := t.TempDir()
	src := fakeObjects{
		secrets:    map[string]*corev1.Secret{"tls": {Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")}}},
		configMaps: map[string]*corev1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"b": "2", "a": "1"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
				Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "sub/key", Mode: ptr.To[int32](0o600)}}}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
			{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/x"}}},
		}}}
	w := volumeWriter{dir: dir, src: src, token: func(_ *corev1.Pod, _ string, _ int64) (string, error) { return "TOKEN", nil }}
	paths, err := w.write(pod)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"tls/crt": "CERT", "tls/sub/key": "KEY",
		"kube-api-access/token": "TOKEN", "kube-api-access/ca.crt": "CA", "kube-api-access/namespace": "ns",
		"labels/labels": "a=\"1\"\nb=\"2\"",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", file, b, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tls/sub/key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v %v", st, err)
	}
	if paths["host"] != "/var/lib/x" || paths["scratch"] != filepath.Join(dir, "scratch") {
		t.Errorf("paths: %v", paths)
	}

	// A missing Secret is an error (retried by the caller); an optional one is not.
	pod.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), `secret "absent" not found`) {
		t.Errorf("missing secret: %v", err)
	}
	pod.Spec.Volumes[0].Secret.Optional = ptr.To(true)
	if _, err := w.write(pod); err != nil {
		t.Errorf("optional secret: %v", err)
	}
	// Paths cannot escape the volume directory.
	pod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
		Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "../../etc/passwd"}}}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("escaping path: %v", err)
	}
	// Unsupported volume types are named.
	pod.Spec.Volumes = []corev1.Volume{{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), "unsupported volume type") {
		t.Errorf("pvc: %v", err)
	}
}
