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
	"maps"
	"os"
	"path/filepath"
	"sort"
)

// DefaultBundleVersion is the version `make bundle` writes by default.
const DefaultBundleVersion = "0.1.0"

// DefaultChannel is the OLM channel `make bundle` publishes to by default.
// OLM's channel naming convention (which the good-practices validator
// holds bundles to) has candidate, fast and stable; a 0.x release is a
// candidate.
const DefaultChannel = "candidate"

// Paths of the generated distribution, relative to the repository root.
const (
	BundleDir        = "bundle"
	BundleDockerfile = "bundle.Dockerfile"
	ChartDir         = "charts/coxswain"
	manifestsInput   = "config/manifests"
	samplesInput     = "config/samples"
	installInput     = "config/default"
	iconFile         = "config/manifests/bases/icon.svg"
)

// GenerateOptions parameterise Generate.
type GenerateOptions struct {
	// Kustomize is the kustomize binary.
	Kustomize string
	Bundle    BundleOptions
}

// DefaultGenerateOptions are what `make bundle` uses unless overridden.
func DefaultGenerateOptions(kustomize string) GenerateOptions {
	return GenerateOptions{Kustomize: kustomize, Bundle: BundleOptions{
		Package: "coxswain", Version: DefaultBundleVersion, Image: "coxswain:v" + DefaultBundleVersion,
		Channels: []string{DefaultChannel}, DefaultChannel: DefaultChannel,
	}}
}

// Output is everything Generate produced.
type Output struct {
	Bundle      *Bundle
	BundleFiles map[string][]byte // relative to BundleDir
	Dockerfile  []byte
	ChartFiles  map[string][]byte // relative to ChartDir
}

// Generate renders config/manifests, config/samples and config/default with
// kustomize and builds the bundle and the chart's generated files, among
// them the copy of config/monitoring.
func Generate(root string, opts GenerateOptions) (*Output, error) {
	manifests, err := Kustomize(opts.Kustomize, root, manifestsInput)
	if err != nil {
		return nil, err
	}
	samples, err := Kustomize(opts.Kustomize, root, samplesInput)
	if err != nil {
		return nil, err
	}
	install, err := Kustomize(opts.Kustomize, root, installInput)
	if err != nil {
		return nil, err
	}
	if opts.Bundle.Icon == nil {
		icon, err := os.ReadFile(filepath.Join(root, iconFile))
		if err != nil {
			return nil, err
		}
		opts.Bundle.Icon = icon
	}
	b, err := BuildBundle(manifests, samples, opts.Bundle)
	if err != nil {
		return nil, err
	}
	files, err := b.Files()
	if err != nil {
		return nil, err
	}
	chart, err := ChartFiles(install)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	monitoring, err := MonitoringChartFiles(root)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	maps.Copy(chart, monitoring)
	return &Output{Bundle: b, BundleFiles: files, Dockerfile: b.Dockerfile(BundleDir), ChartFiles: chart}, nil
}

var (
	bundleOwned = []string{"manifests", "metadata"}
	chartOwned  = []string{ChartCRDDir, ChartFilesDir}
)

// Write writes the output under root: the bundle and the chart's
// generated files.
func (o *Output) Write(root string) error {
	if err := o.WriteBundle(root); err != nil {
		return err
	}
	return WriteTree(filepath.Join(root, ChartDir), o.ChartFiles, chartOwned)
}

// WriteBundle writes only the bundle, as dir/bundle and
// dir/bundle.Dockerfile (a release directory, or the repository root).
func (o *Output) WriteBundle(dir string) error {
	if err := WriteTree(filepath.Join(dir, BundleDir), o.BundleFiles, bundleOwned); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, BundleDockerfile), o.Dockerfile, 0o644) //nolint:gosec // G306: a file of the repository, world-readable like every other
}

// Diff lists how the files under root differ from the output; empty means
// up to date.
func (o *Output) Diff(root string) ([]string, error) {
	diffs, err := o.DiffBundle(root)
	if err != nil {
		return nil, err
	}
	d, err := DiffTree(filepath.Join(root, ChartDir), o.ChartFiles, chartOwned)
	if err != nil {
		return nil, err
	}
	for _, s := range d {
		diffs = append(diffs, ChartDir+": "+s)
	}
	sort.Strings(diffs)
	return diffs, nil
}

// DiffBundle lists how dir/bundle and dir/bundle.Dockerfile differ from
// the output's bundle; empty means up to date.
func (o *Output) DiffBundle(dir string) ([]string, error) {
	var diffs []string
	d, err := DiffTree(filepath.Join(dir, BundleDir), o.BundleFiles, bundleOwned)
	if err != nil {
		return nil, err
	}
	for _, s := range d {
		diffs = append(diffs, BundleDir+": "+s)
	}
	d, err = DiffTree(dir, map[string][]byte{BundleDockerfile: o.Dockerfile}, nil)
	if err != nil {
		return nil, err
	}
	diffs = append(diffs, d...)
	sort.Strings(diffs)
	return diffs, nil
}
