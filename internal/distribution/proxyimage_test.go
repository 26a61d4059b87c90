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
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The proxies the controller provisions run the image named by the
// controller's COXSWAIN_PROXY_IMAGE; every install path must set it to the
// controller container's own image, whatever image was installed.

// nonDefaultImage is an image name no default of any install path uses.
const nonDefaultImage = "registry.example.test/platform/coxswain:e2e"

// proxyImageOf returns the controller container's image and the value of
// its ProxyImageEnv; it fails the test when either is missing or the
// variable is set more than once.
func proxyImageOf(t *testing.T, objs []*unstructured.Unstructured) (image, proxyImage string) {
	t.Helper()
	c := controllerContainer(t, objs)
	image, _ = c["image"].(string)
	n := 0
	env, _ := c["env"].([]any)
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == ProxyImageEnv {
			n++
			proxyImage, _ = m["value"].(string)
		}
	}
	if n != 1 {
		t.Fatalf("the controller container sets %s %d times, want once: %v", ProxyImageEnv, n, env)
	}
	if image == "" {
		t.Fatal("the controller container has no image")
	}
	return image, proxyImage
}

// kustomizeWithImage renders config/default as `make deploy IMG=img` and
// `make build-installer IMG=img` do (`kustomize edit set image
// controller=img` in config/manager, then `kustomize build config/default`),
// on a copy of config/ so the checkout is left alone.
func kustomizeWithImage(t *testing.T, img string) []*unstructured.Unstructured {
	t.Helper()
	bin := kustomizeBin(t)
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "config"), os.DirFS(filepath.Join(testkit.RepoRoot(), "config"))); err != nil {
		t.Fatal(err)
	}
	edit := exec.Command(bin, "edit", "set", "image", "controller="+img)
	edit.Dir = filepath.Join(root, "config", "manager")
	if out, err := edit.CombinedOutput(); err != nil {
		t.Fatalf("kustomize edit set image: %v\n%s", err, out)
	}
	objs, err := Kustomize(bin, root, installInput)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestKustomizeProxyImageIsTheInstalledImage: `make deploy IMG=...` and
// `make build-installer IMG=...` (dist/install.yaml) run proxies of IMG.
func TestKustomizeProxyImageIsTheInstalledImage(t *testing.T) {
	for _, img := range []string{nonDefaultImage, "coxswain@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		t.Run(img, func(t *testing.T) {
			image, proxy := proxyImageOf(t, kustomizeWithImage(t, img))
			if image != img || proxy != img {
				t.Errorf("controller image %q, %s %q; want both %q", image, ProxyImageEnv, proxy, img)
			}
		})
	}
	t.Run("checked-in default", func(t *testing.T) {
		image, proxy := proxyImageOf(t, kustomizeObjects(t, installInput))
		if image != "coxswain:latest" || proxy != image {
			t.Errorf("controller image %q, %s %q; want both coxswain:latest", image, ProxyImageEnv, proxy)
		}
	})
}

// TestChartProxyImageIsTheInstalledImage: Helm's image.repository and
// image.tag reach COXSWAIN_PROXY_IMAGE, replacing config/manager's value.
func TestChartProxyImageIsTheInstalledImage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"defaults", nil, "coxswain:v" + DefaultBundleVersion},
		{"repository and tag", map[string]any{"image": map[string]any{"repository": "registry.example.test/platform/coxswain", "tag": "e2e"}}, nonDefaultImage},
		{"repository only", map[string]any{"image": map[string]any{"repository": "registry.example.test/platform/coxswain"}}, "registry.example.test/platform/coxswain:v" + DefaultBundleVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image, proxy := proxyImageOf(t, renderChart(t, tc.values).Objects)
			if image != tc.want || proxy != tc.want {
				t.Errorf("controller image %q, %s %q; want both %q", image, ProxyImageEnv, proxy, tc.want)
			}
		})
	}
}

// TestBundleProxyImageIsTheInstalledImage: the CSV's Deployment runs proxies
// of the bundle's image, in the checked-in bundle and for any -image.
func TestBundleProxyImageIsTheInstalledImage(t *testing.T) {
	check := func(t *testing.T, b *Bundle, want string) {
		t.Helper()
		objs, err := b.InstallObjects(InstallNamespace)
		if err != nil {
			t.Fatal(err)
		}
		image, proxy := proxyImageOf(t, objs)
		if image != want || proxy != want || b.CSV.Annotations[annotationContainerImage] != want {
			t.Errorf("controller image %q, %s %q, containerImage %q; want all %q",
				image, ProxyImageEnv, proxy, b.CSV.Annotations[annotationContainerImage], want)
		}
	}
	t.Run("checked-in bundle", func(t *testing.T) {
		b, _ := loadBundle(t)
		check(t, b, "coxswain:v"+DefaultBundleVersion)
	})
	t.Run("-image "+nonDefaultImage, func(t *testing.T) {
		opts := DefaultGenerateOptions("").Bundle
		opts.Image = nonDefaultImage
		b, err := BuildBundle(kustomizeObjects(t, manifestsInput), kustomizeObjects(t, samplesInput), opts)
		if err != nil {
			t.Fatal(err)
		}
		check(t, b, nonDefaultImage)
	})
}

// TestBundleRefusesAControllerWithoutProxyImage: a config/ that lost the
// variable must not silently produce a bundle whose proxies run another
// image.
func TestBundleRefusesAControllerWithoutProxyImage(t *testing.T) {
	manifests := kustomizeObjects(t, manifestsInput)
	for _, o := range manifests {
		if o.GetKind() != "Deployment" || o.GetName() != ControllerDeployment {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range cs {
			m := c.(map[string]any)
			var kept []any
			for _, e := range m["env"].([]any) {
				if e.(map[string]any)["name"] != ProxyImageEnv {
					kept = append(kept, e)
				}
			}
			m["env"] = kept
		}
		_ = unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
	}
	_, err := BuildBundle(manifests, kustomizeObjects(t, samplesInput), DefaultGenerateOptions("").Bundle)
	if err == nil {
		t.Fatalf("BuildBundle accepted a controller without %s", ProxyImageEnv)
	}
}

// TestInstallManifestProxyImage: dist/install.yaml (when `make
// build-installer IMG=...` wrote one), else config/default, runs proxies of
// the image it installs.
func TestInstallManifestProxyImage(t *testing.T) {
	name, objs := installManifest(t)
	image, proxy := proxyImageOf(t, objs)
	if proxy != image {
		t.Errorf("%s: controller image %q but %s %q", name, image, ProxyImageEnv, proxy)
	}
}
