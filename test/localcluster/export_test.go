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
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
	if err := os.MkdirAll(StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := acquireLock(ctx, filepath.Join(StateDir(), "lock"), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.release()

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
	st, err := procStartTime(recordedPID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(StateDir(), "pids"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
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
	(&mountTargets{record: filepath.Join(StateDir(), "mounts")}).recordLocked(mountTarget)

	netns = netnsPrefix + "stale000000"
	if _, err := runIP("netns", "add", netns); err != nil {
		t.Fatal(err)
	}
	netnsPID = start("ip", "netns", "exec", netns, "sleep", "300")
	if !linkExists(bridge) {
		if _, err := runIP("link", "add", bridge, "type", "bridge"); err != nil {
			t.Fatal(err)
		}
	}
	// Wait (bounded) until the process has entered the namespace.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if pids, _ := NetnsPIDs(netns); len(pids) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return recordedPID, netnsPID, netns, mountTarget
}
