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

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

// Day 2 on the local cluster (docs/upgrade.md): every install path
// installs the previous release, serves the samples through a shared and a
// dedicated Gateway, upgrades to this tree under load, rolls back where the
// path can, and uninstalls, leaving nothing Coxswain created behind. One
// cluster serves every path, one after the other.

const (
	// previousRelease is the release upgrades start from; its commit is in
	// hack/release/releases.txt (tags need not reach a CI clone).
	previousRelease = "v0.1.0"
	// oldImage runs the previous release's binary (Binaries.CoxswainTags);
	// newImage, any other tag, runs this tree's.
	oldImage = "ghcr.io/coxswain-go/coxswain:" + previousRelease
	newImage = "ghcr.io/coxswain-go/coxswain:v0.2.0-e2e"
)

// day2Env is the cluster and the two source trees the paths install from.
type day2Env struct {
	*lcEnv
	crds     string // Gateway API CRDs
	oldRepo  string // a worktree of the previous release
	headRepo string
	helm     string
	coxswain string // this tree's binary, for `coxswain uninstall`
}

func TestDay2(t *testing.T) {
	needsLocalCluster(t)
	began := time.Now()
	helm := helmBinary(t)
	echo, coxswain := lcBinaries(t)
	oldRepo, oldBinary := buildRelease(t, previousRelease)
	crds := gatewayAPICRDs(t)
	t.Logf("this tree, %s and helm ready in %s", previousRelease, time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	e := &day2Env{lcEnv: startLocalCluster(ctx, t, localcluster.Binaries{EchoBasic: echo, Coxswain: coxswain,
		CoxswainTags: map[string]string{previousRelease: oldBinary}}),
		crds: crds, oldRepo: oldRepo, headRepo: testkit.RepoRoot(), helm: helm, coxswain: coxswain}
	e.kubectl(t, "apply", "--server-side", "-f", crds)

	for _, p := range []struct {
		name string
		run  func(*testing.T, *day2Env)
	}{
		{"Kustomize", testKustomizePath},
		{"InstallYAML", testInstallYAMLPath},
		{"Helm", testHelmPath},
	} {
		t0 := time.Now()
		if !t.Run(p.name, func(t *testing.T) { p.run(t, e) }) {
			break // the next path would start from a dirty cluster
		}
		t.Logf("%s took %s", p.name, time.Since(t0).Round(time.Millisecond))
	}
	t.Logf("whole run %s", time.Since(began).Round(time.Millisecond))
}

// helmBinary is $HELM, else bin/helm (`make helm`).
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h := filepath.Join(testkit.RepoRoot(), "bin", "helm")
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("no helm CLI: set $HELM or run `make helm` (builds helm.sh/helm/v3 into bin/): %v", err)
	}
	return h
}
