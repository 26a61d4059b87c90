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

// Package localcluster runs a Kubernetes cluster without containers: etcd,
// kube-apiserver and kube-controller-manager as local processes, plus a
// small in-process kubelet that runs pods as local binaries in network
// namespaces wired into a bridge. It needs root and iproute2. See
// docs/localcluster.md.
//
// This package is the entry point - Start, Config and Cluster (cluster.go,
// config.go), the machine-wide state and Down (machine.go), installing
// Coxswain (install.go) and waiting for pods (wait.go). The parts live in
// sub-packages, none of which imports this one:
//
//   - controlplane: etcd, kube-apiserver, kube-controller-manager, the PKI
//     and the admin kubeconfig;
//   - kubelet: the node agent - pods, image mapping, volumes, env, probes,
//     status, termination, container logs and the shim;
//   - network: the bridge, per-pod network namespaces, addresses and the
//     pods' /etc/hosts;
//   - serviceproxy: ClusterIPs and load-balancer VIPs in user space;
//   - process: child processes by PID, the PID registry and the instance
//     lock.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/coxswain-go/coxswain/test/localcluster/controlplane"
	"github.com/coxswain-go/coxswain/test/localcluster/kubelet"
	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
	"github.com/coxswain-go/coxswain/test/localcluster/serviceproxy"
)

// KubernetesVersion is the version of the control-plane binaries the
// harness expects in the envtest asset directory.
const KubernetesVersion = "1.37.2"

// Binaries maps the images the local kubelet can run to local binaries.
type Binaries = kubelet.Binaries

// PodSandbox is what the local kubelet runs for one pod.
type PodSandbox = kubelet.PodSandbox

// Cluster is a running local cluster.
type Cluster struct {
	cfg Config

	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// RESTConfig is an admin client configuration.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// APIServer is the apiserver URL (https://<bridge address>:<port>).
	APIServer string
	// NodeIP is the Node's address (the bridge address), reachable from
	// the host and from every pod.
	NodeIP string

	lock    *process.Lock
	reg     *process.Registry
	net     *network.Network
	cp      *controlplane.ControlPlane
	proxy   *serviceproxy.Proxy
	kubelet *kubelet.Kubelet
	stopped bool
}

// Start brings up a cluster: stale leftovers removed, bridge, etcd,
// kube-apiserver, kube-controller-manager, the service proxy and the local
// kubelet. Every step is bounded; on error everything started so far is
// stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := Preflight(cfg.AssetsDir); err != nil {
		return nil, err
	}
	lock, err := lockMachine(ctx, cfg.LockWait)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	c := &Cluster{cfg: cfg, lock: lock}
	if err := c.start(ctx); err != nil {
		if serr := c.Stop(); serr != nil {
			cfg.Logf("stopping after a failed start: %v", serr)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("local cluster did not start within %s: %w", cfg.StartTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	cfg := c.cfg
	if err := removeLeftovers(cfg.Logf); err != nil {
		return err
	}
	c.reg = process.NewRegistry(pidsFile())
	var err error
	if c.net, err = network.New(cfg.Bridge, cfg.BridgeCIDR); err != nil {
		return err
	}
	if err := c.net.Setup(); err != nil {
		return err
	}
	c.NodeIP = c.net.Gateway().String()
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return err
	}
	for _, d := range []string{cfg.Dir, c.LogDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	c.cp, err = controlplane.Start(ctx, controlplane.Config{
		AssetsDir: cfg.AssetsDir, Dir: cfg.Dir, LogDir: c.LogDir(), NodeIP: c.net.Gateway(),
		ServiceCIDR: cfg.ServiceCIDR, Registry: c.reg, Logf: cfg.Logf,
	})
	if err != nil {
		return err
	}
	c.Kubeconfig, c.RESTConfig, c.Client, c.APIServer = c.cp.Kubeconfig, c.cp.RESTConfig, c.cp.Client, c.cp.APIServer
	c.proxy = serviceproxy.New(c.Client, c.net, cfg.Logf)
	c.kubelet, err = kubelet.Start(ctx, c.kubeletConfig())
	if err != nil {
		return fmt.Errorf("local kubelet: %w", err)
	}
	cfg.Logf("node %s ready at %s; kubeconfig %s", cfg.NodeName, c.NodeIP, c.Kubeconfig)
	return nil
}

func (c *Cluster) kubeletConfig() kubelet.Config {
	return kubelet.Config{
		Client: c.Client, NodeName: c.cfg.NodeName, Version: KubernetesVersion, Network: c.net, Binaries: c.cfg.Binaries,
		PodsDir: filepath.Join(c.cfg.Dir, "pods"), LogsDir: filepath.Join(c.LogDir(), "pods"),
		APIHost: c.NodeIP, APIPort: strconv.Itoa(c.cp.APIPort),
		Registry:        c.reg,
		ServingCertFile: c.cp.PKI.KubeletCertFile, ServingKeyFile: c.cp.PKI.KubeletKeyFile, CAPEM: c.cp.PKI.CACertPEM,
		MountsRecord:    mountsRecord(),
		ServicesChanged: c.proxy.Reconcile,
		Logf:            c.cfg.Logf,
	}
}

// Stop stops everything in reverse order, each process by its PID, removes
// the pod namespaces and the bridge, and releases the instance lock. It is
// safe to call more than once.
func (c *Cluster) Stop() error {
	if c == nil || c.stopped {
		return nil
	}
	c.stopped = true
	var errs []error
	if c.kubelet != nil {
		if err := c.kubelet.Stop(60 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.cp != nil {
		if err := c.cp.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.net != nil {
		if err := c.net.Cleanup(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.reg != nil && len(errs) == 0 {
		_ = os.Remove(c.reg.Path())
		_ = os.Remove(mountsRecord()) // every pod released its targets
	}
	c.lock.Release()
	return errors.Join(errs...)
}

// ControlPlanePIDs are the PIDs of etcd, kube-apiserver and
// kube-controller-manager.
func (c *Cluster) ControlPlanePIDs() []int {
	if c.cp == nil {
		return nil
	}
	return c.cp.PIDs()
}

// Sandboxes reports, by pod UID, what the local kubelet runs now.
func (c *Cluster) Sandboxes() map[types.UID]PodSandbox {
	if c.kubelet == nil {
		return nil
	}
	return c.kubelet.Sandboxes()
}

// LoadBalancerIP is the VIP the harness gave a Service of type
// LoadBalancer ("" if none yet). It is reachable from the host and from
// pods.
func (c *Cluster) LoadBalancerIP(namespace, name string) string {
	if c.proxy == nil {
		return ""
	}
	return c.proxy.VIP(namespace, name)
}

// Bridge is the name of the pod bridge.
func (c *Cluster) Bridge() string { return c.cfg.Bridge }

// LogDir holds the control-plane logs and, under pods/, every container's
// log (kept after the pod is gone).
func (c *Cluster) LogDir() string { return filepath.Join(c.cfg.Dir, "logs") }

// removeLeftovers stops the processes a crashed run recorded and removes
// the mount targets it created (the network is cleaned by its setup).
func removeLeftovers(logf func(string, ...any)) error {
	killed, err := process.KillRecorded(pidsFile())
	if err != nil {
		return fmt.Errorf("stopping leftovers of an earlier run: %w", err)
	}
	if len(killed) > 0 {
		logf("stopped leftovers of an earlier run: %s", strings.Join(killed, ", "))
	}
	if removed := kubelet.RemoveRecordedMountTargets(mountsRecord()); len(removed) > 0 {
		logf("removed mount targets an earlier run left: %s", strings.Join(removed, ", "))
	}
	return nil
}
