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

// Package e2e runs the coxswain binary as users run it. These tests build
// the binary, start it against a real kube-apiserver (envtest) and talk to
// it only through its ports and the API server. End-to-end traffic tests on
// a local cluster arrive with the local-cluster harness.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// buildBinary compiles cmd/coxswain into a temporary directory, with
// cmd/coxswain-proxy beside it as in the image: its proxies run the data
// plane alone, as they do in a cluster.
func buildBinary(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "coxswain")
	for _, b := range []struct{ out, pkg string }{{bin, "./cmd/coxswain"}, {filepath.Join(dir, names.ProxyBinaryName), "./cmd/coxswain-proxy"}} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = testkit.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return bin
}

// process is a started coxswain binary.
type process struct {
	cmd    *exec.Cmd
	output *testkit.SyncBuffer
	done   chan error
}

func start(t testing.TB, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), output: &testkit.SyncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("coxswain %s output:\n%s", strings.Join(args, " "), p.output.String())
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
}

// startEnvtest starts a kube-apiserver and etcd for the test and writes a
// kubeconfig for an admin user, as a binary under test would get.
func startEnvtest(t testing.TB) (*rest.Config, string) {
	t.Helper()
	// A control plane of the test's own: the controller binary under test
	// takes the leader Lease and creates the CA Secret.
	api := testkit.StartEnvtest(t)
	cfg := api.Config(t)
	user, err := api.Environment().ControlPlane.AddUser(envtest.User{Name: "coxswain-e2e", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, path
}

// processExe is the executable p runs now ("" where /proc does not say).
func processExe(p *process) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.cmd.Process.Pid))
	if err != nil {
		return ""
	}
	return exe
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("version", func(t *testing.T) {
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "coxswain ") {
			t.Fatalf("coxswain version = %q, %v", out, err)
		}
	})

	t.Run("proxy refuses a dedicated mode without its Gateway", func(t *testing.T) {
		out, err := exec.Command(bin, "serve", "proxy", "--dedicated").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit = %v, want status 1", err)
		}
		if !strings.Contains(string(out), "--dedicated requires --gateway-name and --gateway-namespace") {
			t.Fatalf("output %q lacks the reason", out)
		}
	})

	t.Run("proxy without a snapshot source refuses to start", func(t *testing.T) {
		out, err := exec.Command(bin, "serve", "proxy", "--shared").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--discovery-endpoint or --snapshot-file") {
			t.Fatalf("err = %v, output %q; want a refusal naming both sources", err, out)
		}
	})

	t.Run("shared proxy serves health and metrics and is not ready without a snapshot", func(t *testing.T) {
		health, metrics := testkit.FreeAddr(t), testkit.FreeAddr(t)
		// The snapshot file does not exist yet: the proxy waits for it.
		snap := filepath.Join(t.TempDir(), "snapshot.yaml")
		p := start(t, bin, nil, "serve", "proxy", "--shared", "--health-probe-bind-address", health, "--metrics-bind-address", metrics,
			"--snapshot-file", snap, "--shutdown-drain-window", "3s")
		testkit.EventuallyExplained(t, 20*time.Second, func() string {
			if code, _, err := httpGet("http://" + health + "/healthz"); err != nil || code != http.StatusOK {
				return "healthz not 200"
			}
			return ""
		})
		if code, body, _ := httpGet("http://" + health + "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no routing snapshot") {
			t.Errorf("/readyz = %d %q, want 503: no routing snapshot", code, body)
		}
		if _, body, _ := httpGet("http://" + metrics + "/metrics"); !strings.Contains(body, `coxswain_proxy_info{gateway_name="",gateway_namespace="",mode="shared"} 1`) {
			t.Errorf("/metrics lacks coxswain_proxy_info for the shared mode")
		}

		// Once the file appears the proxy applies it, turns ready and serves.
		traffic := testkit.FreeAddr(t)
		_, port, _ := net.SplitHostPort(traffic)
		doc := "scope: {kind: SharedPool}\nlisteners:\n- name: test\n  port: " + port + "\n  protocol: HTTP\n" +
			"  virtualHosts:\n  - hostname: \"*\"\n    routes:\n    - id: hello\n      match: {}\n" +
			"      directResponse: {statusCode: 200, body: hello from the snapshot file}\n"
		if err := os.WriteFile(snap, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyExplained(t, 20*time.Second, func() string {
			if code, body, _ := httpGet("http://" + health + "/readyz"); code != http.StatusOK {
				return "readyz " + body
			}
			if code, body, err := httpGet("http://" + traffic + "/"); err != nil || code != http.StatusOK || !strings.Contains(body, "hello from the snapshot file") {
				return "traffic: " + body
			}
			return ""
		})
		// coxswain handed the proxy over to the data-plane binary beside
		// it: the same process (its pid, its signals) runs coxswain-proxy.
		if exe := processExe(p); exe != "" && filepath.Base(exe) != names.ProxyBinaryName {
			t.Errorf("serve proxy runs %s, want %s, the data-plane binary beside coxswain", exe, names.ProxyBinaryName)
		}
		if !strings.Contains(p.output.String(), "handing over to the data-plane binary") {
			t.Errorf("coxswain did not log its hand-over to %s", names.ProxyBinaryName)
		}

		// SIGTERM starts the drain: /readyz answers 503 at once, the
		// listener still serves, every response closes its connection, and
		// the process exits cleanly after the window.
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		testkit.EventuallyExplained(t, 2*time.Second, func() string {
			if code, body, _ := httpGet("http://" + health + "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
				return fmt.Sprintf("/readyz after SIGTERM = %d %q, want 503 shutting down", code, body)
			}
			return ""
		})
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + traffic + "/")
		if err != nil {
			t.Fatalf("traffic during the drain window: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !resp.Close {
			t.Errorf("traffic during the drain window: %d, Connection: close %v; want 200 closing the connection", resp.StatusCode, resp.Close)
		}
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no exit within 30s of SIGTERM")
		}
	})

	t.Run("proxy runs in coxswain itself when no data-plane binary is beside it", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "coxswain")
		if err := os.Link(bin, alone); err != nil {
			t.Fatal(err)
		}
		health, traffic := testkit.FreeAddr(t), testkit.FreeAddr(t)
		_, port, _ := net.SplitHostPort(traffic)
		snap := filepath.Join(t.TempDir(), "snapshot.yaml")
		doc := "scope: {kind: SharedPool}\nlisteners:\n- name: test\n  port: " + port + "\n  protocol: HTTP\n" +
			"  virtualHosts:\n  - hostname: \"*\"\n    routes:\n    - id: hello\n      match: {}\n" +
			"      directResponse: {statusCode: 200, body: served in coxswain}\n"
		if err := os.WriteFile(snap, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		p := start(t, alone, nil, "serve", "proxy", "--shared", "--health-probe-bind-address", health,
			"--metrics-bind-address", testkit.FreeAddr(t), "--snapshot-file", snap, "--shutdown-drain-window", "0s")
		testkit.EventuallyExplained(t, 20*time.Second, func() string {
			if code, body, err := httpGet("http://" + traffic + "/"); err != nil || code != http.StatusOK || !strings.Contains(body, "served in coxswain") {
				return fmt.Sprintf("traffic: %d %q %v", code, body, err)
			}
			return ""
		})
		if exe := processExe(p); exe != "" && exe != alone {
			t.Errorf("serve proxy runs %s, want %s itself", exe, alone)
		}
		p.stop(t)
	})

	t.Run("controller elects itself leader, serves health, metrics and opt-in pprof, and releases the Lease on SIGTERM", func(t *testing.T) {
		cfg, kubeconfigPath := startEnvtest(t)

		c, err := client.New(cfg, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "coxswain-system"}}); err != nil {
			t.Fatal(err)
		}

		health, metrics, pprof := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
		p := start(t, bin, []string{"POD_NAMESPACE=coxswain-system", "KUBECONFIG="},
			"serve", "controller", "--kubeconfig", kubeconfigPath,
			"--health-probe-bind-address", health, "--metrics-bind-address", metrics, "--pprof-bind-address", pprof,
			"--discovery-bind-address", testkit.FreeAddr(t), "--discovery-bootstrap-bind-address", testkit.FreeAddr(t),
			"--manage-shared-pool=false")

		testkit.EventuallyExplained(t, 60*time.Second, func() string {
			if code, _, err := httpGet("http://" + health + "/readyz"); err != nil || code != http.StatusOK {
				return "readyz not 200"
			}
			return ""
		})
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: "coxswain-system", Name: "coxswain-leader-lock"}
		testkit.EventuallyExplained(t, 60*time.Second, func() string {
			if err := c.Get(ctx, key, lease); err != nil {
				return "lease: " + err.Error()
			}
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
				return "lease has no holder"
			}
			return ""
		})
		testkit.EventuallyExplained(t, 30*time.Second, func() string {
			_, body, err := httpGet("http://" + metrics + "/metrics")
			if err != nil {
				return err.Error()
			}
			if !strings.Contains(body, `leader_election_master_status{name="coxswain-leader-lock"} 1`) {
				return "metrics do not report leadership of coxswain-leader-lock"
			}
			return ""
		})
		if code, body, err := httpGet("http://" + pprof + "/debug/pprof/goroutine?debug=1"); err != nil || code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
			t.Errorf("--pprof-bind-address: %d %v", code, err)
		}

		p.stop(t)
		if err := c.Get(ctx, key, lease); err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
			t.Errorf("lease still held by %q after shutdown; a standby would wait a full TTL", *lease.Spec.HolderIdentity)
		}
	})
}
