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

package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func writeSnapshot(t *testing.T, path string, s *snapshot.Snapshot) {
	t.Helper()
	b, err := snapshot.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func directSnapshot(port int32, body string) *snapshot.Snapshot {
	return &snapshot.Snapshot{Scope: snapshot.SharedPool(), Listeners: []snapshot.Listener{httpListener(port, snapshot.VirtualHost{Hostname: "*",
		Routes: []snapshot.Route{{ID: "r", DirectResponse: &snapshot.DirectResponse{StatusCode: 200, Body: body}}}})}}
}

// TestRunServesSnapshotFileAndReloads runs the whole proxy role (admin
// endpoints, data plane, file watcher): it is not ready until the file is
// applied, it reloads changes, keeps the last good snapshot when the file
// turns invalid, and drains on cancel.
func TestRunServesSnapshotFileAndReloads(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "snapshot.json")
	port := testkit.FreePortInt32(t)
	writeSnapshot(t, file, directSnapshot(port, "first"))
	health, metrics := testkit.FreePortInt32(t), testkit.FreePortInt32(t)
	cfg := Config{
		Mode:                 ModeShared,
		HealthAddr:           fmt.Sprintf("127.0.0.1:%d", health),
		MetricsAddr:          fmt.Sprintf("127.0.0.1:%d", metrics),
		DataPlane:            Options{BindHost: "127.0.0.1"},
		SnapshotFile:         file,
		SnapshotPollInterval: 20 * time.Millisecond,
		ShutdownTimeout:      5 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, NewReadiness("no routing snapshot applied yet")) }()
	c := client()
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	bodyIs := func(want string) func() bool {
		return func() bool {
			resp, err := c.Get(url)
			if err != nil {
				return false
			}
			defer func() { _ = resp.Body.Close() }()
			b := make([]byte, 64)
			n, _ := resp.Body.Read(b)
			return resp.StatusCode == 200 && strings.TrimSpace(string(b[:n])) == want
		}
	}
	testkit.EventuallyWithin(t, waitFor, "the first snapshot", bodyIs("first"))
	testkit.EventuallyWithin(t, waitFor, "readiness", func() bool {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == 200
	})
	writeSnapshot(t, file, directSnapshot(port, "second"))
	testkit.EventuallyWithin(t, waitFor, "the reloaded snapshot", bodyIs("second"))
	if err := os.WriteFile(file, []byte("scope: {kind: Nope}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // several polls
	if !bodyIs("second")() {
		t.Fatal("an invalid file replaced the last good snapshot")
	}
	writeSnapshot(t, file, directSnapshot(port, "third"))
	testkit.EventuallyWithin(t, waitFor, "recovery after the invalid file", bodyIs("third"))
	m := fetch(t, c, fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	for _, want := range []string{"coxswain_proxy_requests_total", `coxswain_proxy_snapshot_applies_total{result="success"} 3`, "coxswain_proxy_snapshot_info"} {
		if !strings.Contains(m.body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		_ = conn.Close()
		t.Error("traffic listener still open after Run returned")
	}
}

// TestWatchSnapshotFileMissing: a file that never appears is an error only
// when the watcher ends without having applied anything.
func TestWatchSnapshotFileMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := WatchSnapshotFile(ctx, filepath.Join(t.TempDir(), "absent.yaml"), 10*time.Millisecond, func(*snapshot.Snapshot) error { return nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("WatchSnapshotFile on a missing file = %v", err)
	}
}

// TestSampleSnapshotIsValid keeps config/samples/proxy-snapshot.yaml
// decodable and compilable.
func TestSampleSnapshotIsValid(t *testing.T) {
	s, err := LoadSnapshotFile("../../config/samples/proxy-snapshot.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile(s, nil, newMetrics(nil)); err != nil {
		t.Fatal(err)
	}
}

// TestReadinessDegraded: a degraded proxy stays ready, with its note on
// /readyz; Ready clears the note and NotReady wins over it.
func TestReadinessDegraded(t *testing.T) {
	r := NewReadiness("starting")
	h := NewAdmin(Config{Mode: ModeShared}, r).HealthHandler()
	probe := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	r.Ready()
	r.Degraded("disconnected from discovery; serving the last good snapshot")
	if code, body := probe(); code != 200 || !strings.Contains(body, "degraded: disconnected") {
		t.Errorf("degraded /readyz = %d %q", code, body)
	}
	r.Ready()
	if code, body := probe(); code != 200 || body != "ok" {
		t.Errorf("ready /readyz = %d %q", code, body)
	}
	r.Degraded("x")
	r.NotReady("shutting down")
	if code, body := probe(); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("not ready /readyz = %d %q", code, body)
	}
}
