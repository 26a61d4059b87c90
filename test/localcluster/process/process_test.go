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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

func TestTimestampWriter(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	w := &timestampWriter{stream: "stdout", w: &buf, mu: &mu}
	for _, chunk := range []string{"first line\nsec", "ond line\n", "third\n", "partial"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("stored %q: want 3 complete lines", buf.String())
	}
	for i, text := range []string{"first line", "second line", "third"} {
		ts, rest, _ := strings.Cut(lines[i], " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || rest != "stdout "+text {
			t.Errorf("line %d = %q, want \"<RFC3339Nano> stdout %s\"", i, lines[i], text)
		}
	}
}

// TestStartStop: a process that ignores SIGTERM is killed once the grace
// period is over, and the registry lists it only while it runs.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	reg := NewRegistry(filepath.Join(dir, "pids"))
	p, err := Start(Spec{
		Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", `trap "" TERM; echo started; while :; do sleep 1; done`},
		LogPath: filepath.Join(dir, "log"), Timestamped: true,
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := os.ReadFile(reg.Path())
	if err != nil || !regexp.MustCompile(`^`+strconv.Itoa(p.PID())+` \d+ stubborn\n$`).Match(recorded) {
		t.Fatalf("registry %q, %v; want the process with its start time", recorded, err)
	}
	waitForLog(t, filepath.Join(dir, "log"), "stdout started")
	start := time.Now()
	if err := p.Stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("stopped after %s: SIGTERM should have been ignored for the grace period", took)
	}
	if !p.Exited() || p.ExitCode() != -1 || Alive(p.PID()) {
		t.Errorf("after Stop: exited %t, exit code %d, alive %t; want killed", p.Exited(), p.ExitCode(), Alive(p.PID()))
	}
	if b, _ := os.ReadFile(reg.Path()); len(b) != 0 {
		t.Errorf("registry still lists %q after the exit", b)
	}
}

func waitForLog(t *testing.T, path, want string) {
	t.Helper()
	testkit.EventuallyWithin(t, 5*time.Second, fmt.Sprintf("%s to log %q", path, want), func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want)
	})
}

// TestKillRecorded: a recorded process whose start time matches is killed;
// an entry whose start time differs (the PID was reused) is left alone.
func TestKillRecorded(t *testing.T) {
	dir := t.TempDir()
	var procs []*Process
	for i := 0; i < 2; i++ {
		p, err := Start(Spec{Name: "sleep", Path: "/bin/sleep", Args: []string{"60"}, LogPath: filepath.Join(dir, "log")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Stop(0) }()
		procs = append(procs, p)
	}
	st, err := StartTime(procs[0].PID())
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "pids")
	list := fmt.Sprintf("%d %s stale-etcd\n%d 1 reused-pid\n", procs[0].PID(), st, procs[1].PID())
	if err := os.WriteFile(record, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	killed, err := KillRecorded(record)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("stale-etcd (pid %d)", procs[0].PID()); len(killed) != 1 || killed[0] != want {
		t.Errorf("killed %v, want [%s]", killed, want)
	}
	select {
	case <-procs[0].Done():
	case <-time.After(5 * time.Second):
		t.Error("the recorded process still runs")
	}
	if procs[1].Exited() {
		t.Error("a process whose start time does not match the record was killed")
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("record not removed: %v", err)
	}
}

func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	ctx := context.Background()
	first, err := AcquireLock(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(ctx, path, 300*time.Millisecond)
	if want := "held by pid " + strconv.Itoa(os.Getpid()); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second lock: %v, want an error naming the holder (%s)", err, want)
	}
	first.Release()
	first.Release() // safe twice
	second, err := AcquireLock(ctx, path, 0)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	second.Release()
}
