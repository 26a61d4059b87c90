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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/coxswain-go/coxswain/internal/names"
)

// DefaultImageRepo is where release images are published.
const DefaultImageRepo = "ghcr.io/coxswain-go/coxswain"

// Names inside a release directory.
const (
	ReleaseInstallFile = "install.yaml"
	ReleaseBinary      = "coxswain"
)

// ReleaseOptions parameterise BuildRelease.
type ReleaseOptions struct {
	// Root is the repository root.
	Root string
	// OutDir receives the release in OutDir/v<Version> (dist/release).
	OutDir string
	// Version is semver without v; it must be newer than the last line of
	// ReleasesFile.
	Version string
	// ImageRepo is the image repository; the release runs ImageRepo:v<Version>.
	ImageRepo string
	// Commit is stamped into the binary beside the version.
	Commit string
	// Kustomize, Helm and Go are the binaries used.
	Kustomize, Helm, Go string
}

// ReleaseArtifacts are the paths BuildRelease wrote.
type ReleaseArtifacts struct {
	Dir, InstallYAML, Chart, BundleDir, Dockerfile, Binary string
	// ProxyBinary is the data plane alone, beside Binary (coxswain's
	// `serve proxy` hands over to it).
	ProxyBinary string
	// Image is the controller (and proxy) image every artifact names.
	Image string
	// Replaces is the release this one upgrades; nil for the first.
	Replaces *Release
}

// BuildRelease writes the versioned artifacts of one release into
// OutDir/v<Version>, replacing what a previous run left there:
// install.yaml (config/default with the release image), the linted and
// packaged chart, the OLM bundle whose CSV replaces the previous release,
// and the coxswain binary with the version stamped in.
func BuildRelease(opts ReleaseOptions) (*ReleaseArtifacts, error) {
	releases, err := ReadReleases(opts.Root)
	if err != nil {
		return nil, err
	}
	v, prev, err := NextRelease(releases, opts.Version)
	if err != nil {
		return nil, err
	}
	if opts.ImageRepo == "" {
		opts.ImageRepo = DefaultImageRepo
	}
	dir := filepath.Join(opts.OutDir, "v"+v.String())
	a := &ReleaseArtifacts{
		Dir: dir, Image: opts.ImageRepo + ":v" + v.String(), Replaces: prev,
		InstallYAML: filepath.Join(dir, ReleaseInstallFile),
		Chart:       filepath.Join(dir, fmt.Sprintf("coxswain-%s.tgz", v)),
		BundleDir:   filepath.Join(dir, BundleDir),
		Dockerfile:  filepath.Join(dir, BundleDockerfile),
		Binary:      filepath.Join(dir, ReleaseBinary),
		ProxyBinary: filepath.Join(dir, names.ProxyBinaryName),
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: release artifacts are published, world-readable
		return nil, err
	}
	bundle := BundleOptions{Package: "coxswain", Version: v.String(), Image: a.Image,
		Channels: []string{DefaultChannel}, DefaultChannel: DefaultChannel}
	if prev != nil {
		bundle.Replaces = prev.Version.String()
	}
	out, err := Generate(opts.Root, GenerateOptions{Kustomize: opts.Kustomize, Bundle: bundle})
	if err != nil {
		return nil, err
	}
	steps := []func() error{
		func() error { return writeReleaseBundle(a, out) },
		func() error { return writeInstallYAML(opts, a) },
		func() error { return packageChart(opts, a, out.ChartFiles, v.String()) },
		func() error { return buildBinary(opts, a, v.String()) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// writeReleaseBundle writes the bundle and its Dockerfile into the release
// and validates it as `make bundle` validates bundle/.
func writeReleaseBundle(a *ReleaseArtifacts, out *Output) error {
	if err := out.WriteBundle(a.Dir); err != nil {
		return err
	}
	f, err := ValidateBundleDir(a.BundleDir)
	if err != nil {
		return err
	}
	if !f.Empty() {
		return fmt.Errorf("the release bundle does not validate:\n%s", f)
	}
	return nil
}

// runTool runs bin with args in dir and returns its standard output; a
// failure carries its standard error.
func runTool(dir, bin string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...) //nolint:gosec // G204: bin is a tool the release names (kustomize, helm, go); running it is the point
	cmd.Dir = dir
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
