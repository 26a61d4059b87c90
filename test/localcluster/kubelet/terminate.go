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
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// terminate is the graceful part of a pod's deletion, as the kubelet does
// it: each container's preStop hook (the sleep action), then SIGTERM, then
// SIGKILL when the grace period is over. The hook counts against the grace
// period, and at least 2 s remain after it. Meanwhile readiness probes and
// status reports go on, so a container that stops passing its probe turns
// the pod not Ready - the EndpointSlice controller then marks its endpoint
// not serving, besides terminating - and exited containers show as
// terminated.
func (r *podRunner) terminate(containers []*containerState, grace time.Duration) {
	r.mu.Lock()
	r.terminating = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.terminating = false
		r.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for _, c := range containers {
		if c.proc == nil || c.proc.Exited() {
			continue
		}
		wg.Add(1)
		go func(c *containerState, p *process.Process) {
			defer wg.Done()
			r.stopContainer(c, p, grace)
		}(c, c.proc)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-done:
			for _, c := range containers {
				r.markExited(c)
			}
			r.report()
			return
		case <-t.C:
			now := time.Now()
			for _, c := range containers {
				r.markExited(c)
				r.probe(c, now)
			}
			r.report()
		}
	}
}

// stopContainer runs one container's preStop sleep, sends SIGTERM and, once
// the grace period is over, SIGKILL.
func (r *podRunner) stopContainer(c *containerState, p *process.Process, grace time.Duration) {
	deadline := time.Now().Add(grace)
	if sleep := r.preStopSleep(&c.spec); sleep > 0 {
		sleep = min(sleep, grace)
		select {
		case <-time.After(sleep):
		case <-r.hurry:
		case <-p.Done():
			return
		}
	}
	remaining := max(time.Until(deadline), minGraceAfterPreStop)
	select {
	case <-r.hurry:
		remaining = min(remaining, minGraceAfterPreStop)
	default:
	}
	_ = syscall.Kill(p.PID(), syscall.SIGTERM)
	timer := time.NewTimer(remaining)
	defer timer.Stop()
	select {
	case <-p.Done():
		return
	case <-timer.C:
	case <-r.hurry:
		select {
		case <-p.Done():
			return
		case <-time.After(minGraceAfterPreStop):
		}
	}
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		r.logf("container %s (pid %d) did not exit after SIGKILL", c.spec.Name, p.PID())
	}
}

// preStopSleep is the container's preStop sleep; other preStop handlers
// (exec, httpGet) are not run by the local kubelet, which says so.
func (r *podRunner) preStopSleep(c *corev1.Container) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	h := c.Lifecycle.PreStop
	if h.Sleep == nil {
		r.logf("container %s: only the sleep preStop action is supported; the hook is skipped", c.Name)
		return 0
	}
	return time.Duration(h.Sleep.Seconds) * time.Second
}

// markExited records a container that exited while terminating.
func (r *podRunner) markExited(c *containerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := c.proc
	if p == nil || !p.Exited() || c.done {
		return
	}
	c.ready, c.done = false, true
	c.lastTerm = terminated(c, p)
}
