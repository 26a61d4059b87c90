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
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/coxswain-go/coxswain/internal/controller"
	"github.com/coxswain-go/coxswain/internal/testenv"
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
	if os.Geteuid() != 0 {
		t.Skip("skipping: the local-cluster e2e tests need root (network namespaces, a bridge, bind mounts); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: iproute2's `ip` is missing (apt-get install -y iproute2, or `make localcluster-deps`)")
	}
	began := time.Now()
	echo, coxswain := lcBinaries(t)
	tools := olmToolsFor(t)
	release, releaseBinary := releaseTree(t)
	gatewayCRDs := gatewayAPICRDs(t)
	t.Logf("binaries built in %s", time.Since(began).Round(time.Millisecond))

	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := olmContext()
	defer cancel()
	dir, err := os.MkdirTemp("", "coxswain-e2e-olm-")
	if err != nil {
		t.Fatal(err)
	}
	lockWait := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("LOCALCLUSTER_LOCK_WAIT")); err == nil {
		lockWait = d
	}
	t0 := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Dir: dir,
		Binaries: localcluster.Binaries{EchoBasic: echo, Coxswain: coxswain,
			CoxswainTags: map[string]string{
				"v0.1.0":   releaseBinary, // the release the upgrade starts from
				currentTag: coxswain,      // the tree under test, as the next version
			},
			Images: map[string]string{"olm": tools.olm},
		},
		LockWait: lockWait,
		Logf:     t.Logf,
	})
	if err != nil {
		t.Fatalf("starting the local cluster: %v", err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("logs kept in %s (the OLM operator's under pods/%s_olm-operator-*)", c.LogDir(), olmNamespace)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	t.Logf("local cluster started in %s (including any wait for another cluster's lock)", time.Since(t0).Round(time.Millisecond))

	scheme := controller.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.New(c.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	e := &lcEnv{c: c, cl: cl, ctx: ctx}
	e.kubectl(t, "apply", "--server-side", "-f", gatewayCRDs, "-f", filepath.Join(tools.chart, "crds"))
	e.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	e.apply(t, olmManifests(t, tools.chart, olmNamespace))
	if _, err := c.WaitForPodsReady(ctx, olmNamespace, "app=olm-operator", 1, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	o := &olmEnv{lcEnv: e, tools: tools}
	defer o.checkOLMNeverRestarted(t)

	current := loadBundle(t, filepath.Join(testenv.RepoRoot(), "bundle"))
	released := loadBundle(t, filepath.Join(release, "bundle"))
	t.Run("InstallAndUninstall", func(t *testing.T) {
		o.testInstallAndUninstall(t, current, testenv.RepoRoot())
	})
	t.Run("UpgradeByReplaces", func(t *testing.T) {
		o.testUpgradeByReplaces(t, released, release, current)
	})
	t.Logf("whole run %s", time.Since(began).Round(time.Millisecond))
}
