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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMountTargets(t *testing.T) {
	root := t.TempDir()
	m := &mountTargets{refs: map[string]int{}}
	target := filepath.Join(root, "a", "b", "c")
	h1, err := m.ensure(target, true)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := m.ensure(target, true) // a second pod with the same mountPath
	if err != nil {
		t.Fatal(err)
	}
	if len(h1) != 3 || len(h2) != 3 {
		t.Fatalf("held %v and %v, want the 3 created directories each", h1, h2)
	}
	m.release(h1)
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("target removed while another pod uses it: %v", err)
	}
	m.release(h2)
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Fatalf("created directories not removed: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("pre-existing directory removed: %v", err)
	}
	fileTarget := filepath.Join(root, "f")
	h, err := m.ensure(fileTarget, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fileTarget); err != nil || st.IsDir() {
		t.Fatalf("file target: %v %v", st, err)
	}
	m.release(h)
	for _, bad := range []string{"/", "/proc/x", "/sys", "/dev/shm", "relative/path"} {
		if _, err := m.ensure(bad, true); err == nil {
			t.Errorf("mount target %q accepted", bad)
		}
	}
}

func TestRemoveRecordedMountTargets(t *testing.T) {
	root := t.TempDir()
	emptyDir := filepath.Join(root, "a", "empty")
	fullDir := filepath.Join(root, "full")
	emptyFile := filepath.Join(root, "f")
	fullFile := filepath.Join(root, "g")
	for _, d := range []string{emptyDir, fullDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{emptyFile: "", fullFile: "data", filepath.Join(fullDir, "x"): "x"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	record := filepath.Join(root, "mounts")
	list := strings.Join([]string{filepath.Join(root, "a"), emptyDir, fullDir, emptyFile, fullFile, "/proc", "relative"}, "\n")
	if err := os.WriteFile(record, []byte(list+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed := RemoveRecordedMountTargets(record)
	if len(removed) != 3 {
		t.Errorf("removed %v, want the empty directory, its (then empty) parent and the empty file", removed)
	}
	for _, p := range []string{filepath.Join(root, "a"), emptyFile, record} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s not removed", p)
		}
	}
	for _, p := range []string{fullDir, fullFile} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
