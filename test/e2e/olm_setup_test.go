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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The OLM test's tools: the OLM operator binary and OLM's chart (CRDs and
// the operator's RBAC), both from
// the operator-lifecycle-manager module pinned in hack/olm (its own module:
// OLM pins other Kubernetes versions than Coxswain), and the released
// Coxswain the upgrade starts from (buildRelease).

const olmModule = "github.com/operator-framework/operator-lifecycle-manager"

// olmToolsFor returns the OLM operator and csvrbac ($OLM_BIN and
// $OLM_CSVRBAC, which make olm builds into bin/, else built here from
// hack/olm) and OLM's chart directory.
func olmToolsFor(t *testing.T) olmTools {
	t.Helper()
	tools := olmTools{olm: os.Getenv("OLM_BIN"), csvRBAC: os.Getenv("OLM_CSVRBAC"), chart: olmChart(t)}
	hack := filepath.Join(testkit.RepoRoot(), "hack", "olm")
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

// olmChart is deploy/chart of the pinned OLM module (fetched through the
// Go module proxy like any dependency): its crds/ and the templates the
// test renders.
func olmChart(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", olmModule)
	cmd.Dir = filepath.Join(testkit.RepoRoot(), "hack", "olm")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s (in hack/olm): %v", olmModule, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "deploy", "chart")
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

// olmImage is the OLM operator's image; the local kubelet runs it as the
// olm binary (Binaries.Images["olm"]).
const olmImage = "quay.io/operator-framework/olm:v0.38.0"

// olmDeployment is the OLM operator's Deployment as OLM's chart renders it
// without cert-manager or service-ca (deploy/chart/templates/
// 0000_50_olm_07-olm-operator.deployment.yaml): HTTP health and metrics on
// 8080, watching every namespace.
const olmDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: olm-operator, namespace: {{NS}}, labels: {app: olm-operator}}
spec:
  strategy: {type: Recreate}
  replicas: 1
  selector: {matchLabels: {app: olm-operator}}
  template:
    metadata: {labels: {app: olm-operator}}
    spec:
      serviceAccountName: olm-operator-serviceaccount
      containers:
      - name: olm-operator
        image: {{IMAGE}}
        command: [/bin/olm]
        args: [--namespace, $(OPERATOR_NAMESPACE)]
        ports: [{containerPort: 8080, name: metrics}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}}
        env:
        - {name: OPERATOR_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: OPERATOR_NAME, value: olm-operator}
`

// olmManifests renders OLM's namespace, its ServiceAccount and RBAC and
// the OLMConfig from the chart's templates, and the operator Deployment.
func olmManifests(t *testing.T, chart, namespace string) string {
	t.Helper()
	templates := filepath.Join(chart, "templates")
	values := strings.NewReplacer("{{ .Values.rbacApiVersion }}", "rbac.authorization.k8s.io", "{{ .Values.namespace }}", namespace)
	out := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + namespace + "}\n---\n"
	for _, f := range []string{"0000_50_olm_02-olm-operator.serviceaccount.yaml", "0000_50_olm_03-olmconfig.yaml"} {
		data, err := os.ReadFile(filepath.Join(templates, f))
		if err != nil {
			t.Fatal(err)
		}
		rendered := values.Replace(string(data))
		if strings.Contains(rendered, "{{") {
			t.Fatalf("OLM's %s has template values the test does not render", f)
		}
		out += rendered + "\n---\n"
	}
	return out + strings.NewReplacer("{{NS}}", namespace, "{{IMAGE}}", olmImage).Replace(olmDeployment)
}

// olmContext bounds the whole OLM test.
func olmContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 25*time.Minute)
}
