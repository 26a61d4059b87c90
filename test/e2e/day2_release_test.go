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

package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// buildRelease extracts release version's tree (git archive of its
// commit: nothing is registered in the repository) and builds its coxswain
// binary. It returns the tree (its config/, charts/ and bundle/ are what
// that release shipped) and the binary; both go when the test ends.
func buildRelease(t *testing.T, version string) (repo, binary string) {
	t.Helper()
	root := testkit.RepoRoot()
	commit := releaseCommit(t, root, version)
	repo = filepath.Join(t.TempDir(), "coxswain-"+version)
	if err := os.MkdirAll(repo, 0o750); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", repo)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	var archiveErr strings.Builder
	archive.Stderr = &archiveErr
	if err := extract.Start(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s (release %s): %v\n%s", commit, version, err, archiveErr.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("extracting %s: %v", commit, err)
	}
	binary = filepath.Join(t.TempDir(), "coxswain-"+version)
	goBuild(t, repo, binary, "./cmd/coxswain")
	return repo, binary
}

// releaseCommit is the commit of version as hack/release/releases.txt
// records it ("<version> <commit>" lines), which a clone has even when
// tags were not fetched; the commit itself must be in the clone.
func releaseCommit(t *testing.T, root, version string) string {
	t.Helper()
	path := filepath.Join(root, "hack", "release", "releases.txt")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || fields[0] != version {
			continue
		}
		if out, err := git(root, "cat-file", "-e", fields[1]+"^{commit}"); err != nil {
			t.Fatalf("release %s is commit %s, which this clone lacks (a shallow clone? git fetch --unshallow): %v\n%s", version, fields[1], err, out)
		}
		return fields[1]
	}
	t.Fatalf("%s names no release %s", path, version)
	return ""
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
