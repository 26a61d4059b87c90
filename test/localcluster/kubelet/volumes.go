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
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volumeWriter materialises a pod's volumes as files under dir/<volume>.
type volumeWriter struct {
	dir   string
	src   objectSource
	token tokenSource
	facts podFacts
}

// fileEntry is one file a volume holds.
type fileEntry struct {
	path string
	data []byte
	mode os.FileMode
}

// write creates every volume of the pod. It returns the host path of each
// volume by name. Missing non-optional sources are errors (the caller
// retries, as the kubelet keeps a pod in ContainerCreating).
func (w volumeWriter) write(pod *corev1.Pod) (map[string]string, error) {
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		target := filepath.Join(w.dir, v.Name)
		if v.HostPath != nil {
			paths[v.Name] = v.HostPath.Path
			continue
		}
		files, err := w.files(pod, v)
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		if err := os.RemoveAll(target); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return nil, err
		}
		for _, f := range files {
			p, err := safeJoin(target, f.path)
			if err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, f.data, f.mode); err != nil {
				return nil, err
			}
			if err := os.Chmod(p, f.mode); err != nil {
				return nil, err
			}
		}
		paths[v.Name] = target
	}
	return paths, nil
}

// files lists the files of one (non-hostPath) volume.
func (w volumeWriter) files(pod *corev1.Pod, v *corev1.Volume) ([]fileEntry, error) {
	switch {
	case v.EmptyDir != nil:
		return nil, nil
	case v.Secret != nil:
		return w.secretFiles(pod, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, v.Secret.DefaultMode)
	case v.ConfigMap != nil:
		return w.configMapFiles(pod, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, v.ConfigMap.DefaultMode)
	case v.DownwardAPI != nil:
		return w.downwardFiles(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		var all []fileEntry
		for _, s := range v.Projected.Sources {
			var files []fileEntry
			var err error
			switch {
			case s.Secret != nil:
				files, err = w.secretFiles(pod, s.Secret.Name, s.Secret.Items, s.Secret.Optional, v.Projected.DefaultMode)
			case s.ConfigMap != nil:
				files, err = w.configMapFiles(pod, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, v.Projected.DefaultMode)
			case s.DownwardAPI != nil:
				files, err = w.downwardFiles(pod, s.DownwardAPI.Items, v.Projected.DefaultMode)
			case s.ServiceAccountToken != nil:
				exp := int64(3600)
				if s.ServiceAccountToken.ExpirationSeconds != nil {
					exp = *s.ServiceAccountToken.ExpirationSeconds
				}
				var tok string
				tok, err = w.token(pod, s.ServiceAccountToken.Audience, exp)
				files = []fileEntry{{path: s.ServiceAccountToken.Path, data: []byte(tok), mode: fileMode(v.Projected.DefaultMode, nil)}}
			default:
				err = fmt.Errorf("unsupported projected source")
			}
			if err != nil {
				return nil, err
			}
			all = append(all, files...)
		}
		return all, nil
	default:
		return nil, fmt.Errorf("unsupported volume type (the local kubelet supports emptyDir, hostPath, secret, configMap, downwardAPI and projected)")
	}
}

func (w volumeWriter) secretFiles(pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, defaultMode *int32) ([]fileEntry, error) {
	s, found, err := w.src.Secret(pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	if !found {
		if optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q not found", name)
	}
	return keyFiles(s.Data, items, optional, defaultMode, "secret "+name)
}

func (w volumeWriter) configMapFiles(pod *corev1.Pod, name string, items []corev1.KeyToPath, optional *bool, defaultMode *int32) ([]fileEntry, error) {
	cm, found, err := w.src.ConfigMap(pod.Namespace, name)
	if err != nil {
		return nil, err
	}
	if !found {
		if optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("configmap %q not found", name)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, optional, defaultMode, "configmap "+name)
}

// keyFiles projects data keys to files: all keys by name, or the listed
// items at their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, optional *bool, defaultMode *int32, what string) ([]fileEntry, error) {
	var files []fileEntry
	if len(items) == 0 {
		for k, v := range data {
			files = append(files, fileEntry{path: k, data: v, mode: fileMode(defaultMode, nil)})
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files = append(files, fileEntry{path: it.Path, data: v, mode: fileMode(defaultMode, it.Mode)})
	}
	return files, nil
}

func (w volumeWriter) downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) ([]fileEntry, error) {
	var files []fileEntry
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podField(pod, it.FieldRef.FieldPath, w.facts)
		case it.ResourceFieldRef != nil:
			c := findContainer(pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				err = fmt.Errorf("no container %q", it.ResourceFieldRef.ContainerName)
			} else {
				v, err = containerResource(c, it.ResourceFieldRef)
			}
		default:
			err = fmt.Errorf("downward API item %q has no source", it.Path)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, fileEntry{path: it.Path, data: []byte(v), mode: fileMode(defaultMode, it.Mode)})
	}
	return files, nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if name == "" || pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func fileMode(defaultMode, mode *int32) os.FileMode {
	switch {
	case mode != nil:
		return os.FileMode(*mode) & 0o777
	case defaultMode != nil:
		return os.FileMode(*defaultMode) & 0o777
	default:
		return 0o644
	}
}

// safeJoin joins a relative volume path under dir, refusing escapes.
func safeJoin(dir, rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", fmt.Errorf("invalid path %q", rel)
	}
	p := filepath.Join(dir, rel)
	if p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q escapes the volume", rel)
	}
	return p, nil
}
