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

// Command release writes the versioned artifacts of one Coxswain release
// into dist/release/v<version> (`make release VERSION=x.y.z`): install.yaml,
// the linted and packaged Helm chart, the OLM bundle whose CSV replaces the
// previous release (the last line of hack/release/releases.txt), and the
// coxswain binary with the version stamped in. It refuses a version that is
// missing, not semver, or not newer than the last release.
//
//	go run ./hack/release -version 0.2.0 -kustomize bin/kustomize -helm bin/helm
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coxswain-go/coxswain/internal/distribution"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := distribution.ReleaseOptions{}
	flag.StringVar(&opts.Root, "root", ".", "Repository root.")
	flag.StringVar(&opts.OutDir, "out", "dist/release", "Directory that receives v<version>/.")
	flag.StringVar(&opts.Version, "version", "", "Version to release: semver without v, newer than the last line of "+distribution.ReleasesFile+".")
	flag.StringVar(&opts.ImageRepo, "image-repo", distribution.DefaultImageRepo, "Image repository; the release runs <image-repo>:v<version>.")
	flag.StringVar(&opts.Commit, "commit", "unknown", "Commit stamped into the binary.")
	flag.StringVar(&opts.Kustomize, "kustomize", "bin/kustomize", "kustomize binary.")
	flag.StringVar(&opts.Helm, "helm", "bin/helm", "helm binary.")
	flag.StringVar(&opts.Go, "go", "go", "go binary.")
	flag.Parse()
	if opts.Version == "" {
		return fmt.Errorf("no version given: run `make release VERSION=x.y.z` (semver without v, newer than the last line of %s)", distribution.ReleasesFile)
	}
	for _, p := range []*string{&opts.Root, &opts.OutDir, &opts.Kustomize, &opts.Helm} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	a, err := distribution.BuildRelease(opts)
	if err != nil {
		return err
	}
	replaces := "none (first release)"
	if a.Replaces != nil {
		replaces = a.Replaces.Tag()
	}
	fmt.Printf("release %s (image %s, replaces %s):\n", filepath.Base(a.Dir), a.Image, replaces)
	for _, p := range []string{a.InstallYAML, a.Chart, a.BundleDir + "/", a.Dockerfile, a.Binary} {
		fmt.Println("  " + p)
	}
	return nil
}
