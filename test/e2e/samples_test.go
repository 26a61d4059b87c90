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
	"path/filepath"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// config/samples on an installed Coxswain: the backends it routes to, a
// route for its dedicated Gateway, and checks that each Gateway (and the
// Ingress) reaches the right backend.

const samplesNS = "default" // config/samples' namespace

// sampleExtras are the samples' backends (HTTPRoute web -> api:8080 and
// frontend:80, Ingress shop -> shop:80) and an HTTPRoute for the samples'
// dedicated Gateway edge, which the samples leave without routes.
func sampleExtras() string {
	return echoBackendIn(samplesNS, "api", 8080, 1) + echoBackendIn(samplesNS, "frontend", 80, 1) + echoBackendIn(samplesNS, "shop", 80, 1) + `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: edge, namespace: default}
spec:
  parentRefs: [{name: edge}]
  hostnames: [edge.example.com]
  rules:
  - backendRefs: [{name: shop, port: 80}]
`
}

// installSamples applies the backends, then `kubectl apply -k
// config/samples` from repo, and waits for the backends and for every
// Gateway to be Programmed.
func (e *lcEnv) installSamples(t *testing.T, repo string) {
	t.Helper()
	e.apply(t, sampleExtras())
	e.kubectl(t, "apply", "--server-side", "-k", filepath.Join(repo, "config", "samples"))
	for _, app := range []string{"api", "frontend", "shop"} {
		if _, err := e.c.WaitForPodsReady(e.ctx, samplesNS, "app="+app, 1, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	gws := &gwv1.GatewayList{}
	if err := e.cl.List(e.ctx, gws, client.InNamespace(samplesNS)); err != nil {
		t.Fatal(err)
	}
	if len(gws.Items) < 2 {
		t.Fatalf("config/samples made %d Gateways, want the shared web and the dedicated edge", len(gws.Items))
	}
	for _, gw := range gws.Items {
		e.waitProgrammed(t, gw.Namespace, gw.Name, 3*time.Minute)
	}
}

// checkSampleTraffic sends requests through the shared Gateway web, the
// dedicated Gateway edge and the Ingress shop, and checks each reaches its
// backend; it returns web and edge.
func (e *lcEnv) checkSampleTraffic(t *testing.T) (web, edge *gwv1.Gateway) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	web = e.waitProgrammed(t, samplesNS, "web", time.Minute)
	edge = e.waitProgrammed(t, samplesNS, "edge", time.Minute)
	checks := []struct{ url, host, service string }{
		{gatewayURL(web, "http", 80) + "/", "www.example.com", "frontend"},
		{gatewayURL(web, "http", 80) + "/api/x", "www.example.com", "api"},
		{gatewayURL(edge, "http", 80) + "/", "edge.example.com", "shop"},
		{"http://" + e.ingressAddress(t, "shop") + "/", "shop.example.com", "shop"},
	}
	for _, ch := range checks {
		r := waitServes(t, hc, ch.url, ch.host, ch.service, time.Minute)
		t.Logf("Host %s %s -> %s (pod %s)", ch.host, ch.url, r.Service, r.Pod)
	}
	if _, err := lcGet(hc, gatewayURL(web, "http", 80)+"/", "unrouted.example.com"); err == nil {
		t.Errorf("Gateway web answered 200 for a host no route names")
	}
	return web, edge
}

// ingressAddress waits for the Ingress's published address.
func (e *lcEnv) ingressAddress(t *testing.T, name string) string {
	t.Helper()
	var addr string
	testkit.EventuallyExplained(t, time.Minute, func() string {
		ing := &networkingv1.Ingress{}
		if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: samplesNS, Name: name}, ing); err != nil {
			return err.Error()
		}
		if len(ing.Status.LoadBalancer.Ingress) == 0 || ing.Status.LoadBalancer.Ingress[0].IP == "" {
			return fmt.Sprintf("Ingress %s has no address", name)
		}
		addr = ing.Status.LoadBalancer.Ingress[0].IP
		return ""
	})
	return addr
}

// removeSamples deletes config/samples and the extras while the controller
// still runs (it releases its Gateways' finalizers and dedicated proxies)
// and waits until they are gone.
func (e *lcEnv) removeSamples(t *testing.T, repo string) {
	t.Helper()
	e.kubectl(t, "delete", "--wait=true", "--timeout=2m", "-k", filepath.Join(repo, "config", "samples"))
	if out, err := e.c.Kubectl(e.ctx, []byte(sampleExtras()), "delete", "--wait=true", "--timeout=2m", "-f", "-"); err != nil {
		t.Fatalf("deleting the samples' backends: %v\n%s", err, out)
	}
}
