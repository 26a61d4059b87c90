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
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// writeInstallYAML renders config/default with the release image, as
// `make build-installer` does, but on a copy of config/ so that the
// checked-in config/manager is never edited.
func writeInstallYAML(opts ReleaseOptions, a *ReleaseArtifacts) error {
	stage, err := os.MkdirTemp("", "coxswain-release-config-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(stage) }()
	config := filepath.Join(stage, "config")
	if err := os.CopyFS(config, os.DirFS(filepath.Join(opts.Root, "config"))); err != nil {
		return fmt.Errorf("copying config/: %w", err)
	}
	if _, err := runTool(filepath.Join(config, "manager"), opts.Kustomize, "edit", "set", "image", "controller="+a.Image); err != nil {
		return err
	}
	rendered, err := runTool(stage, opts.Kustomize, "build", filepath.Join(config, "default"))
	if err != nil {
		return err
	}
	objs, err := Decode(rendered)
	if err != nil {
		return fmt.Errorf("install.yaml: %w", err)
	}
	if err := checkInstallImage(objs, a.Image); err != nil {
		return fmt.Errorf("install.yaml: %w", err)
	}
	return os.WriteFile(a.InstallYAML, rendered, 0o644) //nolint:gosec // G306: release artifacts are published, world-readable
}

// ControllerImages returns the controller Deployment's container image and
// the proxy image it passes (ProxyImageEnv) in rendered install objects.
func ControllerImages(objs []*unstructured.Unstructured) (controller, proxy string, err error) {
	for _, d := range FilterKind(objs, "Deployment") {
		if d.GetName() != ControllerDeployment {
			continue
		}
		var dep appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep); err != nil {
			return "", "", fmt.Errorf("deployment %s: %w", d.GetName(), err)
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			if c.Name != ControllerContainer {
				continue
			}
			for _, e := range c.Env {
				if e.Name == ProxyImageEnv {
					proxy = e.Value
				}
			}
			return c.Image, proxy, nil
		}
	}
	return "", "", fmt.Errorf("no container %s in a Deployment %s", ControllerContainer, ControllerDeployment)
}

// checkInstallImage fails unless the controller and the proxies it
// provisions both run image.
func checkInstallImage(objs []*unstructured.Unstructured, image string) error {
	controller, proxy, err := ControllerImages(objs)
	if err != nil {
		return err
	}
	if controller != image || proxy != image {
		return fmt.Errorf("the controller runs %q and provisions proxies of %q, want %q for both", controller, proxy, image)
	}
	return nil
}
