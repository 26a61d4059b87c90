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

package testkit

// What an envtest control plane needs, found from the checkout: the
// repository root, the control-plane binaries and the Gateway API CRDs of
// the gateway-api module this repository requires.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// KubernetesVersion is the version of the envtest control plane that
// `make envtest` builds (hack/envtest/go.mod pins the same).
const KubernetesVersion = "1.37.2"

// repoModule is the module line of the repository's go.mod.
const repoModule = "module github.com/coxswain-go/coxswain\n"

// RepoRoot is the root of the checkout under test: the nearest directory
// above the working directory (go test runs a test in its package's
// directory) whose go.mod is this repository's. It does not read the
// source path of this file, so tests built with -trimpath find it too.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testkit.RepoRoot: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), repoModule) {
			return d
		}
		if filepath.Dir(d) == d {
			panic("testkit.RepoRoot: no go.mod of github.com/coxswain-go/coxswain above " + dir)
		}
	}
}

// AssetsDir is where kube-apiserver, etcd and kubectl are: $KUBEBUILDER_ASSETS,
// else the directory `make envtest` fills.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "share", "kubebuilder-envtest", "k8s", KubernetesVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil { //nolint:gosec // G703: the test run's own $KUBEBUILDER_ASSETS; only its existence is checked
		return "", fmt.Errorf("no kube-apiserver in %s: run `make envtest` (or `make test`), or set KUBEBUILDER_ASSETS: %w", dir, err)
	}
	return dir, nil
}

// GatewayAPICRDDir is the standard-channel CRD directory of the gateway-api
// module this repository requires.
func GatewayAPICRDDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return "", fmt.Errorf("locating the gateway-api module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard"), nil
}

// ServiceCIDR is the Service ClusterIP range of every envtest control plane.
const ServiceCIDR = "10.0.0.0/16"

// newEnvironment is an envtest control plane with Coxswain's CRDs and the
// Gateway API standard CRDs installed. A missing CRD path is an error.
func newEnvironment() (*envtest.Environment, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	gwapi, err := GatewayAPICRDDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases"), gwapi},
		ErrorIfCRDPathMissing: true,
	}
	// envtest's own default, 10.0.0.0/24, holds 254 Services: a benchmark
	// with 1,000 shared Gateways (a VIP Service each) filled it, and the
	// applies refused with "range is full" ran on through the measurement.
	// A /16 that contains it keeps the addresses tests pin valid.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	return env, nil
}
