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

package distribution

import (
	"encoding/base64"
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// newCSV fills the CSV base (config/manifests/bases) in with what the
// options say: name and version, the controller image and the icon.
func newCSV(base *v1alpha1.ClusterServiceVersion, opts BundleOptions, v semver.Version) *v1alpha1.ClusterServiceVersion {
	csv := base.DeepCopy()
	csv.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ClusterServiceVersion"}
	csv.Name = CSVName(opts.Package, v.String())
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: v}
	if opts.Replaces != "" {
		csv.Spec.Replaces = CSVName(opts.Package, opts.Replaces)
	}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations[annotationContainerImage] = opts.Image
	csv.Spec.RelatedImages = []v1alpha1.RelatedImage{{Name: "coxswain", Image: opts.Image}}
	if len(opts.Icon) > 0 {
		csv.Spec.Icon = []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(opts.Icon), MediaType: "image/svg+xml"}}
	}
	return csv
}

// deploymentSpecs turns the install's Deployments into the CSV's install
// strategy, the controller's running image, and returns the
// ServiceAccounts they run as: the operator's own identities.
func deploymentSpecs(install []*unstructured.Unstructured, image string) ([]v1alpha1.StrategyDeploymentSpec, map[string]bool, error) {
	deployments := FilterKind(install, "Deployment")
	if len(deployments) == 0 {
		return nil, nil, fmt.Errorf("config/default renders no Deployment")
	}
	deploymentSAs := map[string]bool{}
	var specs []v1alpha1.StrategyDeploymentSpec
	for _, d := range deployments {
		var dep appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep); err != nil {
			return nil, nil, fmt.Errorf("deployment %s: %w", d.GetName(), err)
		}
		sa := dep.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			return nil, nil, fmt.Errorf("deployment %s names no serviceAccountName", d.GetName())
		}
		deploymentSAs[sa] = true
		if d.GetName() == ControllerDeployment {
			if err := setControllerImage(&dep, image); err != nil {
				return nil, nil, err
			}
		}
		lbls := dep.Labels
		delete(lbls, labelManagedBy)
		specs = append(specs, v1alpha1.StrategyDeploymentSpec{Name: dep.Name, Spec: dep.Spec, Label: lbls})
	}
	return specs, deploymentSAs, nil
}

// setControllerImage sets the controller container's image and, so that the
// proxies it provisions run the same image, its ProxyImageEnv (which
// config/default renders; its absence is an error).
func setControllerImage(dep *appsv1.Deployment, image string) error {
	for i := range dep.Spec.Template.Spec.Containers {
		c := &dep.Spec.Template.Spec.Containers[i]
		if c.Name != ControllerContainer {
			continue
		}
		c.Image = image
		for j := range c.Env {
			if c.Env[j].Name == ProxyImageEnv {
				c.Env[j].Value = image
				return nil
			}
		}
		return fmt.Errorf("deployment %s: container %s sets no %s; config/default must render it", dep.Name, ControllerContainer, ProxyImageEnv)
	}
	return fmt.Errorf("deployment %s has no container %s", dep.Name, ControllerContainer)
}

// CSVObject renders the CSV in its generic form, without status or nulls.
func CSVObject(csv *v1alpha1.ClusterServiceVersion) (*unstructured.Unstructured, error) {
	m, err := toMap(csv)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		// Zero-valued structs of the CSV type that say nothing.
		if asd, ok := spec["apiservicedefinitions"].(map[string]any); ok && len(asd) == 0 {
			delete(spec, "apiservicedefinitions")
		}
		if p, ok := spec["provider"].(map[string]any); ok && len(p) == 0 {
			delete(spec, "provider")
		}
		if c, ok := spec["cleanup"].(map[string]any); ok && c["enabled"] == false {
			delete(spec, "cleanup")
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}
