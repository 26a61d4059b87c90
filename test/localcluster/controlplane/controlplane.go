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

// Package controlplane runs the local cluster's control plane as local
// processes: etcd on loopback (etcd.go), kube-apiserver on the node IP
// (apiserver.go) and kube-controller-manager (controllermanager.go), with a
// fresh PKI (pki.go) and an admin kubeconfig (kubeconfig.go) per run. Every
// startup wait is bounded and a failure carries the tail of the
// component's log (wait.go).
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// Controllers are the kube-controller-manager controllers the harness runs.
// root-ca-cert-publisher fills the kube-root-ca.crt ConfigMap that every
// service-account token volume projects.
var Controllers = []string{
	"deployment", "replicaset", "endpointslice", "namespace", "garbagecollector",
	"serviceaccount", "serviceaccount-token", "root-ca-cert-publisher",
}

// Config configures the control plane. Every field is required.
type Config struct {
	// AssetsDir holds etcd, kube-apiserver and kube-controller-manager.
	AssetsDir string
	// Dir receives the PKI, etcd's data, the apiserver's certificate
	// directory and the admin kubeconfig.
	Dir string
	// LogDir receives each component's log.
	LogDir string
	// NodeIP is where kube-apiserver listens and what it advertises: a
	// local address of the host that pods reach too (the bridge address).
	NodeIP net.IP
	// ServiceCIDR is the Service ClusterIP range.
	ServiceCIDR string
	// Registry records every process started.
	Registry *process.Registry
	// Logf receives progress.
	Logf func(format string, args ...any)
}

// ControlPlane is a running etcd, kube-apiserver and
// kube-controller-manager.
type ControlPlane struct {
	// APIServer is the apiserver URL (https://<node IP>:<APIPort>).
	APIServer string
	APIPort   int
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// RESTConfig is an admin client configuration.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// PKI is the run's key material (the kubelet serves with it).
	PKI *PKI

	cfg            Config
	etcd, api, kcm *process.Process
}

// Start generates the PKI and starts etcd, kube-apiserver and
// kube-controller-manager, each once the previous one is ready. On error
// it stops what it started.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cp := &ControlPlane{cfg: cfg}
	if err := cp.start(ctx); err != nil {
		if serr := cp.Stop(); serr != nil {
			cfg.Logf("stopping the control plane after a failed start: %v", serr)
		}
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context) error {
	serviceIP, err := firstServiceIP(cp.cfg.ServiceCIDR)
	if err != nil {
		return err
	}
	cp.PKI, err = newPKI(filepath.Join(cp.cfg.Dir, "pki"), []net.IP{cp.cfg.NodeIP, net.ParseIP("127.0.0.1"), serviceIP},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return fmt.Errorf("generating keys: %w", err)
	}
	etcdURL, err := cp.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := cp.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	return cp.startControllerManager(ctx)
}

// Stop stops kube-controller-manager, kube-apiserver and etcd, in that
// order, each by PID (SIGTERM, then SIGKILL after 10 s).
func (cp *ControlPlane) Stop() error {
	var errs []error
	for _, p := range []*process.Process{cp.kcm, cp.api, cp.etcd} {
		if p == nil {
			continue
		}
		if err := p.Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PIDs are the PIDs of etcd, kube-apiserver and kube-controller-manager.
func (cp *ControlPlane) PIDs() []int {
	var pids []int
	for _, p := range []*process.Process{cp.etcd, cp.api, cp.kcm} {
		if p != nil {
			pids = append(pids, p.PID())
		}
	}
	return pids
}

// command is what every component runs with: the binary from the asset
// directory, its log, the registry, and only PATH from our environment.
func (cp *ControlPlane) command(name string, args []string) process.Spec {
	return process.Spec{
		Name: name, Path: filepath.Join(cp.cfg.AssetsDir, name), Args: args,
		LogPath: cp.logPath(name),
		Env:     []string{"PATH=" + os.Getenv("PATH")},
	}
}

func (cp *ControlPlane) logPath(name string) string {
	return filepath.Join(cp.cfg.LogDir, name+".log")
}
