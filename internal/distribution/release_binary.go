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

package distribution

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/coxswain-go/coxswain/internal/version"
)

// buildBinary builds cmd/coxswain, and cmd/coxswain-proxy beside it, as
// `make build` does (static, trimmed), with the release version stamped
// in, and checks that each one's `--version` reports it.
func buildBinary(opts ReleaseOptions, a *ReleaseArtifacts, v string) error {
	commit := opts.Commit
	if commit == "" {
		commit = "unknown"
	}
	ldflags := append([]string{"-s", "-w"}, version.LinkerFlags(v, commit)...)
	for _, b := range []struct{ out, pkg string }{{a.Binary, "./cmd/coxswain"}, {a.ProxyBinary, "./cmd/coxswain-proxy"}} {
		cmd := exec.Command(opts.Go, "build", "-trimpath", "-ldflags", strings.Join(ldflags, " "), "-o", b.out, b.pkg) //nolint:gosec // G204: the go tool the release names; building is the point
		cmd.Dir = opts.Root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w: %s", b.pkg, err, strings.TrimSpace(string(out)))
		}
		got, err := BinaryVersion(b.out)
		if err != nil {
			return err
		}
		if got != v {
			return fmt.Errorf("%s --version reports %q, want %q", b.out, got, v)
		}
	}
	return nil
}

// BinaryVersion runs `bin --version` and returns the version it reports
// (the word after "coxswain").
func BinaryVersion(bin string) (string, error) {
	out, err := runTool("", bin, "--version")
	if err != nil {
		return "", err
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "coxswain" {
		return "", fmt.Errorf("%s --version printed %q, want \"coxswain <version> ...\"", bin, out)
	}
	return fields[1], nil
}
