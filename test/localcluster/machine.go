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

package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/kubelet"
	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// StateDir holds the instance lock, the PID registry and the record of
// created mount targets. It is fixed per machine so a second cluster, or a
// run after a crash, finds them.
func StateDir() string {
	if st, err := os.Stat("/run"); err == nil && st.IsDir() {
		return "/run/coxswain-localcluster"
	}
	return filepath.Join(os.TempDir(), "coxswain-localcluster")
}

// pidsFile is the PID registry (package process).
func pidsFile() string { return filepath.Join(StateDir(), "pids") }

// mountsRecord lists the mount targets the kubelet created on the host.
func mountsRecord() string { return filepath.Join(StateDir(), "mounts") }

// lockMachine takes the machine's one-cluster lock, waiting up to wait for
// another holder.
func lockMachine(ctx context.Context, wait time.Duration) (*process.Lock, error) {
	if err := os.MkdirAll(StateDir(), 0o755); err != nil {
		return nil, err
	}
	return process.AcquireLock(ctx, filepath.Join(StateDir(), "lock"), wait)
}

// Preflight checks what the harness needs from the machine: root, iproute2
// and the control-plane binaries. Its errors say how to fix them.
func Preflight(assetsDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("the local cluster needs root (network namespaces, a bridge, bind mounts); run it as root, as CI does")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the local cluster needs iproute2's `ip`: apt-get install -y iproute2 (or `make localcluster-deps`)")
	}
	if assetsDir == "" {
		return nil
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if st, err := os.Stat(filepath.Join(assetsDir, b)); err != nil || st.IsDir() {
			return fmt.Errorf("no %s in %s: build the assets with `make localcluster-assets` "+
				"(ENVTEST_EXTRA_BINARIES=kube-controller-manager hack/envtest/build.sh %s)", b, assetsDir, assetsDir)
		}
	}
	return nil
}

// Down removes what a crashed run left behind (processes it recorded, pod
// namespaces, veths, the bridge, empty mount targets it created). It
// refuses while a cluster is running.
func Down(bridge string) error {
	if bridge == "" {
		bridge = defaultBridge
	}
	if err := Preflight(""); err != nil {
		return err
	}
	lock, err := lockMachine(context.Background(), 0)
	if err != nil {
		return fmt.Errorf("%w (to stop a running cluster, interrupt its `localcluster up`)", err)
	}
	defer lock.Release()
	if _, err := process.KillRecorded(pidsFile()); err != nil {
		return err
	}
	kubelet.RemoveRecordedMountTargets(mountsRecord())
	n, err := network.New(bridge, defaultBridgeCIDR)
	if err != nil {
		return err
	}
	return n.Cleanup()
}
