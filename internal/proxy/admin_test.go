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
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestAdminServesHealthReadinessAndMetrics(t *testing.T) {
	cfg := Config{Mode: ModeDedicated, GatewayName: "edge", GatewayNamespace: "team-a"}
	readiness := NewReadiness("no routing snapshot applied yet")
	healthLn, metricsLn := listen(t), listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewAdmin(cfg, readiness).Serve(ctx, healthLn, metricsLn) }()

	health := "http://" + healthLn.Addr().String()
	metrics := "http://" + metricsLn.Addr().String() + "/metrics"

	if code, _ := get(t, health+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	code, body := get(t, health+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no routing snapshot applied yet") {
		t.Errorf("/readyz before a snapshot = %d %q, want 503 with the reason", code, body)
	}
	_, body = get(t, metrics)
	for _, want := range []string{
		`coxswain_proxy_info{gateway_name="edge",gateway_namespace="team-a",mode="dedicated"} 1`,
		"coxswain_proxy_ready 0",
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _ := get(t, health+"/metrics"); code != http.StatusNotFound {
		t.Errorf("metrics must not be served on the health port, got %d", code)
	}

	readiness.Ready()
	if code, _ := get(t, health+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after Ready() = %d, want 200", code)
	}
	if _, body = get(t, metrics); !strings.Contains(body, "coxswain_proxy_ready 1") {
		t.Errorf("/metrics after Ready() lacks coxswain_proxy_ready 1")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", healthLn.Addr().String(), time.Second); err == nil {
		t.Error("health listener still accepts connections after shutdown")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"shared", Config{Mode: ModeShared}, ""},
		{"dedicated", Config{Mode: ModeDedicated, GatewayName: "edge", GatewayNamespace: "ns"}, ""},
		{"no mode", Config{}, "exactly one of --shared or --dedicated is required"},
		{"dedicated without gateway", Config{Mode: ModeDedicated, GatewayName: "edge"}, "--dedicated requires --gateway-name and --gateway-namespace"},
		{"shared with gateway", Config{Mode: ModeShared, GatewayName: "edge"}, "only valid with --dedicated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunReportsBusyAddress(t *testing.T) {
	busy := listen(t)
	defer func() { _ = busy.Close() }()
	err := Run(context.Background(), Config{Mode: ModeShared, HealthAddr: busy.Addr().String(), MetricsAddr: "127.0.0.1:0"}, NewReadiness("x"))
	if err == nil || !strings.Contains(err.Error(), "health listener") {
		t.Fatalf("Run on a busy address = %v, want a health listener error", err)
	}
}
