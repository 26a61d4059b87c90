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

// Command bundle generates Coxswain's OLM bundle (bundle/, bundle.Dockerfile)
// and the generated part of the Helm chart (charts/coxswain) from the
// kustomize tree in config/, then validates the bundle (operator-framework's
// validators and Coxswain's policy: any finding fails). With -check it
// writes nothing and fails when the checked-in output is stale or does not
// validate (`make verify-distribution`). With -output-dir it writes (or
// checks) only the bundle, as DIR/bundle and DIR/bundle.Dockerfile, and
// leaves bundle/ and the chart alone; -replaces sets the CSV's
// spec.replaces (`make release` builds its bundle this way).
//
//	go run ./hack/bundle -kustomize bin/kustomize -version 0.1.0 -image coxswain:v0.1.0
//	go run ./hack/bundle -output-dir /tmp/b -version 0.2.0 -replaces 0.1.0
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/coxswain-go/coxswain/internal/distribution"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		root      = flag.String("root", ".", "Repository root.")
		kustomize = flag.String("kustomize", "bin/kustomize", "kustomize binary.")
		opts      = distribution.DefaultGenerateOptions("")
		channels  string
		outputDir string
		check     bool
	)
	flag.StringVar(&opts.Bundle.Version, "version", distribution.DefaultBundleVersion, "Bundle (CSV) version, semver without v.")
	flag.StringVar(&opts.Bundle.Image, "image", "", "Controller image. Default: coxswain:v<version>.")
	flag.StringVar(&opts.Bundle.Package, "package", "coxswain", "OLM package name.")
	flag.StringVar(&channels, "channels", strings.Join(opts.Bundle.Channels, ","), "Comma-separated OLM channels.")
	flag.StringVar(&opts.Bundle.DefaultChannel, "default-channel", opts.Bundle.DefaultChannel, "Default OLM channel.")
	flag.StringVar(&opts.Bundle.Replaces, "replaces", "", "Version (semver without v) the bundle upgrades: the CSV's spec.replaces. Default: none.")
	flag.StringVar(&outputDir, "output-dir", "", "Write only the bundle, as DIR/bundle and DIR/bundle.Dockerfile, instead of bundle/ and the chart.")
	flag.BoolVar(&check, "check", false, "Write nothing; fail if bundle/, bundle.Dockerfile or the chart's generated files (or, with -output-dir, DIR's bundle) are stale.")
	flag.Parse()
	opts.Bundle.Channels = strings.Split(channels, ",")
	if opts.Bundle.Image == "" {
		opts.Bundle.Image = "coxswain:v" + opts.Bundle.Version
	}
	bin, err := filepath.Abs(*kustomize)
	if err != nil {
		return err
	}
	opts.Kustomize = bin

	out, err := distribution.Generate(*root, opts)
	if err != nil {
		return err
	}
	if outputDir != "" {
		return bundleOnly(out, outputDir, check)
	}
	if check {
		diffs, err := out.Diff(*root)
		if err != nil {
			return err
		}
		if len(diffs) > 0 {
			return fmt.Errorf("generated distribution files are stale; run `make bundle` and commit:\n  %s", strings.Join(diffs, "\n  "))
		}
		fmt.Println("bundle/, bundle.Dockerfile and charts/coxswain are up to date")
		return validate(*root)
	}
	if err := out.Write(*root); err != nil {
		return err
	}
	for _, k := range out.Bundle.Excluded {
		fmt.Printf("not in the bundle (OLM cannot carry it): %s\n", k)
	}
	fmt.Printf("wrote bundle/ (%s), bundle.Dockerfile and charts/coxswain generated files\n", out.Bundle.CSV.Name)
	return validate(*root)
}

// bundleOnly writes (or with check, compares) the bundle alone under dir,
// then validates it.
func bundleOnly(out *distribution.Output, dir string, check bool) error {
	if check {
		diffs, err := out.DiffBundle(dir)
		if err != nil {
			return err
		}
		if len(diffs) > 0 {
			return fmt.Errorf("the bundle in %s is stale:\n  %s", dir, strings.Join(diffs, "\n  "))
		}
	} else {
		if err := out.WriteBundle(dir); err != nil {
			return err
		}
		fmt.Printf("wrote %s (%s)\n", filepath.Join(dir, distribution.BundleDir), out.Bundle.CSV.Name)
	}
	return validate(dir)
}

// validate runs the bundle validators on the bundle/ under root, as
// `operator-sdk bundle validate` would: any error or warning fails.
func validate(root string) error {
	dir := filepath.Join(root, distribution.BundleDir)
	f, err := distribution.ValidateBundleDir(dir)
	if err != nil {
		return err
	}
	if !f.Empty() {
		return fmt.Errorf("%s does not validate:\n%s", dir, f)
	}
	fmt.Printf("%s passes the operator-framework validators and Coxswain's policy\n", dir)
	return nil
}
