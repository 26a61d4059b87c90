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
	"path/filepath"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

// TestOLMInstall installs Coxswain the OLM way on the local cluster: the
// real OLM operator (cmd/olm of operator-lifecycle-manager, hack/olm) runs
// as a pod, deployed as OLM's chart deploys it; Coxswain's bundle CRDs and other
// manifests are applied, an AllNamespaces OperatorGroup and the CSV created,
// and OLM creates the controller Deployment from the CSV. The catalog
// operator does not run (its catalogs and bundle unpacking need registry
// images, which the container-free kubelet cannot run): the test applies
// what its InstallPlan would - the bundle's manifests, and the RBAC OLM's
// own resolver derives from the CSV (hack/olm/csvrbac). See docs/e2e.md.
func TestOLMInstall(t *testing.T) {
	needsLocalCluster(t)
	began := time.Now()
	echo, coxswain := lcBinaries(t)
	tools := olmToolsFor(t)
	release, releaseBinary := buildRelease(t, previousRelease)
	gatewayCRDs := gatewayAPICRDs(t)
	t.Logf("binaries built in %s", time.Since(began).Round(time.Millisecond))

	ctx, cancel := olmContext()
	defer cancel()
	e := startLocalCluster(ctx, t, localcluster.Binaries{EchoBasic: echo, Coxswain: coxswain,
		CoxswainTags: map[string]string{
			previousRelease: releaseBinary, // the release the upgrade starts from
			currentTag:      coxswain,      // the tree under test, as the next version
		},
		Images: map[string]string{"olm": tools.olm},
	}, operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme)
	c := e.c
	e.kubectl(t, "apply", "--server-side", "-f", gatewayCRDs, "-f", filepath.Join(tools.chart, "crds"))
	e.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	e.apply(t, olmManifests(t, tools.chart, olmNamespace))
	if _, err := c.WaitForPodsReady(ctx, olmNamespace, "app=olm-operator", 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	o := &olmEnv{lcEnv: e, tools: tools, coxswain: coxswain}
	defer o.checkOLMNeverRestarted(t)
	t.Cleanup(func() { o.logOLMOnFailure(t) }) // runs before the cluster stops

	current := loadBundle(t, filepath.Join(testkit.RepoRoot(), "bundle"))
	released := loadBundle(t, filepath.Join(release, "bundle"))
	t.Run("InstallAndUninstall", func(t *testing.T) {
		o.testInstallAndUninstall(t, current, testkit.RepoRoot())
	})
	t.Run("UpgradeByReplaces", func(t *testing.T) {
		o.testUpgradeByReplaces(t, released, release, current)
	})
	t.Logf("whole run %s", time.Since(began).Round(time.Millisecond))
}
