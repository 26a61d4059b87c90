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
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// prepare writes volumes and resolves env, retrying (bounded) while
// referenced objects are missing. It reports false when the pod must not
// start (stopping, or the wait ran out).
func (r *podRunner) prepare() bool {
	deadline := time.Now().Add(configRetryLimit)
	backoff := 250 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := r.prepareOnce()
		if err == nil {
			r.mu.Lock()
			r.reason, r.message = "", ""
			r.mu.Unlock()
			return true
		}
		if r.stopping() {
			return false
		}
		r.mu.Lock()
		r.reason, r.message = ReasonConfigError, err.Error()
		for _, c := range r.containers {
			c.waiting = ReasonConfigError
		}
		r.mu.Unlock()
		if attempt == 0 || attempt%10 == 0 {
			r.logf("waiting: %v", err)
		}
		r.report()
		if time.Now().After(deadline) {
			r.fail(ReasonConfigError, fmt.Sprintf("gave up after %s: %v", configRetryLimit, err))
			return false
		}
		select {
		case <-r.stopCh:
			return false
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

// defaultPath is the PATH every container (and the shim) starts with.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// prepareOnce writes the volumes, resolves each container's environment,
// launch file and readiness target, and creates the mount targets.
func (r *podRunner) prepareOnce() error {
	pod := r.latest()
	ctx, cancel := context.WithTimeout(r.k.ctx, 30*time.Second)
	defer cancel()
	src := apiObjects{ctx: ctx, client: r.k.client}
	facts := podFacts{podIP: r.ip.String(), hostIP: r.k.net.Gateway().String()}
	vw := volumeWriter{dir: filepath.Join(r.dir, "volumes"), src: src, facts: facts, token: r.k.token}
	volumes, err := vw.write(pod)
	if err != nil {
		return err
	}
	base := r.baseEnv(pod)
	for _, c := range r.containers {
		env, err := resolveEnv(pod, &c.spec, facts, src, base)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		vals := envMap(env)
		spec, err := r.launchSpec(c, env, vals, volumes)
		if err != nil {
			return err
		}
		c.launch = spec
		c.probe = readinessTarget(&c.spec, c.plan, vals)
	}
	// Mount targets are created once everything else resolved.
	return r.holdMountTargets()
}

// baseEnv is what every container's environment starts with: PATH, HOME,
// HOSTNAME and KUBERNETES_SERVICE_* pointing at the apiserver itself, so
// in-cluster clients work without the kubernetes Service's ClusterIP.
func (r *podRunner) baseEnv(pod *corev1.Pod) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "PATH", Value: defaultPath},
		{Name: "HOME", Value: "/root"},
		{Name: "HOSTNAME", Value: pod.Name},
		{Name: "KUBERNETES_SERVICE_HOST", Value: r.k.apiHost},
		{Name: "KUBERNETES_SERVICE_PORT", Value: r.k.apiPort},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: r.k.apiPort},
		{Name: "KUBERNETES_PORT", Value: "tcp://" + net.JoinHostPort(r.k.apiHost, r.k.apiPort)},
	}
}

// launchSpec is the shim's launch file for one container: its environment,
// its volume mounts (volumes maps volume names to host paths), and the
// mapped binary with $(VAR)-expanded args.
func (r *podRunner) launchSpec(c *containerState, env []string, vals, volumes map[string]string) (shimSpec, error) {
	spec := shimSpec{HostMountNS: r.k.hostMountNS, Env: env, Dir: r.dir}
	for _, vm := range c.spec.VolumeMounts {
		src, ok := volumes[vm.Name]
		if !ok {
			return spec, fmt.Errorf("container %s: volumeMount %q names no volume", c.spec.Name, vm.Name)
		}
		if vm.SubPath != "" {
			var err error
			if src, err = safeJoin(src, vm.SubPath); err != nil {
				return spec, err
			}
		}
		spec.Mounts = append(spec.Mounts, shimMount{Source: src, Target: filepath.Clean(vm.MountPath), ReadOnly: vm.ReadOnly})
	}
	spec.Path = c.plan.path
	for _, a := range c.plan.args {
		spec.Args = append(spec.Args, expandVars(a, vals))
	}
	return spec, nil
}

// holdMountTargets creates (once per pod) the missing mount targets of
// every container's mounts and holds a reference on each.
func (r *podRunner) holdMountTargets() error {
	if r.held != nil {
		return nil
	}
	var held []string
	for _, c := range r.containers {
		for _, m := range c.launch.Mounts {
			st, err := os.Stat(m.Source)
			if err != nil {
				r.k.targets.release(held)
				return fmt.Errorf("volume source %s: %w", m.Source, err)
			}
			h, err := r.k.targets.ensure(m.Target, st.IsDir())
			if err != nil {
				r.k.targets.release(held)
				return err
			}
			held = append(held, h...)
		}
	}
	r.held = held
	if r.held == nil {
		r.held = []string{}
	}
	return nil
}
