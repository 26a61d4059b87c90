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
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/kubelet"
	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// PlantLeftovers simulates a run that crashed: a recorded process still
// running, a pod network namespace with a process in it, the bridge, and a
// recorded mount target (an empty directory on the host). It
// holds the machine's cluster lock while it does so (waiting for another
// cluster to stop), so it never touches a running cluster's state.
func PlantLeftovers(t *testing.T, bridge string) (recordedPID, netnsPID int, netns, mountTarget string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	lock, err := lockMachine(ctx, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()

	start := func(name string, args ...string) int {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }() // reap once killed
		return cmd.Process.Pid
	}
	recordedPID = start("sleep", "300")
	st, err := process.StartTime(recordedPID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(pidsFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(f, "%d %s stale-etcd\n", recordedPID, st)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	mountTarget = "/etc/coxswain-localcluster-stale-mount-target"
	if err := os.Mkdir(mountTarget, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	kubelet.RecordMountTarget(mountsRecord(), mountTarget)

	netns = network.NetnsPrefix + "stale000000"
	if out, err := exec.Command("ip", "netns", "add", netns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", netns, err, out)
	}
	netnsPID = start("ip", "netns", "exec", netns, "sleep", "300")
	if !network.LinkExists(bridge) {
		if out, err := exec.Command("ip", "link", "add", bridge, "type", "bridge").CombinedOutput(); err != nil {
			t.Fatalf("ip link add %s: %v: %s", bridge, err, out)
		}
	}
	// Wait (bounded) until the process has entered the namespace.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pids, _ := network.NetnsPIDs(netns); len(pids) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return recordedPID, netnsPID, netns, mountTarget
}
