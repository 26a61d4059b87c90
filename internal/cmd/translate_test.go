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
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const translateGateway = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: coxswain}
spec: {controllerName: coxswain-labs.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default, generation: 1}
spec:
  gatewayClassName: coxswain
  listeners: [{name: http, port: 80, protocol: HTTP}]
`

const translateApp = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default, generation: 1}
spec:
  parentRefs: [{name: web}]
  rules: [{backendRefs: [{name: app, port: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: default}
spec: {ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: app-1, namespace: default, labels: {kubernetes.io/service-name: app}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [{addresses: [10.0.0.1]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec: {selector: {matchLabels: {app: app}}, template: {metadata: {labels: {app: app}}}}
`

// runTranslate runs `coxswain translate` with args.
func runTranslate(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(append([]string{"translate"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// TestTranslateOffline: a directory of manifests (recursively, a user's
// Deployment among them) translates to the snapshot the controller would
// publish, exit 0; a route whose Service is missing is reported and exits
// non-zero, unless --fail-on-problems=false; standard input works too.
func TestTranslateOffline(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "apps"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"gateway.yaml": translateGateway, "apps/app.yml": translateApp, "README.md": "not yaml: ["} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, err := runTranslate(t, "", "-f", dir)
	if err != nil {
		t.Fatalf("translate: %v\n%s", err, errOut)
	}
	for _, want := range []string{"endpointSet: default/app:80", "address: 10.0.0.1", "id: httproute/default/app:0", "route is accepted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "DedicatedDeployments") || errOut != "" {
		t.Errorf("unexpected stderr %q", errOut)
	}

	broken := strings.Replace(translateApp, "name: app, port: 80", "name: missing, port: 80", 1)
	out, errOut, err = runTranslate(t, translateGateway+"---\n"+broken, "-f", "-", "-o", "json")
	if err == nil || !strings.Contains(errOut, "HTTPRoute default/app parent web: ResolvedRefs=False BackendNotFound") {
		t.Errorf("a missing Service: err %v, stderr %q; want a non-zero exit naming the route", err, errOut)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Errorf("-o json printed %q", out[:min(len(out), 40)])
	}
	if _, _, err := runTranslate(t, translateGateway+"---\n"+broken, "-f", "-", "--fail-on-problems=false"); err != nil {
		t.Errorf("--fail-on-problems=false: %v", err)
	}
	if _, _, err := runTranslate(t, ""); err == nil {
		t.Error("no -f: succeeded, want an error")
	}
}
