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
)

// testKustomizePath: `make deploy IMG=<previous release>` (config/default
// with the image set), the samples served, then `make deploy IMG=<this
// tree>` from this tree's config/ under load: the controller is replaced
// first and the proxies follow it. The previous release's samples read
// back and validate; `kubectl delete -k config/default` and
// `coxswain uninstall` leave nothing behind, CRDs included.
func testKustomizePath(t *testing.T, e *day2Env) {
	t0 := time.Now()
	if err := e.c.InstallBaseWithImage(e.ctx, e.crds, e.oldRepo, oldImage); err != nil {
		t.Fatal(err)
	}
	e.installSamples(t, e.oldRepo)
	web, edge := e.checkSampleTraffic(t)
	e.waitAllRolledTo(t, oldImage, 3*time.Minute)
	t.Logf("day2: kustomize install of %s serving in %s", previousRelease, time.Since(t0).Round(time.Millisecond))

	e.duringLoad(t, "kustomize upgrade "+previousRelease+" -> this tree", web, edge, func() {
		if err := e.c.InstallBaseWithImage(e.ctx, e.crds, e.headRepo, newImage); err != nil {
			t.Fatal(err)
		}
		e.waitAllRolledTo(t, newImage, 5*time.Minute)
	})
	e.samplesStillValid(t, e.oldRepo)
	e.checkSampleTraffic(t)

	t1 := time.Now()
	e.kubectl(t, "delete", "-k", filepath.Join(e.headRepo, "config", "default"), "--ignore-not-found", "--wait", "--timeout=3m")
	e.coxswainUninstall(t, e.coxswain)
	e.assertClean(t, false)
	t.Logf("day2: kustomize uninstall clean in %s", time.Since(t1).Round(time.Millisecond))
	e.deleteSamples(t)
}

// testInstallYAMLPath: `kubectl apply --server-side -f dist/install.yaml`
// of this tree, the samples served, then removal by the same file and
// `coxswain uninstall`.
func testInstallYAMLPath(t *testing.T, e *day2Env) {
	t0 := time.Now()
	install := filepath.Join(e.headRepo, "dist", "install.yaml")
	e.kubectl(t, "apply", "--server-side", "-f", install)
	e.kubectl(t, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	e.installSamples(t, e.headRepo)
	e.checkSampleTraffic(t)
	t.Logf("day2: dist/install.yaml install serving in %s", time.Since(t0).Round(time.Millisecond))

	e.kubectl(t, "delete", "-f", install, "--ignore-not-found", "--wait", "--timeout=3m")
	e.coxswainUninstall(t, e.coxswain)
	e.assertClean(t, false)
	e.deleteSamples(t)
}

// testHelmPath: `helm install` of the previous release's chart, the
// samples served, `helm upgrade` to this tree's chart under load (its CRDs
// applied first: Helm never upgrades crds/), `helm rollback` to the first
// revision under load, then `helm uninstall` and `coxswain uninstall`:
// nothing is left but the CRDs, which Helm keeps.
func testHelmPath(t *testing.T, e *day2Env) {
	t0 := time.Now()
	e.helmCmd(t, "install", helmRelease, filepath.Join(e.oldRepo, "charts", "coxswain"),
		"--namespace", installNS, "--create-namespace", "--wait", "--timeout", "5m",
		"--set", "image.repository="+imageRepo(oldImage), "--set", "image.tag="+previousRelease)
	e.installSamples(t, e.oldRepo)
	web, edge := e.checkSampleTraffic(t)
	e.waitAllRolledTo(t, oldImage, 3*time.Minute)
	t.Logf("day2: helm install of %s serving in %s", previousRelease, time.Since(t0).Round(time.Millisecond))

	e.duringLoad(t, "helm upgrade "+previousRelease+" -> this tree", web, edge, func() {
		e.kubectl(t, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(e.headRepo, "charts", "coxswain", "crds"))
		e.helmCmd(t, "upgrade", helmRelease, filepath.Join(e.headRepo, "charts", "coxswain"),
			"--namespace", installNS, "--wait", "--timeout", "5m",
			"--set", "image.repository="+imageRepo(newImage), "--set", "image.tag="+imageTag(newImage))
		e.waitAllRolledTo(t, newImage, 5*time.Minute)
	})
	e.samplesStillValid(t, e.oldRepo)
	// Version skew, upgrade order: a proxy of the previous release against
	// this tree's controller.
	e.skewedProxy(t, oldImage)

	e.duringLoad(t, "helm rollback to "+previousRelease, web, edge, func() {
		e.helmCmd(t, "rollback", helmRelease, "1", "--namespace", installNS, "--wait", "--timeout", "5m")
		e.waitAllRolledTo(t, oldImage, 5*time.Minute)
	})
	e.checkSampleTraffic(t)
	// And during a rollback: this tree's proxy against the previous
	// release's controller.
	e.skewedProxy(t, newImage)

	t1 := time.Now()
	e.helmCmd(t, "uninstall", helmRelease, "--namespace", installNS, "--wait", "--timeout", "3m")
	e.coxswainUninstall(t, e.coxswain)
	e.assertClean(t, true)
	t.Logf("day2: helm uninstall clean in %s", time.Since(t1).Round(time.Millisecond))
	e.deleteSamples(t)
	e.kubectl(t, "delete", "namespace", installNS, "--ignore-not-found", "--wait", "--timeout=2m")
	e.kubectl(t, "delete", "-f", filepath.Join(e.headRepo, "charts", "coxswain", "crds"), "--ignore-not-found", "--wait", "--timeout=2m")
}

// imageRepo and imageTag split "repo:tag".
func imageRepo(image string) string { r, _ := splitTag(image); return r }
func imageTag(image string) string  { _, tag := splitTag(image); return tag }

func splitTag(image string) (repo, tag string) {
	for i := len(image) - 1; i >= 0 && image[i] != '/'; i-- {
		if image[i] == ':' {
			return image[:i], image[i+1:]
		}
	}
	return image, ""
}
