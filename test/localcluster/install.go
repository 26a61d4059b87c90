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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Kubectl runs the asset directory's kubectl against the cluster with the
// admin kubeconfig (bounded to five minutes) and returns its combined
// output. stdin may be nil.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.KubectlPath(), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// KubectlPath is the asset directory's kubectl, which Kubectl runs.
func (c *Cluster) KubectlPath() string { return filepath.Join(c.cfg.AssetsDir, "kubectl") }

// InstallBase applies the Gateway API CRDs (gatewayCRDs, a directory such
// as the gateway-api module's config/crd/standard) and repo's
// config/default (Coxswain's CRDs, RBAC, the controller Deployment and the
// discovery Services), and waits for every CRD to be Established. It is
// what `localcluster dev` and the end-to-end tests install first.
func (c *Cluster) InstallBase(ctx context.Context, gatewayCRDs, repo string) error {
	return c.InstallBaseWithImage(ctx, gatewayCRDs, repo, "")
}

// InstallBaseWithImage is InstallBase with the controller image image, set
// as `make deploy IMG=image` sets it (`kustomize edit set image` in
// config/manager, on a copy of config/ in the cluster's work directory).
// The local kubelet runs any image whose last path element is coxswain.
// Empty image installs config/default as it is.
func (c *Cluster) InstallBaseWithImage(ctx context.Context, gatewayCRDs, repo, image string) error {
	install := filepath.Join(repo, "config", "default")
	if image != "" {
		dir, err := configWithImage(repo, filepath.Join(c.cfg.Dir, "install"), image)
		if err != nil {
			return err
		}
		install = filepath.Join(dir, "default")
	}
	steps := []struct {
		what string
		args []string
	}{
		{"Gateway API CRDs", []string{"apply", "--server-side", "-f", gatewayCRDs}},
		{"Coxswain CRDs, RBAC, controller and discovery Services", []string{"apply", "--server-side", "-k", install}},
		{"CRDs established", []string{"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"}},
	}
	for _, s := range steps {
		c.cfg.Logf("==> %s", s.what)
		if out, err := c.Kubectl(ctx, nil, s.args...); err != nil {
			return fmt.Errorf("%s: %w\n%s", s.what, err, out)
		}
	}
	return nil
}

// configWithImage copies repo's config/ to dir and points
// config/manager's image "controller" at image, as `kustomize edit set image
// controller=image` does; it returns the copy's config directory.
func configWithImage(repo, dir, image string) (string, error) {
	cfg := filepath.Join(dir, "config")
	if err := os.RemoveAll(cfg); err != nil {
		return "", err
	}
	if err := os.CopyFS(cfg, os.DirFS(filepath.Join(repo, "config"))); err != nil {
		return "", fmt.Errorf("copying config/: %w", err)
	}
	path := filepath.Join(cfg, "manager", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	name, tag, digest := splitImage(image)
	entry := map[string]any{"name": "controller", "newName": name}
	switch {
	case digest != "":
		entry["digest"] = digest
	case tag != "":
		entry["newTag"] = tag
	}
	k["images"] = []any{entry}
	out, err := yaml.Marshal(k)
	if err != nil {
		return "", err
	}
	return cfg, os.WriteFile(path, out, 0o644)
}

// splitImage splits an image reference into name, tag and digest (a port in
// the registry host is part of the name).
func splitImage(image string) (name, tag, digest string) {
	name = image
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}
