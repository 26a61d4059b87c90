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
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
)

// installedImage is the controller image TestLocalCluster installs, as
// `make deploy IMG=...` would: no default of any install path names it,
// and the local kubelet runs it as bin/coxswain (last path element
// "coxswain").
const installedImage = "registry.example.test/platform/coxswain:e2e"

// testProxyImageIsTheInstalledImage: the controller was installed with
// installedImage; the shared pool and a dedicated Gateway whose parameters
// name no image run proxies of that image (Deployment template and running
// pods alike).
func testProxyImageIsTheInstalledImage(t *testing.T, e *lcEnv) {
	if msg := e.imageOfPods(installNS, client.MatchingLabels{"app.kubernetes.io/component": "controller"}, installedImage); msg != "" {
		t.Fatalf("controller: %s", msg)
	}
	if msg := e.deploymentImage(installNS, names.SharedPoolName, installedImage); msg != "" {
		t.Fatal(msg)
	}
	if msg := e.imageOfPods(installNS, client.MatchingLabels(provision.SharedPoolSelector()), installedImage); msg != "" {
		t.Fatalf("shared pool: %s", msg)
	}

	e.apply(t, `
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: no-image, namespace: e2e}
spec:
  replicas: 1
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e-installed-image}
spec:
  controllerName: coxswain-labs.dev/gateway-controller
  parametersRef: {group: gateway.coxswain-labs.dev, kind: CoxswainGatewayParameters, name: no-image, namespace: e2e}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: img, namespace: e2e}
spec:
  gatewayClassName: e2e-installed-image
  listeners:
  - {name: http, protocol: HTTP, port: 80}
`)
	// Programmed: a proxy of the Deployment ran, bootstrapped, bound and
	// acked, so the local kubelet ran the image it names.
	e.waitProgrammed(t, e2eNS, "img", 2*time.Minute)
	deploy := names.DedicatedName("img", "e2e-installed-image")
	if msg := e.deploymentImage(e2eNS, deploy, installedImage); msg != "" {
		t.Fatal(msg)
	}
	if msg := e.imageOfPods(e2eNS, client.MatchingLabels{names.LabelGatewayName: "img"}, installedImage); msg != "" {
		t.Fatalf("dedicated Gateway img: %s", msg)
	}
	// The garbage collector removes its proxies: the machine is small.
	if err := e.cl.Delete(e.ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: e2eNS, Name: "img"}}); err != nil {
		t.Errorf("deleting Gateway img: %v", err)
	}
}

// deploymentImage checks the proxy container image of a Deployment's pod
// template; "" when it is want.
func (e *lcEnv) deploymentImage(ns, name, want string) string {
	d := &appsv1.Deployment{}
	if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		return err.Error()
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == provision.ProxyContainerName {
			if c.Image != want {
				return fmt.Sprintf("Deployment %s/%s runs image %q, want %q", ns, name, c.Image, want)
			}
			return ""
		}
	}
	return fmt.Sprintf("Deployment %s/%s has no container %s", ns, name, provision.ProxyContainerName)
}

// imageOfPods checks that the selected pods exist, that every container of
// each runs want, and that at least one pod's process runs; "" when so.
func (e *lcEnv) imageOfPods(ns string, sel client.MatchingLabels, want string) string {
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(ns), sel); err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return fmt.Sprintf("no pods match %v in %s", sel, ns)
	}
	sandboxes := e.c.Sandboxes()
	running := 0
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Image != want {
				return fmt.Sprintf("pod %s/%s container %s runs %q, want %q", ns, p.Name, c.Name, c.Image, want)
			}
		}
		if len(sandboxes[p.UID].PIDs) > 0 {
			running++
		}
	}
	if running == 0 {
		return fmt.Sprintf("none of the %d pods matching %v runs a process", len(pods.Items), sel)
	}
	return ""
}
