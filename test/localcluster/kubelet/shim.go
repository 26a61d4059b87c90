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
	"syscall"

	"golang.org/x/sys/unix"
)

// The local kubelet starts every container through a small shim: this very
// binary, re-executed with shimEnv naming a launch file. The shim runs in
// the pod's network namespace (under `ip netns exec`) and in a mount
// namespace of its own, bind-mounts the pod's volumes at their mountPaths,
// and then exec()s the mapped binary - so the PID the kubelet started is the
// container's process. A binary that imports this package (package
// localcluster does) gets the shim.
const shimEnv = "COXSWAIN_LOCALCLUSTER_SHIM"

// shimSpec is the launch file the kubelet writes for the shim.
type shimSpec struct {
	// HostMountNS is the harness's mount namespace; the shim refuses to
	// mount anything when it is still in it.
	HostMountNS string      `json:"hostMountNS"`
	Mounts      []shimMount `json:"mounts,omitempty"`
	Path        string      `json:"path,omitempty"`
	Args        []string    `json:"args,omitempty"`
	Env         []string    `json:"env"`
	Dir         string      `json:"dir,omitempty"`
}

type shimMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

func init() {
	if path := os.Getenv(shimEnv); path != "" {
		if err := runShim(path); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster shim: %v\n", err)
			os.Exit(127)
		}
		os.Exit(0)
	}
}

func mountNamespace() (string, error) { return os.Readlink("/proc/self/ns/mnt") }

func runShim(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec shimSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("launch file %s: %w", path, err)
	}
	if len(spec.Mounts) > 0 {
		ns, err := mountNamespace()
		if err != nil {
			return err
		}
		if spec.HostMountNS == "" || ns == spec.HostMountNS {
			return fmt.Errorf("refusing to bind-mount volumes: not in a private mount namespace (%s)", ns)
		}
		// Keep our mounts from propagating anywhere.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making / private: %w", err)
		}
	}
	// What the container needs from the host - the volume sources, the
	// binary and the pod directory - is opened before the first mount,
	// since a mountPath may cover any of them: the conformance suite's
	// CoreDNS mounts its ConfigMap at /root, which may hold the checkout
	// with the binary or the work directory with the volumes.
	sources := make([]string, len(spec.Mounts))
	for i, m := range spec.Mounts {
		fd, err := openPath(m.Source)
		if err != nil {
			return fmt.Errorf("volume source %s: %w", m.Source, err)
		}
		sources[i] = fdPath(fd)
	}
	exe, err := openPath(spec.Path)
	if err != nil {
		return fmt.Errorf("binary %s: %w", spec.Path, err)
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	for i, m := range spec.Mounts {
		if err := syscall.Mount(sources[i], m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s at %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("remounting %s read-only: %w", m.Target, err)
			}
		}
	}
	argv := append([]string{spec.Path}, spec.Args...)
	return syscall.Exec(execPath(spec.Path, exe), argv, spec.Env)
}

// openPath opens path as an O_PATH descriptor (closed on exec), which
// keeps reaching the file after a mount covers path.
func openPath(path string) (int, error) {
	return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// execPath is path when it still names the file opened as fd, else the
// descriptor's /proc path (a volume covers the binary).
func execPath(path string, fd int) string {
	var opened, now unix.Stat_t
	if unix.Fstat(fd, &opened) == nil && unix.Stat(path, &now) == nil &&
		opened.Dev == now.Dev && opened.Ino == now.Ino {
		return path
	}
	return fdPath(fd)
}
