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

package localcluster

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Defaults of the pod network (Config.Bridge, Config.BridgeCIDR).
const (
	defaultBridge     = "cxbr0"
	defaultBridgeCIDR = "10.244.0.1/16"
)

// Config configures a local cluster. Zero values take the defaults.
type Config struct {
	// AssetsDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: $KUBEBUILDER_ASSETS, else the envtest asset directory.
	AssetsDir string
	// Dir is the work directory (etcd data, keys, kubeconfig, pod files,
	// logs). It is wiped at start. Default: <state dir>/run.
	Dir string
	// Binaries maps images to local binaries. An empty Binaries.CoreDNS
	// defaults to $LOCALCLUSTER_COREDNS, so every harness (make test-e2e,
	// make test-localcluster) gets the CoreDNS make coredns built.
	Binaries Binaries
	// NodeName is the one Node's name. Default "localcluster".
	NodeName string
	// Bridge is the pod bridge. Default "cxbr0".
	Bridge string
	// BridgeCIDR is the bridge's address and the pod network. Default
	// "10.244.0.1/16"; the apiserver listens on the bridge address.
	BridgeCIDR string
	// ServiceCIDR is the Service ClusterIP range. Default "10.96.0.0/16".
	ServiceCIDR string
	// StartTimeout bounds Start. Default 2 minutes.
	StartTimeout time.Duration
	// LockWait is how long Start waits for another local cluster on this
	// machine to stop (there is one bridge, so one cluster at a time).
	// Default 0: fail at once. Tests running in parallel packages set it.
	LockWait time.Duration
	// Logf receives progress and pod events. Default: log.Printf to stderr.
	Logf func(format string, args ...any)
}

func (c *Config) defaults() error {
	if c.AssetsDir == "" {
		c.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if c.AssetsDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		c.AssetsDir = filepath.Join(home, ".local", "share", "kubebuilder-envtest", "k8s", KubernetesVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	}
	if c.Dir == "" {
		c.Dir = filepath.Join(StateDir(), "run")
	}
	if c.NodeName == "" {
		c.NodeName = "localcluster"
	}
	if c.Bridge == "" {
		c.Bridge = defaultBridge
	}
	if c.BridgeCIDR == "" {
		c.BridgeCIDR = defaultBridgeCIDR
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.Binaries.CoreDNS == "" {
		c.Binaries.CoreDNS = os.Getenv("LOCALCLUSTER_COREDNS")
	}
	for _, b := range []*string{&c.Binaries.EchoBasic, &c.Binaries.Coxswain, &c.Binaries.CoreDNS} {
		if *b == "" {
			continue
		}
		abs, err := executable(*b)
		if err != nil {
			return err
		}
		*b = abs
	}
	tags := make(map[string]string, len(c.Binaries.CoxswainTags))
	for tag, path := range c.Binaries.CoxswainTags {
		abs, err := executable(path)
		if err != nil {
			return fmt.Errorf("image tag %s: %w", tag, err)
		}
		tags[tag] = abs
	}
	c.Binaries.CoxswainTags = tags // a copy: the caller's map is never written
	images := make(map[string]string, len(c.Binaries.Images))
	for name, path := range c.Binaries.Images {
		abs, err := executable(path)
		if err != nil {
			return fmt.Errorf("image %s: %w", name, err)
		}
		images[name] = abs
	}
	c.Binaries.Images = images
	if c.Logf == nil {
		l := log.New(os.Stderr, "localcluster: ", log.LstdFlags)
		c.Logf = l.Printf
	}
	return nil
}

// executable is path made absolute, or an error when it is not an
// executable file.
func executable(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("binary %s is not an executable file", abs)
	}
	return abs, nil
}
