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
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// mountTargets creates missing mountPath directories (or files) on the host
// - bind mounts need an existing target - and removes the ones it created
// once no pod uses them any more. Existing paths are never removed.
type mountTargets struct {
	mu     sync.Mutex
	refs   map[string]int // paths this harness created -> pods using them
	record string         // file listing every path created ("" for none)
}

// forbiddenTarget reports mount targets the harness refuses.
func forbiddenTarget(target string) bool {
	if target == "/" {
		return true
	}
	for _, p := range []string{"/proc", "/sys", "/dev"} {
		if target == p || strings.HasPrefix(target, p+"/") {
			return true
		}
	}
	return false
}

// ensure makes target exist; it returns the created paths this caller now
// holds a reference on (release them with release).
func (m *mountTargets) ensure(target string, dir bool) ([]string, error) {
	target = filepath.Clean(target)
	if !filepath.IsAbs(target) || forbiddenTarget(target) {
		return nil, fmt.Errorf("mountPath %q is not supported by the local kubelet", target)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Walk from the root down; every component we created (now or for
	// another pod) gets a reference.
	parts := strings.Split(strings.TrimPrefix(target, "/"), "/")
	var held []string
	cur := "/"
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		last := i == len(parts)-1
		if _, ok := m.refs[cur]; ok {
			m.refs[cur]++
			held = append(held, cur)
			continue
		}
		if _, err := os.Lstat(cur); err == nil {
			continue
		}
		var err error
		if last && !dir {
			err = os.WriteFile(cur, nil, 0o644)
		} else {
			err = os.Mkdir(cur, 0o755)
		}
		if err != nil {
			m.releaseLocked(held)
			return nil, fmt.Errorf("creating mount target %s: %w", cur, err)
		}
		m.refs[cur] = 1
		m.recordLocked(cur)
		held = append(held, cur)
	}
	return held, nil
}

// recordLocked appends a created path to the record file.
func (m *mountTargets) recordLocked(path string) {
	if m.record != "" {
		RecordMountTarget(m.record, path)
	}
}

// RecordMountTarget appends path to a record of created mount targets (as
// the kubelet does for each one it creates, and tests do to plant a
// crashed run's leftovers).
func RecordMountTarget(record, path string) {
	f, err := os.OpenFile(record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(path + "\n")
	_ = f.Close()
}

// RemoveRecordedMountTargets removes the mount targets an earlier run
// recorded - only empty directories and empty files, deepest first - and
// then the record.
func RemoveRecordedMountTargets(record string) []string {
	b, err := os.ReadFile(record)
	if err != nil {
		return nil
	}
	paths := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	var removed []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) || forbiddenTarget(p) {
			continue
		}
		st, err := os.Lstat(p)
		if err != nil || (!st.IsDir() && st.Size() != 0) || (!st.IsDir() && !st.Mode().IsRegular()) {
			continue
		}
		if os.Remove(p) == nil { // fails on non-empty directories
			removed = append(removed, p)
		}
	}
	_ = os.Remove(record)
	return removed
}

func (m *mountTargets) release(held []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(held)
}

func (m *mountTargets) releaseLocked(held []string) {
	for i := len(held) - 1; i >= 0; i-- {
		p := held[i]
		m.refs[p]--
		if m.refs[p] <= 0 {
			delete(m.refs, p)
			_ = os.Remove(p) // only when empty
		}
	}
}
