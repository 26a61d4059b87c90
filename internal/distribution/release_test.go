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
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// helmBin is $HELM (the Makefile exports it), else bin/helm; the test
// skips without it (`make test` builds it first, so CI never skips).
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join(testkit.RepoRoot(), "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the helm CLI is not at %s: run `make helm` (make test does): %v", bin, err)
	}
	return bin
}

// nextVersion is a version newer than the last recorded release (its next
// minor), so the test keeps passing as releases are recorded.
func nextVersion(t *testing.T) (version string, previous Release) {
	t.Helper()
	rs, err := ReadReleases(testkit.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatalf("%s records no release", ReleasesFile)
	}
	last := rs[len(rs)-1]
	next := last.Version
	next.Minor++
	next.Patch, next.Pre, next.Build = 0, nil, nil
	return next.String(), last
}

// TestRelease generates a release into a temporary directory with the real
// kustomize, helm and go binaries and checks each artifact: the bundle's
// CSV replaces the last recorded release, the chart carries the version and
// runs the release image, install.yaml runs it, and the binary reports the
// version.
func TestRelease(t *testing.T) {
	helm := helmBin(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	version, previous := nextVersion(t)
	const repo = "registry.example.com/team/coxswain"
	image := repo + ":v" + version
	out := t.TempDir()
	a, err := BuildRelease(ReleaseOptions{Root: testkit.RepoRoot(), OutDir: out, Version: version, ImageRepo: repo,
		Commit: "abc1234", Kustomize: kustomizeBin(t), Helm: helm, Go: goBin})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "v"+version); a.Dir != want {
		t.Errorf("release written to %s, want %s", a.Dir, want)
	}

	t.Run("bundle", func(t *testing.T) {
		b, err := LoadBundle(a.BundleDir)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := b.CSV.Spec.Replaces, "coxswain.v"+previous.Version.String(); got != want {
			t.Errorf("CSV replaces %q, want %q", got, want)
		}
		if got := b.CSV.Spec.Version.String(); got != version {
			t.Errorf("CSV spec.version %s, want %s", got, version)
		}
		if b.CSV.Name != "coxswain.v"+version {
			t.Errorf("CSV name %s, want coxswain.v%s", b.CSV.Name, version)
		}
		if got := b.CSV.Annotations[annotationContainerImage]; got != image {
			t.Errorf("CSV containerImage %q, want %q", got, image)
		}
		df, err := os.ReadFile(a.Dockerfile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(df), "COPY bundle/manifests /manifests/") {
			t.Errorf("bundle.Dockerfile does not copy the release's bundle/:\n%s", df)
		}
	})

	t.Run("chart", func(t *testing.T) {
		if want := filepath.Join(a.Dir, "coxswain-"+version+".tgz"); a.Chart != want {
			t.Errorf("chart packaged as %s, want %s", a.Chart, want)
		}
		chrt, err := loader.Load(a.Chart)
		if err != nil {
			t.Fatal(err)
		}
		if chrt.Metadata.Version != version || chrt.Metadata.AppVersion != version {
			t.Errorf("chart version %q appVersion %q, want %q for both", chrt.Metadata.Version, chrt.Metadata.AppVersion, version)
		}
		r, err := RenderChart(a.Chart, "coxswain", InstallNamespace, nil)
		if err != nil {
			t.Fatal(err)
		}
		controller, proxy, err := ControllerImages(r.Objects)
		if err != nil {
			t.Fatal(err)
		}
		if controller != image || proxy != image {
			t.Errorf("the chart runs %q with proxies of %q, want %q (tag v%s)", controller, proxy, image, version)
		}
	})

	t.Run("install.yaml", func(t *testing.T) {
		objs, err := DecodeFile(a.InstallYAML)
		if err != nil {
			t.Fatal(err)
		}
		controller, proxy, err := ControllerImages(objs)
		if err != nil {
			t.Fatal(err)
		}
		if controller != image || proxy != image {
			t.Errorf("install.yaml runs %q with proxies of %q, want %q", controller, proxy, image)
		}
		if len(FilterKind(objs, "CustomResourceDefinition")) == 0 {
			t.Error("install.yaml carries no CRDs")
		}
	})

	t.Run("binaries", func(t *testing.T) {
		if filepath.Dir(a.ProxyBinary) != filepath.Dir(a.Binary) {
			t.Errorf("the data-plane binary %s is not beside %s", a.ProxyBinary, a.Binary)
		}
		for _, bin := range []string{a.Binary, a.ProxyBinary} {
			out, err := exec.Command(bin, "--version").Output()
			if err != nil {
				t.Fatal(err)
			}
			if want := "coxswain " + version + " (commit abc1234,"; !strings.HasPrefix(string(out), want) {
				t.Errorf("%s --version printed %q, want it to start with %q", filepath.Base(bin), out, want)
			}
		}
	})

	t.Run("checked-in files untouched", func(t *testing.T) {
		// The release renders from copies: config/manager keeps its image.
		data, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "config", "manager", "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), repo) {
			t.Error("the release edited config/manager/kustomization.yaml")
		}
	})
}

// TestReleaseRefusesAnOldVersion: a version that is not newer than the
// last recorded release is refused before anything is written.
func TestReleaseRefusesAnOldVersion(t *testing.T) {
	_, previous := nextVersion(t)
	out := t.TempDir()
	_, err := BuildRelease(ReleaseOptions{Root: testkit.RepoRoot(), OutDir: out, Version: previous.Version.String(),
		Kustomize: "/nonexistent/kustomize", Helm: "/nonexistent/helm", Go: "/nonexistent/go"})
	if err == nil || !strings.Contains(err.Error(), "not newer than the last release") {
		t.Fatalf("releasing %s again = %v, want a not-newer error", previous.Tag(), err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a refused release wrote %d entries into %s", len(entries), out)
	}
}
