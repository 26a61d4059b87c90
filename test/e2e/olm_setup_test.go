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
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testenv"
)

// The OLM test's tools: the OLM operator binary and OLM's CRDs, both from
// the operator-lifecycle-manager module pinned in hack/olm (its own module:
// OLM pins other Kubernetes versions than Coxswain), and the released
// Coxswain the upgrade starts from.

// releaseCommit is the commit tagged v0.1.0, the release the upgrade case
// installs first. A commit rather than the tag: a clone without tags still
// has it.
const releaseCommit = "f85f1ac36f0309983a9064d45bc625130393b64c"

const olmModule = "github.com/operator-framework/operator-lifecycle-manager"

// olmToolsFor returns the OLM operator and csvrbac ($OLM_BIN and
// $OLM_CSVRBAC, which make olm builds into bin/, else built here from
// hack/olm) and OLM's CRD directory.
func olmToolsFor(t *testing.T) olmTools {
	t.Helper()
	tools := olmTools{olm: os.Getenv("OLM_BIN"), csvRBAC: os.Getenv("OLM_CSVRBAC"), crds: olmCRDs(t)}
	hack := filepath.Join(testenv.RepoRoot(), "hack", "olm")
	if tools.olm == "" {
		tools.olm = filepath.Join(t.TempDir(), "olm")
		goBuild(t, hack, tools.olm, olmModule+"/cmd/olm")
	}
	if tools.csvRBAC == "" {
		tools.csvRBAC = filepath.Join(t.TempDir(), "csvrbac")
		goBuild(t, hack, tools.csvRBAC, "./csvrbac")
	}
	return tools
}

// olmCRDs is $OLM_CRDS, else deploy/chart/crds of the pinned OLM module
// (fetched through the Go module proxy like any dependency).
func olmCRDs(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("OLM_CRDS"); d != "" {
		return d
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", olmModule)
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "hack", "olm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s (in hack/olm): %v", olmModule, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "deploy", "chart", "crds")
}

// releaseTree extracts the v0.1.0 tree (git archive: no worktree is
// registered in the repository) and builds its coxswain; it returns the
// tree (its bundle/ and config/samples are what that release shipped) and
// the binary.
func releaseTree(t *testing.T) (dir, binary string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "v0.1.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("git", "-C", testenv.RepoRoot(), "archive", "--format=tar", releaseCommit)
	extract := exec.Command("tar", "-x", "-C", dir)
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
		t.Fatalf("git archive %s: %v\n%s", releaseCommit, err, archiveErr.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("extracting %s: %v", releaseCommit, err)
	}
	binary = filepath.Join(t.TempDir(), "coxswain-v0.1.0")
	goBuild(t, dir, binary, "./cmd/coxswain")
	return dir, binary
}

// goBuild builds pkg in dir into out, statically, as the Makefile does.
func goBuild(t *testing.T, dir, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s (in %s): %v\n%s", pkg, dir, err, b)
	}
}

// olmProcess is the OLM operator running on the host.
type olmProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startOLM runs the OLM operator as a host process with the cluster's admin
// kubeconfig, watching every namespace, its output in logFile. It dies
// with the test process (Pdeathsig), so a crashed run leaves no operator
// behind. CI is removed from its environment: with CI set OLM wraps its
// client in a development-only check that panics on unlabeled objects.
func startOLM(t *testing.T, binary, kubeconfig, namespace, logFile string) *olmProcess {
	t.Helper()
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--namespace", namespace, "--writeStatusName", "", "--interval", "1m")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(withoutEnv(os.Environ(), "CI", "KUBECONFIG"), "KUBECONFIG="+kubeconfig)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OLM operator: %v", err)
	}
	p := &olmProcess{cmd: cmd, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		_ = log.Close()
	}()
	return p
}

// stop sends SIGTERM and waits up to 10 s for the operator to exit, then
// kills it.
func (p *olmProcess) stop() error {
	select {
	case err := <-p.done:
		return errors.Join(errors.New("the OLM operator had already exited"), err)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return nil
	}
}

// running reports an error if the operator exited.
func (p *olmProcess) running() error {
	select {
	case err := <-p.done:
		p.done <- err
		return errors.Join(errors.New("the OLM operator exited"), err)
	default:
		return nil
	}
}

// withoutEnv drops the named variables from env.
func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// olmContext bounds the whole OLM test.
func olmContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 25*time.Minute)
}
