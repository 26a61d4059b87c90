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

package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Registry records every PID this run started, with the process start
// time, in a file, so a later run can stop the leftovers of a run that
// crashed without killing an unrelated process that reused the PID.
type Registry struct {
	mu   sync.Mutex
	path string
	pids map[int]string // pid -> "starttime name"
}

// NewRegistry records into the file at path (written on every change).
func NewRegistry(path string) *Registry {
	return &Registry{path: path, pids: map[int]string{}}
}

// Path is the registry file.
func (r *Registry) Path() string { return r.path }

func (r *Registry) add(pid int, name string) {
	st, err := StartTime(pid)
	if err != nil {
		return // already gone
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pids[pid] = st + " " + strings.ReplaceAll(name, " ", "_")
	r.flushLocked()
}

func (r *Registry) remove(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pids, pid)
	r.flushLocked()
}

func (r *Registry) flushLocked() {
	var b strings.Builder
	for pid, rest := range r.pids {
		fmt.Fprintf(&b, "%d %s\n", pid, rest)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err == nil {
		_ = os.Rename(tmp, r.path)
	}
}

// KillRecorded SIGKILLs every process listed in a registry file whose start
// time still matches, and removes the file. It returns what it killed.
func KillRecorded(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var killed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 1 {
			continue
		}
		st, err := StartTime(pid)
		if err != nil || st != fields[1] {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, fmt.Sprintf("%s (pid %d)", fields[2], pid))
			WaitGone(pid, 5*time.Second)
		}
	}
	_ = os.Remove(path)
	return killed, sc.Err()
}

// StartTime is field 22 of /proc/PID/stat (start time in clock ticks): with
// the PID it names one process, even after the PID is reused.
func StartTime(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", err
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields after it start
	// after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return fields[19], nil
}

// Alive reports whether a process with this PID is running (not a zombie).
func Alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// WaitGone waits (bounded) until pid is no longer alive.
func WaitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !Alive(pid)
}
