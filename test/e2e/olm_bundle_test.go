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
	"path/filepath"
	"sort"
	"testing"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/names"
)

// olmBundle is a registry+v1 bundle directory read the way OLM's catalog
// operator unpacks one: the CSV, the CRDs it owns, and the other manifests
// (Services, ClusterRoles, ServiceAccounts) an InstallPlan would create.
type olmBundle struct {
	crds   []string // manifest files
	others []string
	csv    *operatorsv1alpha1.ClusterServiceVersion
}

// loadBundle reads dir/manifests.
func loadBundle(t *testing.T, dir string) *olmBundle {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s/manifests: %v", dir, err)
	}
	sort.Strings(files)
	b := &olmBundle{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch head.Kind {
		case "ClusterServiceVersion":
			b.csv = &operatorsv1alpha1.ClusterServiceVersion{}
			if err := yaml.UnmarshalStrict(data, b.csv); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		case "CustomResourceDefinition":
			b.crds = append(b.crds, f)
		default:
			b.others = append(b.others, f)
		}
	}
	if b.csv == nil {
		t.Fatalf("%s has no ClusterServiceVersion", dir)
	}
	return b
}

// csvAs is a copy of the bundle's CSV for version (coxswain.v<version>)
// deploying image as the controller and proxy image, replacing the CSV
// named replaces when that is not empty - what hack/bundle generates with
// -version, -image and -replaces.
func (b *olmBundle) csvAs(t *testing.T, version, image, replaces string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := b.csv.DeepCopy()
	v, err := semver.Parse(version)
	if err != nil {
		t.Fatal(err)
	}
	csv.Name = "coxswain.v" + version
	csv.Spec.Version.Version = v
	csv.Spec.Replaces = replaces
	csv.Annotations["containerImage"] = image
	for i := range csv.Spec.RelatedImages {
		csv.Spec.RelatedImages[i].Image = image
	}
	deployments := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	for i := range deployments {
		containers := deployments[i].Spec.Template.Spec.Containers
		for j := range containers {
			containers[j].Image = image
			for k := range containers[j].Env {
				if containers[j].Env[k].Name == names.ProxyImageEnv {
					containers[j].Env[k].Value = image
				}
			}
		}
	}
	return csv
}

// controllerImage is the image the CSV's controller Deployment runs.
func controllerImage(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if d.Name == names.ControllerDeploymentName {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
	return ""
}

// applyBundleManifests applies the bundle's CRDs (waiting until they are
// Established) and its other manifests into ns, as the catalog operator's
// InstallPlan would before the CSV.
func (e *lcEnv) applyBundleManifests(t *testing.T, b *olmBundle, ns string) {
	t.Helper()
	args := []string{"apply", "--server-side", "--force-conflicts"}
	for _, f := range b.crds {
		args = append(args, "-f", f)
	}
	e.kubectl(t, args...)
	for _, f := range b.crds {
		e.kubectl(t, "wait", "--for=condition=Established", "-f", f, "--timeout=60s")
	}
	args = []string{"apply", "--server-side", "--force-conflicts", "-n", ns}
	for _, f := range b.others {
		args = append(args, "-f", f)
	}
	e.kubectl(t, args...)
}

// deleteBundleManifests deletes the bundle's other manifests from ns (the
// CRDs stay: deleting them would delete every user object of their kinds).
func (e *lcEnv) deleteBundleManifests(t *testing.T, b *olmBundle, ns string) {
	t.Helper()
	args := []string{"delete", "--ignore-not-found", "--wait=true", "-n", ns}
	for _, f := range b.others {
		args = append(args, "-f", f)
	}
	e.kubectl(t, args...)
}
