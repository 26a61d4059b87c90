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

package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Kustomize renders a kustomization directory (relative to the repository
// root) with the kustomize binary in $KUSTOMIZE, else bin/kustomize.
func Kustomize(dir string) ([]byte, error) {
	bin := os.Getenv("KUSTOMIZE")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin", "kustomize")
	}
	if _, err := os.Stat(bin); err != nil { //nolint:gosec // G703: the test run's own $KUSTOMIZE; only its existence is checked
		return nil, fmt.Errorf("kustomize not found at %s: run `make kustomize` (or `make test`): %w", bin, err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "build", filepath.Join(RepoRoot(), dir)) //nolint:gosec // G204: runs the kustomize the test run names ($KUSTOMIZE); that is the point
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w: %s", dir, err, stderr.String())
	}
	return out, nil
}

// DecodeObjects splits a multi-document YAML stream into objects, skipping
// empty documents.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
