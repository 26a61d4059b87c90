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
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
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
	// Placeholder, when set, makes the shim itself the container: it
	// listens on these TCP ports and answers HTTP 200 until it is stopped.
	Placeholder *placeholderSpec `json:"placeholder,omitempty"`
}

type shimMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

type placeholderSpec struct {
	TCPPorts []int32 `json:"tcpPorts,omitempty"`
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
	for _, m := range spec.Mounts {
		if err := syscall.Mount(m.Source, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s at %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := syscall.Mount("", m.Target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("remounting %s read-only: %w", m.Target, err)
			}
		}
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	if spec.Placeholder != nil {
		return runPlaceholder(spec.Placeholder)
	}
	argv := append([]string{spec.Path}, spec.Args...)
	return syscall.Exec(spec.Path, argv, spec.Env)
}

// runPlaceholder listens on the given ports, answers every HTTP request
// with 200, and returns on SIGTERM or SIGINT.
func runPlaceholder(p *placeholderSpec) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("localcluster placeholder\n"))
	})
	for _, port := range p.TCPPorts {
		ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(int(port))))
		if err != nil {
			return err
		}
		go func() { _ = http.Serve(ln, handler) }() // local test placeholder
	}
	fmt.Println("localcluster placeholder ready")
	<-sig
	return nil
}
