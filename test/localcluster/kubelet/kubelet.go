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

// Package kubelet is the local cluster's node agent, a client-go program
// inside the harness process: it registers one Ready Node (node.go), binds
// every unscheduled pod to it (podevents.go) and runs each pod as local
// processes in a network namespace of its own. It serves container logs to
// the apiserver (logapi.go, logquery.go) and keeps each pod's /etc/hosts
// current with the Services (services.go).
//
// A pod's life, from sandbox to cleanup, is a podRunner (podrunner.go):
// the sandbox (sandbox.go), its volumes and environment (prepare.go,
// volumes.go, env.go, objects.go, mounttargets.go), the image each
// container maps to (images.go), its processes, restarts (containers.go)
// and readiness (probe.go), the status it reports (status.go) and its
// graceful termination (terminate.go). Every container is started through
// the shim (shim.go): the harness binary itself, re-executed.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// Config configures the kubelet. Every field is required but
// ServicesChanged.
type Config struct {
	// Client is an admin clientset.
	Client kubernetes.Interface
	// NodeName is the one Node's name.
	NodeName string
	// Version is the Node's kubelet version, without the "v".
	Version string
	// Network wires the pods; its gateway is the node IP.
	Network *network.Network
	// Binaries maps images to local binaries.
	Binaries Binaries
	// PodsDir receives each pod's volumes and launch files.
	PodsDir string
	// LogsDir receives every container's log (kept after the pod is gone).
	LogsDir string
	// APIHost and APIPort are where pods reach the apiserver
	// (KUBERNETES_SERVICE_HOST/PORT).
	APIHost, APIPort string
	// Registry records every container process.
	Registry *process.Registry
	// ServingCertFile and ServingKeyFile are the kubelet API's certificate
	// for the node IP; CAPEM is the CA its clients' certificates must
	// chain to.
	ServingCertFile, ServingKeyFile string
	CAPEM                           []byte
	// MountsRecord lists the mount targets created on the host, so a run
	// after a crash removes them (RemoveRecordedMountTargets).
	MountsRecord string
	// ServicesChanged, when set, receives every Service and EndpointSlice
	// at start and (debounced) after each change, before the pods'
	// /etc/hosts are rewritten: the service proxy serves a ClusterIP before
	// a pod can resolve a name to it.
	ServicesChanged func([]*corev1.Service, []*discoveryv1.EndpointSlice)
	// Logf receives pod events.
	Logf func(format string, args ...any)
}

// Kubelet is the running node agent.
type Kubelet struct {
	client      kubernetes.Interface
	nodeName    string
	version     string
	net         *network.Network
	binaries    Binaries
	podsDir     string // volumes and launch files, per pod
	logsDir     string // container logs, kept after the pod is gone
	apiHost     string // what pods use to reach the apiserver
	apiPort     string
	shimPath    string
	hostMountNS string
	reg         *process.Registry
	logf        func(format string, args ...any)
	// The kubelet API (logapi.go): serving certificate and the CA its
	// clients' certificates must chain to.
	servingCert, servingKey string
	caPEM                   []byte
	apiPortNum              int

	ctx     context.Context
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory

	mu       sync.Mutex
	stopping bool
	runners  map[types.UID]*podRunner
	binding  map[types.UID]bool
	wg       sync.WaitGroup

	targets *mountTargets

	servicesChanged func([]*corev1.Service, []*discoveryv1.EndpointSlice)
	hostsDirty      chan struct{}
	svcAddrs        map[string]string // "<ns>/<svc>" -> endpoint address, for pods' /etc/hosts
}

// Start serves the kubelet API, registers the Node and starts running the
// pods bound to it once its informers have synced. On error it stops what
// it started.
func Start(ctx context.Context, cfg Config) (*Kubelet, error) {
	k := &Kubelet{
		client: cfg.Client, nodeName: cfg.NodeName, version: cfg.Version, net: cfg.Network, binaries: cfg.Binaries,
		podsDir: cfg.PodsDir, logsDir: cfg.LogsDir, apiHost: cfg.APIHost, apiPort: cfg.APIPort,
		reg: cfg.Registry, logf: cfg.Logf,
		servingCert: cfg.ServingCertFile, servingKey: cfg.ServingKeyFile, caPEM: cfg.CAPEM,
		runners: map[types.UID]*podRunner{}, binding: map[types.UID]bool{},
		targets:         &mountTargets{refs: map[string]int{}, record: cfg.MountsRecord},
		servicesChanged: cfg.ServicesChanged,
		hostsDirty:      make(chan struct{}, 1),
	}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	if err := k.start(ctx); err != nil {
		if serr := k.Stop(10 * time.Second); serr != nil {
			k.logf("stopping the kubelet after a failed start: %v", serr)
		}
		return nil, err
	}
	return k, nil
}

func (k *Kubelet) start(ctx context.Context) error {
	var err error
	// Every container is this binary, re-executed as the shim (shim.go).
	if k.shimPath, err = os.Executable(); err != nil {
		return err
	}
	if k.hostMountNS, err = mountNamespace(); err != nil {
		return err
	}
	for _, d := range []string{k.podsDir, k.logsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if k.apiPortNum, err = k.serveAPI(); err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	if err := k.registerNode(ctx); err != nil {
		return fmt.Errorf("registering node %s: %w", k.nodeName, err)
	}
	if err := k.startInformers(ctx); err != nil {
		return err
	}
	k.syncServices()
	go k.hostsLoop()
	return nil
}

// startInformers watches pods (to run them) and Services and
// EndpointSlices (for the pods' /etc/hosts, services.go), and waits
// (bounded) for their caches.
func (k *Kubelet) startInformers(ctx context.Context) error {
	k.factory = informers.NewSharedInformerFactory(k.client, 0)
	inf := k.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.handle(obj) },
		UpdateFunc: func(_, obj any) { k.handle(obj) },
		DeleteFunc: func(obj any) { k.handleDelete(obj) },
	}); err != nil {
		return err
	}
	dirty := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.markHostsDirty() },
		UpdateFunc: func(any, any) { k.markHostsDirty() },
		DeleteFunc: func(any) { k.markHostsDirty() },
	}
	svcInf := k.factory.Core().V1().Services().Informer()
	sliceInf := k.factory.Discovery().V1().EndpointSlices().Informer()
	for _, i := range []cache.SharedIndexInformer{svcInf, sliceInf} {
		if _, err := i.AddEventHandler(dirty); err != nil {
			return err
		}
	}
	k.factory.Start(k.ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced, svcInf.HasSynced, sliceInf.HasSynced) {
		return errors.New("informers did not sync within 30s")
	}
	return nil
}

// Stop kills every pod (without API calls: the cluster is going away) and
// waits, bounded, for the runners to finish.
func (k *Kubelet) Stop(timeout time.Duration) error {
	k.mu.Lock()
	k.stopping = true
	k.mu.Unlock()
	for _, r := range k.runnerList() {
		r.requestStop(2*time.Second, stopShutdown)
	}
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(timeout):
		err = fmt.Errorf("pods did not stop within %s", timeout)
	}
	k.cancel()
	if k.factory != nil {
		k.factory.Shutdown()
	}
	return err
}

// runnerList snapshots the pod runners.
func (k *Kubelet) runnerList() []*podRunner {
	k.mu.Lock()
	defer k.mu.Unlock()
	runners := make([]*podRunner, 0, len(k.runners))
	for _, r := range k.runners {
		runners = append(runners, r)
	}
	return runners
}

// PodSandbox is what the local kubelet runs for one pod.
type PodSandbox struct {
	Netns string // network namespace name ("" for hostNetwork pods)
	IP    string
	PIDs  []int // container processes running now
}

// Sandboxes snapshots every running pod by UID.
func (k *Kubelet) Sandboxes() map[types.UID]PodSandbox {
	runners := k.runnerList()
	out := make(map[types.UID]PodSandbox, len(runners))
	for _, r := range runners {
		out[r.uid] = r.sandbox()
	}
	return out
}
