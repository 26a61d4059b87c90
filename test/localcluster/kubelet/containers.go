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
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// startContainer starts (or restarts) one container's process through the
// shim.
func (r *podRunner) startContainer(c *containerState) {
	b, err := json.Marshal(c.launch)
	if err == nil {
		err = os.WriteFile(c.launchFile, b, 0o600)
	}
	if err != nil {
		r.containerFailedToStart(c, err)
		return
	}
	spec := process.Spec{
		Name:        fmt.Sprintf("pod %s container %s", r.latest().Name, c.spec.Name),
		Env:         []string{"PATH=" + defaultPath, shimEnv + "=" + c.launchFile},
		Dir:         r.dir,
		LogPath:     c.logPath,
		Timestamped: true,
	}
	if r.netns != "" {
		spec.Path, spec.Args = "ip", []string{"netns", "exec", r.netns, r.k.shimPath}
	} else {
		spec.Path, spec.NewMountNS = r.k.shimPath, true
	}
	p, err := process.Start(spec, r.k.reg)
	if err != nil {
		r.containerFailedToStart(c, err)
		return
	}
	r.mu.Lock()
	c.proc, c.startedAt, c.ready, c.waiting, c.restartAt = p, metav1.Now(), false, "", time.Time{}
	c.lastProbe = time.Time{}
	r.mu.Unlock()
	go func() {
		<-p.Done()
		select {
		case r.exits <- exitEvent{c: c, p: p}:
		case <-r.stopCh:
		}
	}()
}

func (r *podRunner) containerFailedToStart(c *containerState, err error) {
	r.logf("container %s failed to start: %v", c.spec.Name, err)
	r.mu.Lock()
	c.waiting = "RunContainerError"
	r.message = err.Error()
	r.mu.Unlock()
	r.scheduleRestart(c, 1)
}

// scheduleRestart applies the restart policy after an exit.
func (r *podRunner) scheduleRestart(c *containerState, exitCode int) {
	pod := r.latest()
	policy := pod.Spec.RestartPolicy
	r.mu.Lock()
	defer r.mu.Unlock()
	if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && exitCode == 0) {
		c.done = true
		return
	}
	switch {
	case c.backoff == 0:
		c.backoff = time.Second
	case !c.startedAt.IsZero() && time.Since(c.startedAt.Time) > 2*maxBackoff:
		c.backoff = time.Second // it ran for a while: start over
	default:
		c.backoff *= 2
	}
	if c.backoff > maxBackoff {
		c.backoff = maxBackoff
	}
	c.restartAt = time.Now().Add(c.backoff)
	c.waiting = "CrashLoopBackOff"
}

// loop supervises the containers until the pod stops: it records exits,
// restarts containers when their backoff is over, probes readiness, and
// reports the status after each event.
func (r *podRunner) loop() {
	t := time.NewTicker(tick)
	defer t.Stop()
	gateAt := time.Now().Add(readyGate)
	for {
		select {
		case <-r.stopCh:
			return
		case ev := <-r.exits:
			if ev.c.proc != ev.p {
				continue // an older process of a restarted container
			}
			r.containerExited(ev.c, ev.p)
		case <-t.C:
			r.supervise(time.Now(), gateAt)
		}
		r.report()
	}
}

// containerExited records the exit of c's current process and applies the
// restart policy.
func (r *podRunner) containerExited(c *containerState, p *process.Process) {
	r.mu.Lock()
	c.ready = false
	c.lastTerm = terminated(c, p)
	r.mu.Unlock()
	code := p.ExitCode()
	if n := c.restarts; n < 3 || n%10 == 0 {
		r.logf("container %s (pid %d) exited with code %d (restarts so far: %d; log %s)", c.spec.Name, p.PID(), code, n, c.logPath)
	}
	r.scheduleRestart(c, code)
}

// supervise restarts the containers whose backoff is over, probes the
// others, and opens the Running gate once all are ready (or at gateAt).
func (r *podRunner) supervise(now, gateAt time.Time) {
	for _, c := range r.containers {
		r.mu.Lock()
		due := !c.restartAt.IsZero() && now.After(c.restartAt)
		r.mu.Unlock()
		if due {
			r.mu.Lock()
			c.restarts++
			r.mu.Unlock()
			if c.restarts <= 3 {
				r.logf("restarting container %s (restart %d)", c.spec.Name, c.restarts)
			}
			r.startContainer(c)
			continue
		}
		r.probe(c, now)
	}
	if !r.gate && (r.allReady() || now.After(gateAt)) {
		r.mu.Lock()
		r.gate = true
		r.mu.Unlock()
	}
}

// terminated is the state of c once its process p has exited.
func terminated(c *containerState, p *process.Process) *corev1.ContainerStateTerminated {
	code := p.ExitCode()
	return &corev1.ContainerStateTerminated{
		ExitCode: int32(code), Reason: exitReason(code), StartedAt: c.startedAt, FinishedAt: metav1.Now(),
		ContainerID: containerID(p),
	}
}

func exitReason(code int) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func containerID(p *process.Process) string { return "localcluster://" + strconv.Itoa(p.PID()) }
