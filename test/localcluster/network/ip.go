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

package network

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// runIP runs `ip args...` (bounded) and returns its stdout, or an error
// holding its output.
func runIP(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// deleteNetns SIGKILLs every process in ns, then deletes it.
func deleteNetns(ns string) error {
	if pids, err := NetnsPIDs(ns); err == nil {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			process.WaitGone(pid, 5*time.Second)
		}
	}
	if _, err := runIP("netns", "del", ns); err != nil {
		if exists, _ := netnsExists(ns); exists {
			return err
		}
	}
	return nil
}

// NetnsPIDs lists the processes in a named network namespace.
func NetnsPIDs(ns string) ([]int, error) {
	out, err := runIP("netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// listNetns lists named network namespaces.
func listNetns() ([]string, error) {
	out, err := runIP("netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// HarnessNetns lists the network namespaces the harness owns (by name
// prefix) that exist now.
func HarnessNetns() ([]string, error) {
	all, err := listNetns()
	if err != nil {
		return nil, err
	}
	var mine []string
	for _, ns := range all {
		if strings.HasPrefix(ns, NetnsPrefix) {
			mine = append(mine, ns)
		}
	}
	return mine, nil
}

func netnsExists(ns string) (bool, error) {
	names, err := listNetns()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == ns {
			return true, nil
		}
	}
	return false, nil
}

// listLinks lists the host's interface names.
func listLinks() ([]string, error) {
	out, err := runIP("-o", "link", "show")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		// "4: cxv0123@if2: <...>"
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		names = append(names, name)
	}
	return names, nil
}

// LinkExists reports whether a host interface exists.
func LinkExists(name string) bool {
	_, err := runIP("link", "show", "dev", name)
	return err == nil
}
