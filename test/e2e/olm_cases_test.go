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
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// testInstallAndUninstall installs the tree under test from its bundle,
// runs config/samples with traffic through the shared and the dedicated
// Gateway, and uninstalls.
func (o *olmEnv) testInstallAndUninstall(t *testing.T, b *olmBundle, repo string) {
	csv := b.csvAs(t, currentVersion, currentImage, "")
	t0 := time.Now()
	o.installOperator(t, b, csv, repo)
	o.checkOLMOwnsController(t, csv.Name)
	installed := time.Since(t0)
	o.installSamples(t, repo)
	t.Logf("install time: CSV %s Succeeded and the controller ready in %s; every sample Gateway Programmed after %s",
		csv.Name, installed.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	o.checkSampleTraffic(t)
	t1 := time.Now()
	o.removeSamples(t, repo)
	o.uninstallOperator(t, b, csv.Name, repo)
	// What the controller created at run time goes too; OLM keeps the CRDs.
	o.coxswainUninstall(t, o.coxswain)
	o.assertClean(t, true)
	t.Logf("uninstall (samples, CSV, OperatorGroup, bundle manifests, namespace) took %s", time.Since(t1).Round(time.Millisecond))
}

// testUpgradeByReplaces installs the v0.1.0 release from its own bundle,
// starts a bounded load through the shared Gateway web and the dedicated
// Gateway edge, then upgrades by creating the tree under test's CSV
// (coxswain.v0.2.0, replaces coxswain.v0.1.0) and waits until OLM has
// moved the controller, and the controller every proxy, to the new image.
// No request may fail and neither Gateway may leave Programmed.
func (o *olmEnv) testUpgradeByReplaces(t *testing.T, old *olmBundle, oldRepo string, current *olmBundle) {
	oldCSV := old.csv.DeepCopy()
	oldImage := controllerImage(oldCSV)
	t0 := time.Now()
	o.installOperator(t, old, oldCSV, oldRepo)
	o.checkOLMOwnsController(t, oldCSV.Name)
	storedOld := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: oldCSV.Name}, storedOld); err != nil {
		t.Fatal(err)
	}
	o.installSamples(t, oldRepo)
	t.Logf("release %s (image %s) installed, samples Programmed, in %s", oldCSV.Name, oldImage, time.Since(t0).Round(time.Millisecond))
	web, edge := o.checkSampleTraffic(t)
	dedicated := names.DedicatedName(edge.Name, string(edge.Spec.GatewayClassName))
	o.waitRolledTo(t, installNS, names.SharedPoolName, oldImage, 2*time.Minute)
	o.waitRolledTo(t, samplesNS, dedicated, oldImage, 2*time.Minute)

	loads := map[string]*loadRun{
		"shared Gateway web":     startLoad(hitlessLoad(gatewayAddr(web), "www.example.com")),
		"dedicated Gateway edge": startLoad(hitlessLoad(gatewayAddr(edge), "edge.example.com")),
	}
	defer func() {
		for _, l := range loads {
			l.finish()
		}
	}()
	time.Sleep(time.Second)
	for what, l := range loads {
		if l.sent.Load() == 0 || l.failed.Load() != 0 {
			r := l.finish()
			t.Fatalf("the load through %s is not served before the upgrade: %s; first failures: %v", what, r, r.Failures)
		}
	}

	watch := o.watchProgrammed(web, edge)
	defer watch.finish()
	newCSV := current.csvAs(t, currentVersion, currentImage, oldCSV.Name)
	t1 := time.Now()
	o.applyBundleManifests(t, current, installNS)
	o.createCSV(t, newCSV)
	o.waitCSVSucceeded(t, newCSV.Name, 4*time.Minute)
	testkit.EventuallyExplained(t, 2*time.Minute, func() string {
		var left []string
		for _, l := range o.leftOf(t, storedOld) {
			if !strings.HasPrefix(l, "Deployment ") && !strings.HasPrefix(l, "Pod ") { // now the new CSV's
				left = append(left, l)
			}
		}
		if len(left) > 0 {
			return "the replaced CSV " + oldCSV.Name + " or its RBAC is still there: " + strings.Join(left, ", ")
		}
		return ""
	})
	for _, d := range []struct{ ns, name string }{
		{installNS, names.ControllerDeploymentName},
		{installNS, names.SharedPoolName},
		{samplesNS, dedicated},
	} {
		o.waitRolledTo(t, d.ns, d.name, currentImage, 4*time.Minute)
	}
	upgraded := time.Since(t1)
	time.Sleep(time.Second)
	checks, lapses := watch.finish()
	if len(lapses) > 0 {
		t.Errorf("a Gateway left Programmed during the upgrade (%d checks):\n%s", checks, strings.Join(lapses, "\n"))
	} else {
		t.Logf("web and edge stayed Programmed across the upgrade (%d checks each)", checks)
	}
	for what, l := range loads {
		r := l.finish()
		t.Logf("load through %s across the upgrade: %s", what, r)
		if r.Failed != 0 {
			t.Errorf("%d of %d requests through %s failed; first failures:\n%s", r.Failed, r.Sent, what, strings.Join(r.Failures, "\n"))
		}
		if r.Redials == 0 {
			t.Errorf("no response through %s closed its connection: the load never went through a draining proxy (%s)", what, r)
		}
	}
	t.Logf("upgrade time: CSV %s created to the controller, the shared pool and %s all on %s in %s",
		newCSV.Name, dedicated, currentImage, upgraded.Round(time.Millisecond))
	o.checkOLMOwnsController(t, newCSV.Name)
	o.checkSampleTraffic(t)
	o.removeSamples(t, oldRepo)
	o.uninstallOperator(t, current, newCSV.Name, oldRepo)
}
