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

package localcluster

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ image, name, tag, digest string }{
		{"coxswain", "coxswain", "", ""},
		{"registry.example.test/platform/coxswain:e2e", "registry.example.test/platform/coxswain", "e2e", ""},
		{"localhost:5000/coxswain", "localhost:5000/coxswain", "", ""},
		{"localhost:5000/coxswain:v1", "localhost:5000/coxswain", "v1", ""},
		{"ghcr.io/x/coxswain@sha256:abcd", "ghcr.io/x/coxswain", "", "sha256:abcd"},
	} {
		name, tag, digest := splitImage(tc.image)
		if name != tc.name || tag != tc.tag || digest != tc.digest {
			t.Errorf("splitImage(%q) = %q %q %q, want %q %q %q", tc.image, name, tag, digest, tc.name, tc.tag, tc.digest)
		}
	}
}

// TestConfigWithImage: the copy's config/manager names the image as
// `kustomize edit set image controller=...` would, and the checkout is left
// alone.
func TestConfigWithImage(t *testing.T) {
	repo := testkit.RepoRoot()
	before, err := os.ReadFile(filepath.Join(repo, "config", "manager", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configWithImage(repo, t.TempDir(), "registry.example.test/platform/coxswain:e2e")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(cfg, "manager", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images    []map[string]string `json:"images"`
		Resources []string            `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"name": "controller", "newName": "registry.example.test/platform/coxswain", "newTag": "e2e"}}
	if !reflect.DeepEqual(k.Images, want) || len(k.Resources) == 0 {
		t.Errorf("images = %v, resources = %v; want %v and the original resources", k.Images, k.Resources, want)
	}
	if _, err := os.Stat(filepath.Join(cfg, "default", "kustomization.yaml")); err != nil {
		t.Errorf("config/default not copied: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(repo, "config", "manager", "kustomization.yaml"))
	if string(after) != string(before) {
		t.Error("the checkout's config/manager/kustomization.yaml changed")
	}
}
