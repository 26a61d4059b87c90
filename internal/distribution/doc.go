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

// Package distribution turns the kustomize tree in config/ into the other
// ways Coxswain is installed: an OLM registry+v1 bundle (bundle/) and a Helm
// chart (charts/coxswain). Everything here is generated from
// `kustomize build`, never copied by hand, so RBAC, CRDs and the controller
// Deployment cannot drift between install paths; the tests in this package
// prove it against a real apiserver.
//
// hack/bundle is the command line (`make bundle`, `make chart`) and
// hack/release that of `make release`; the tests re-run the same generation
// and fail when the checked-in output is stale.
//
// What lives where:
//   - generate.go: Generate, the whole run (kustomize, bundle, chart), and
//     writing or diffing its output.
//   - manifests.go: running kustomize, decoding YAML, object keys, sorting
//     and the generic-object helpers the rest share.
//   - tree.go: writing a generated tree and finding what is stale in it.
//   - bundle.go: the Bundle, its options and BuildBundle, which assembles it
//     from the CSV (bundle_csv.go: the base filled in, the Deployments),
//     the RBAC (bundle_rbac.go: bindings of the operator's identities as
//     permissions), the CRDs and alm-examples (bundle_crds.go), and what
//     travels beside the CSV.
//   - bundle_files.go: the bundle on disk (manifests/, metadata/,
//     bundle.Dockerfile) and read back.
//   - bundle_install.go: the objects OLM creates from a bundle, for the
//     tests that install it.
//   - validate.go: the operator-framework validators a bundle must pass;
//     policy.go: Coxswain's own rules among them.
//   - chart.go: the chart's generated files, rendering and linting it.
//   - releases.go: the release record (hack/release/releases.txt) and the
//     version checks of a new release; release.go: BuildRelease, the whole
//     `make release` run, with its steps in release_install.go
//     (install.yaml), release_chart.go (the stamped, linted, packaged chart)
//     and release_binary.go (the version-stamped binary).
package distribution
