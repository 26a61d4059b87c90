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
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The samples (config/samples) live in namespace default: Gateway web
// (shared pool), Gateway edge (class coxswain-dedicated), HTTPRoute web and
// Ingress shop. The test adds the echo backends they name and a route on
// edge.
const (
	edgeDeploy  = "edge" // Gateway name; its Deployment is names.DedicatedName
	edgeClass   = "coxswain-dedicated"
	webHost     = "www.example.com"
	edgeHost    = "edge.example.com"
	paramsCRD   = "coxswaingatewayparameters.gateway.coxswain-labs.dev"
	helmRelease = "coxswain"
)

// deleteSamples removes the samples by kind (the CRDs of some may be gone
// already), and waits for the dedicated Gateway's proxies to go.
func (e *day2Env) deleteSamples(t *testing.T) {
	t.Helper()
	e.kubectl(t, "delete", "-n", samplesNS, "httproute,gateway", "--all", "--ignore-not-found", "--wait", "--timeout=2m")
	e.kubectl(t, "delete", "-n", samplesNS, "ingress", "--all", "--ignore-not-found", "--wait", "--timeout=2m")
	e.kubectl(t, "delete", "gatewayclass", "coxswain", edgeClass, "--ignore-not-found", "--wait", "--timeout=2m")
	e.kubectl(t, "delete", "ingressclass", "coxswain", "--ignore-not-found", "--wait", "--timeout=2m")
}

// waitAllRolledTo waits until the controller, the shared pool and the
// dedicated Gateway's proxies run image only: every rollout is complete
// and every old pod has drained and gone.
func (e *day2Env) waitAllRolledTo(t *testing.T, image string, timeout time.Duration) {
	t.Helper()
	for _, d := range []struct{ ns, name string }{
		{installNS, names.ControllerDeploymentName},
		{installNS, names.SharedPoolName},
		{samplesNS, names.DedicatedName(edgeDeploy, edgeClass)},
	} {
		e.waitRolledTo(t, d.ns, d.name, image, timeout)
	}
}

// duringLoad runs change while bounded loads go through the shared Gateway
// web and the dedicated Gateway edge, and asserts that no request failed
// and no Gateway left Programmed. It logs a "day2:" line with the figures.
func (e *day2Env) duringLoad(t *testing.T, what string, web, edge *gwv1.Gateway, change func()) {
	t.Helper()
	shared, dedicated := startLoad(hitlessLoad(gatewayAddr(web), webHost)), startLoad(hitlessLoad(gatewayAddr(edge), edgeHost))
	defer shared.finish()
	defer dedicated.finish()
	watch := e.watchProgrammed(web, edge)
	time.Sleep(time.Second)
	t0 := time.Now()
	change()
	took := time.Since(t0)
	time.Sleep(time.Second)
	_, lapses := watch.finish()
	s, d := shared.finish(), dedicated.finish()
	t.Logf("day2: %s took %s; shared Gateway: %s; dedicated Gateway: %s", what, took.Round(time.Millisecond), s, d)
	if s.Failed != 0 || d.Failed != 0 {
		t.Errorf("%s: %d of %d requests through the shared Gateway and %d of %d through the dedicated one failed; first failures:\n%s",
			what, s.Failed, s.Sent, d.Failed, d.Sent, strings.Join(append(s.Failures, d.Failures...), "\n"))
	}
	if len(lapses) > 0 {
		t.Errorf("%s: a Gateway left Programmed:\n%s", what, strings.Join(lapses, "\n"))
	}
}

// samplesStillValid: the samples a previous release stored are read back
// and pass the current CRDs' validation unchanged (a server-side dry run of
// the same files).
func (e *day2Env) samplesStillValid(t *testing.T, repo string) {
	t.Helper()
	dir := filepath.Join(repo, "config", "samples")
	e.kubectl(t, "get", "-k", dir)
	e.kubectl(t, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "-k", dir)
}

// coxswainUninstall runs `coxswain uninstall` (the binary) as the
// cluster's admin.
func (e *lcEnv) coxswainUninstall(t *testing.T, coxswain string) {
	t.Helper()
	cmd := exec.CommandContext(e.ctx, coxswain, "uninstall", "--kubeconfig", e.c.Kubeconfig, "--namespace", installNS, "--timeout", "3m")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("coxswain uninstall: %v\n%s", err, out)
	}
	t.Logf("coxswain uninstall:\n%s", out)
}

// assertClean checks that nothing Coxswain created is left: no object with
// its managed-by label, no pod running its image, no discovery CA or
// Lease, no namespace stuck terminating; and that its CRDs are kept or not
// as the path's policy says.
func (e *lcEnv) assertClean(t *testing.T, crdsKept bool) {
	t.Helper()
	managed := client.MatchingLabels{names.LabelManagedBy: names.ValueManagedBy}
	testkit.EventuallyExplained(t, 3*time.Minute, func() string {
		for _, l := range []client.ObjectList{&appsv1.DeploymentList{}, &autoscalingv2.HorizontalPodAutoscalerList{},
			&corev1.ServiceList{}, &corev1.ServiceAccountList{}, &corev1.ConfigMapList{}} {
			if err := e.cl.List(e.ctx, l, managed); err != nil {
				return err.Error()
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return err.Error()
			}
			for _, it := range items {
				o := it.(client.Object)
				return fmt.Sprintf("%T %s/%s is left", it, o.GetNamespace(), o.GetName())
			}
		}
		pods := &corev1.PodList{}
		if err := e.cl.List(e.ctx, pods); err != nil {
			return err.Error()
		}
		for _, p := range pods.Items {
			for _, c := range p.Spec.Containers {
				if strings.Contains(c.Image, "coxswain:") {
					return fmt.Sprintf("pod %s/%s (%s) is left", p.Namespace, p.Name, c.Image)
				}
			}
		}
		for _, o := range []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: names.CASecretName}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: installNS, Name: names.LeaseName}},
		} {
			if err := e.cl.Get(e.ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("%T %s/%s is left (err %v)", o, o.GetNamespace(), o.GetName(), err)
			}
		}
		nss := &corev1.NamespaceList{}
		if err := e.cl.List(e.ctx, nss); err != nil {
			return err.Error()
		}
		for _, ns := range nss.Items {
			if ns.DeletionTimestamp != nil {
				return fmt.Sprintf("namespace %s is stuck terminating: %+v", ns.Name, ns.Status.Conditions)
			}
		}
		return ""
	})
	out, err := e.c.Kubectl(e.ctx, nil, "get", "crd", paramsCRD, "--ignore-not-found", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get crd: %v\n%s", err, out)
	}
	if kept := strings.TrimSpace(out) != ""; kept != crdsKept {
		t.Errorf("CRD %s kept = %v, want %v (the path's documented CRD policy)", paramsCRD, kept, crdsKept)
	}
}

// helmCmd runs the helm CLI against the cluster, with its caches in the
// test's temporary directory.
func (e *day2Env) helmCmd(t *testing.T, args ...string) {
	t.Helper()
	home := filepath.Join(os.TempDir(), "coxswain-e2e-helm")
	cmd := exec.CommandContext(e.ctx, e.helm, append(args, "--kubeconfig", e.c.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// skewedProxy runs a dedicated Gateway whose proxies are pinned to image
// (CoxswainGatewayParameters spec.image) while the controller runs another
// release: Programmed means that proxy bootstrapped, took the controller's
// snapshot and acked it; the request checks it serves. The Gateway is
// deleted afterwards.
func (e *day2Env) skewedProxy(t *testing.T, image string) {
	t.Helper()
	e.apply(t, strings.NewReplacer("{{IMAGE}}", image).Replace(`
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: skew, namespace: default}
spec:
  image: {{IMAGE}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: skew, namespace: default}
spec:
  gatewayClassName: coxswain
  infrastructure:
    parametersRef: {group: gateway.coxswain-labs.dev, kind: CoxswainGatewayParameters, name: skew}
  listeners:
  - {name: http, protocol: HTTP, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: skew, namespace: default}
spec:
  parentRefs: [{name: skew}]
  hostnames: [skew.example.com]
  rules:
  - backendRefs: [{name: frontend, port: 80}]
`))
	gw := e.waitProgrammed(t, samplesNS, "skew", 3*time.Minute)
	testkit.EventuallyExplained(t, 2*time.Minute, func() string {
		return e.imageOfPods(samplesNS, client.MatchingLabels{names.LabelGatewayName: "skew"}, image)
	})
	waitServes(t, &http.Client{Timeout: 5 * time.Second}, gatewayURL(gw, "http", 80)+"/", "skew.example.com", "frontend", time.Minute)
	e.kubectl(t, "delete", "-n", samplesNS, "gateway/skew", "httproute/skew", "coxswaingatewayparameters/skew", "--wait", "--timeout=2m")
}
