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

package distribution

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/names"
)

// The names the install paths must agree on; internal/names is their one
// source.
const (
	// InstallNamespace is the namespace config/default installs into.
	InstallNamespace = names.DefaultInstallNamespace
	// ControllerDeployment names the controller's Deployment.
	ControllerDeployment = names.ControllerDeploymentName
	// ControllerServiceAccount names the controller's ServiceAccount.
	ControllerServiceAccount = names.ControllerServiceAccount
	// ControllerContainer is the controller Deployment's container.
	ControllerContainer = names.ControllerContainerName
	// ProxyImageEnv is the controller's environment variable naming the
	// image of the proxies it provisions; every install path sets it to the
	// controller container's own image (internal/cmd reads it).
	ProxyImageEnv = names.ProxyImageEnv
	// ProxyServiceAccount is the shared proxy's identity; it must hold no
	// Kubernetes API rights.
	ProxyServiceAccount = names.SharedProxyServiceAccount

	labelManagedBy = names.LabelManagedBy
)

// Kustomize runs `kustomize build root/dir` with the binary bin.
func Kustomize(bin, root, dir string) ([]*unstructured.Unstructured, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "build", filepath.Join(root, dir)) //nolint:gosec // G204: bin is the kustomize binary the operator names (hack/bundle -kustomize); running it is the point
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return Decode(out)
}

// Decode splits a multi-document YAML (or JSON) stream into objects,
// skipping empty documents. A document without apiVersion or kind is an
// error.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
			continue
		}
		// The unstructured JSON scheme keeps integers as int64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		objs = append(objs, u)
	}
}

// DecodeFile reads and decodes one YAML file.
func DecodeFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// Key identifies an object: group, kind, namespace and name.
type Key struct {
	Group, Kind, Namespace, Name string
}

func (k Key) String() string {
	gk := schema.GroupKind{Group: k.Group, Kind: k.Kind}.String()
	if k.Namespace == "" {
		return gk + " " + k.Name
	}
	return gk + " " + k.Namespace + "/" + k.Name
}

// KeyOf returns the Key of an object.
func KeyOf(o *unstructured.Unstructured) Key {
	gvk := o.GroupVersionKind()
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}

// SortObjects orders objects by kind rank (CRDs and RBAC first), then key,
// so generated output is deterministic.
func SortObjects(objs []*unstructured.Unstructured) {
	rank := map[string]int{
		"Namespace": 0, "CustomResourceDefinition": 1, "ServiceAccount": 2,
		"ClusterRole": 3, "ClusterRoleBinding": 4, "Role": 5, "RoleBinding": 6,
	}
	r := func(o *unstructured.Unstructured) int {
		if v, ok := rank[o.GetKind()]; ok {
			return v
		}
		return 10
	}
	sort.SliceStable(objs, func(i, j int) bool {
		ri, rj := r(objs[i]), r(objs[j])
		if ri != rj {
			return ri < rj
		}
		return KeyOf(objs[i]).String() < KeyOf(objs[j]).String()
	})
}

// FilterKind returns the objects of one kind.
func FilterKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// MarshalYAML renders one object as YAML with sorted keys.
func MarshalYAML(obj any) ([]byte, error) {
	return yaml.Marshal(obj)
}

// toMap converts a typed object into the generic form through JSON, so
// custom marshalers (quantities, semver) are honoured, then prunes nulls.
func toMap(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	pruneNulls(m)
	return m, nil
}

// pruneNulls removes null values (e.g. creationTimestamp: null) from maps,
// recursively.
func pruneNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			pruneNulls(e)
		}
	case []any:
		for _, e := range t {
			pruneNulls(e)
		}
	}
}

// relabelManagedBy rewrites the app.kubernetes.io/managed-by label that
// config/default stamps (kustomize) to the tool that really manages the
// object in another install path.
func relabelManagedBy(o *unstructured.Unstructured, value string) {
	labels := o.GetLabels()
	if labels[labelManagedBy] == "kustomize" {
		labels[labelManagedBy] = value
		o.SetLabels(labels)
	}
}

// replaceStrings replaces from with to in every string value of v,
// recursively, and returns the result.
func replaceStrings(v any, from, to string) any {
	switch t := v.(type) {
	case string:
		return strings.ReplaceAll(t, from, to)
	case map[string]any:
		for k, e := range t {
			t[k] = replaceStrings(e, from, to)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = replaceStrings(e, from, to)
		}
		return t
	default:
		return v
	}
}

// containsString reports whether any string value of v contains s.
func containsString(v any, s string) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, s)
	case map[string]any:
		for k, e := range t {
			if strings.Contains(k, s) || containsString(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}
