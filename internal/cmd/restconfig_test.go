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

package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// --kubeconfig gets no client-side rate limit, like the in-cluster path:
// client-go's default 5 requests/s would throttle the status writer.
func TestRESTConfigFromKubeconfigHasNoClientRateLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := restConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != -1 || cfg.Host != "https://127.0.0.1:6443" {
		t.Fatalf("QPS %v host %q: want -1 (no client-side limit) and the file's server", cfg.QPS, cfg.Host)
	}
}
