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

package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// createSandbox allocates the pod IP and creates its network namespace.
func (r *podRunner) createSandbox(pod *corev1.Pod) error {
	dir := filepath.Join(r.k.podsDir, string(pod.UID))
	if err := os.MkdirAll(filepath.Join(dir, "volumes"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(r.k.podLogDir(pod), 0o755); err != nil {
		return err
	}
	r.mu.Lock()
	r.dir = dir
	r.mu.Unlock()
	if pod.Spec.HostNetwork {
		r.mu.Lock()
		r.ip = r.k.net.Gateway()
		r.mu.Unlock()
		return nil
	}
	ip, err := r.k.net.Allocate()
	if err != nil {
		return err
	}
	netns, veth := network.PodNetNames(string(pod.UID))
	if err := r.k.net.AddPod(netns, veth, ip); err != nil {
		r.k.net.Release(ip)
		return err
	}
	r.mu.Lock()
	r.ip, r.netns, r.veth = ip, netns, veth
	r.mu.Unlock()
	if err := network.WriteNetnsEtc(netns, r.k.hostsFor(pod.Namespace, pod.Name, ip.String())); err != nil {
		return fmt.Errorf("writing /etc/hosts of %s: %w", netns, err)
	}
	return nil
}

// writeHosts refreshes the pod's /etc/hosts (Service names).
func (r *podRunner) writeHosts() {
	r.mu.Lock()
	netns, ip := r.netns, r.ip
	r.mu.Unlock()
	if netns == "" || ip == nil || r.stopping() {
		return
	}
	pod := r.latest()
	if err := network.WriteNetnsEtc(netns, r.k.hostsFor(pod.Namespace, pod.Name, ip.String())); err != nil {
		r.logf("writing /etc/hosts: %v", err)
	}
}

// cleanup stops the processes, removes the sandbox and, for a graceful
// deletion, removes the pod object.
func (r *podRunner) cleanup() {
	r.mu.Lock()
	grace, mode := r.grace, r.mode
	containers := append([]*containerState(nil), r.containers...)
	r.mu.Unlock()
	if mode == stopGraceful {
		r.terminate(containers, grace)
	} else {
		var wg sync.WaitGroup
		for _, c := range containers {
			if c.proc == nil {
				continue
			}
			wg.Add(1)
			go func(p *process.Process) {
				defer wg.Done()
				if err := p.Stop(grace); err != nil {
					r.logf("%v", err)
				}
			}(c.proc)
		}
		wg.Wait()
	}
	if r.netns != "" {
		if err := r.k.net.DeletePod(r.netns, r.veth); err != nil {
			r.logf("removing network namespace: %v", err)
		}
		r.k.net.Release(r.ip)
	}
	r.k.targets.release(r.held)
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
	r.mu.Lock()
	mode = r.mode
	r.mu.Unlock()
	if mode == stopGraceful {
		pod := r.latest()
		r.k.forceDelete(pod.Namespace, pod.Name, pod.UID)
	}
}
