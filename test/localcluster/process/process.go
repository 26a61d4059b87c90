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

// Package process starts and stops the local cluster's child processes by
// PID: the control plane (etcd, kube-apiserver, kube-controller-manager) and
// every container. It also keeps the machine-wide records a run needs to
// clean up after a crash: the PID registry (registry.go) and the instance
// lock (lock.go). Container output is stored with a timestamp per line
// (timestamp.go) for the kubelet's log endpoint.
package process

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is one child process, started and stopped by its PID.
type Process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed
}

// Spec describes how to start a process.
type Spec struct {
	Name    string
	Path    string
	Args    []string
	Env     []string
	Dir     string
	LogPath string
	// NewMountNS gives the process a private mount namespace.
	NewMountNS bool
	// Timestamped prefixes every output line with its time and stream, so
	// the kubelet's log endpoint can honour sinceTime and timestamps.
	Timestamped bool
}

// Start starts spec with its output appended to spec.LogPath and records it
// in reg (when not nil) until it exits. The child is in its own process
// group (a terminal's Ctrl-C reaches only us, and we stop children in order)
// and is killed by the kernel if we die first.
func Start(spec Spec, reg *Registry) (*Process, error) {
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if spec.Timestamped {
		var mu sync.Mutex
		cmd.Stdout = &timestampWriter{stream: "stdout", w: logFile, mu: &mu}
		cmd.Stderr = &timestampWriter{stream: "stderr", w: logFile, mu: &mu}
		// A child holding the pipes open must not delay the exit.
		cmd.WaitDelay = 2 * time.Second
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.NewMountNS {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", spec.Name, spec.Path, err)
	}
	p := &Process{name: spec.Name, cmd: cmd, done: make(chan struct{})}
	if reg != nil {
		reg.add(cmd.Process.Pid, spec.Name)
	}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		if reg != nil {
			reg.remove(cmd.Process.Pid)
		}
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is what waiting for the process returned; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitCode is the exit status once exited (-1 when killed by a signal).
func (p *Process) ExitCode() int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM to the PID, waits up to grace, then SIGKILLs it and
// waits (bounded) until it is reaped.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	_ = syscall.Kill(p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	return p.kill()
}

// kill sends SIGKILL to the PID and waits (bounded) until it is reaped.
func (p *Process) kill() error {
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.PID())
	}
}
