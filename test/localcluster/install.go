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
	"os/exec"
	"path/filepath"
	"time"
)

// Kubectl runs the asset directory's kubectl against the cluster with the
// admin kubeconfig (bounded to five minutes) and returns its combined
// output. stdin may be nil.
func (c *Cluster) Kubectl(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.cfg.AssetsDir, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// InstallBase applies the Gateway API CRDs (gatewayCRDs, a directory such
// as the gateway-api module's config/crd/standard) and repo's
// config/default (Coxswain's CRDs, RBAC, the controller Deployment and the
// discovery Services), and waits for every CRD to be Established. It is
// what `localcluster dev` and the end-to-end tests install first.
func (c *Cluster) InstallBase(ctx context.Context, gatewayCRDs, repo string) error {
	steps := []struct {
		what string
		args []string
	}{
		{"Gateway API CRDs", []string{"apply", "--server-side", "-f", gatewayCRDs}},
		{"Coxswain CRDs, RBAC, controller and discovery Services", []string{"apply", "--server-side", "-k", filepath.Join(repo, "config", "default")}},
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
