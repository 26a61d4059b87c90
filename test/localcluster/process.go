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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child process, started and stopped by its PID.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // valid once done is closed
	reg  *pidRegistry
}

// procSpec describes how to start a process.
type procSpec struct {
	name    string
	path    string
	args    []string
	env     []string
	dir     string
	logPath string
	// newMountNS gives the process a private mount namespace.
	newMountNS bool
	// timestamped prefixes every output line with its time and stream, so
	// the kubelet's log endpoint can honour sinceTime and timestamps.
	timestamped bool
}

// startProcess starts spec with its output appended to spec.logPath. The
// child is in its own process group (a terminal's Ctrl-C reaches only us, and
// we stop children in order) and is killed by the kernel if we die first.
func startProcess(spec procSpec, reg *pidRegistry) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.path, spec.args...)
	cmd.Env = spec.env
	cmd.Dir = spec.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if spec.timestamped {
		var mu sync.Mutex
		cmd.Stdout = &timestampWriter{stream: "stdout", w: logFile, mu: &mu}
		cmd.Stderr = &timestampWriter{stream: "stderr", w: logFile, mu: &mu}
		// A child holding the pipes open must not delay the exit.
		cmd.WaitDelay = 2 * time.Second
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.newMountNS {
		cmd.SysProcAttr.Unshareflags = syscall.CLONE_NEWNS
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", spec.name, spec.path, err)
	}
	p := &process{name: spec.name, cmd: cmd, log: logFile, done: make(chan struct{}), reg: reg}
	if reg != nil {
		reg.add(cmd.Process.Pid, spec.name)
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

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the exit status once exited (-1 when killed by a signal).
func (p *process) exitCode() int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// stop sends SIGTERM to the PID, waits up to grace, then SIGKILLs it and
// waits (bounded) until it is reaped.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

// pidRegistry records every PID this run started, with the process start
// time, in a file, so a later run can stop the leftovers of a run that
// crashed without killing an unrelated process that reused the PID.
type pidRegistry struct {
	mu   sync.Mutex
	path string
	pids map[int]string // pid -> "starttime name"
}

func newPIDRegistry(path string) *pidRegistry {
	return &pidRegistry{path: path, pids: map[int]string{}}
}

func (r *pidRegistry) add(pid int, name string) {
	st, err := procStartTime(pid)
	if err != nil {
		return // already gone
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pids[pid] = st + " " + strings.ReplaceAll(name, " ", "_")
	r.flushLocked()
}

func (r *pidRegistry) remove(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pids, pid)
	r.flushLocked()
}

func (r *pidRegistry) flushLocked() {
	var b strings.Builder
	for pid, rest := range r.pids {
		fmt.Fprintf(&b, "%d %s\n", pid, rest)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err == nil {
		_ = os.Rename(tmp, r.path)
	}
}

// killRecorded SIGKILLs every process listed in a registry file whose start
// time still matches, and removes the file. It returns what it killed.
func killRecorded(path string) ([]string, error) {
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
		st, err := procStartTime(pid)
		if err != nil || st != fields[1] {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
			killed = append(killed, fmt.Sprintf("%s (pid %d)", fields[2], pid))
			waitGone(pid, 5*time.Second)
		}
	}
	_ = os.Remove(path)
	return killed, sc.Err()
}

// procStartTime is field 22 of /proc/PID/stat (start time in clock ticks).
func procStartTime(pid int) (string, error) {
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

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
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

// waitGone waits (bounded) until pid is no longer alive.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !processAlive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !processAlive(pid)
}

// ProcessAlive reports whether a process with this PID is running (not a
// zombie). Tests use it to check that nothing the cluster started survives.
func ProcessAlive(pid int) bool { return processAlive(pid) }

// instanceLock is an exclusive flock held for the life of a cluster, so two
// clusters never share (and clobber) one bridge.
type instanceLock struct{ f *os.File }

// acquireLock takes the lock, waiting up to wait for another holder.
func acquireLock(ctx context.Context, path string, wait time.Duration) (*instanceLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			owner, _ := os.ReadFile(path)
			_ = f.Close()
			return nil, fmt.Errorf("another local cluster is running (lock %s held by pid %s); stop it first",
				path, strings.TrimSpace(string(owner)))
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &instanceLock{f: f}, nil
}

func (l *instanceLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// timestampWriter writes each complete line as "<RFC3339Nano> <stream>
// <line>" (a partial line waits for its end).
type timestampWriter struct {
	stream string
	w      io.Writer
	mu     *sync.Mutex
	buf    []byte
}

func (t *timestampWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := t.buf[:i]
		t.mu.Lock()
		_, err := fmt.Fprintf(t.w, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), t.stream, line)
		t.mu.Unlock()
		t.buf = t.buf[i+1:]
		if err != nil {
			return len(p), err
		}
	}
	if len(t.buf) > 64<<10 { // an endless line: flush it in pieces
		t.mu.Lock()
		_, err := fmt.Fprintf(t.w, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), t.stream, t.buf)
		t.mu.Unlock()
		t.buf = t.buf[:0]
		if err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}
