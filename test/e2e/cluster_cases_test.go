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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// testWeightedBackends: an HTTPRoute splits 80/20 between two echo-basic
// Deployments; 500 requests through the Gateway's address land on those
// pods within 10 points of the weights.
func testWeightedBackends(t *testing.T, e *lcEnv) {
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: weighted, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [weighted.example.com]
  rules:
  - backendRefs:
    - {name: blue, port: 80, weight: 80}
    - {name: green, port: 80, weight: 20}
`)
	e.waitRouteAccepted(t, e2eNS, "weighted", time.Minute)
	gw := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	url := gatewayURL(gw, "http", 80) + "/"
	hc := &http.Client{Timeout: 5 * time.Second}
	pods := map[string]map[string]bool{"blue": e.podNames(t, "blue"), "green": e.podNames(t, "green")}

	// Propagation: wait until both backends have answered at least once.
	seen := map[string]bool{}
	testkit.EventuallyExplained(t, time.Minute, func() string {
		r, err := lcGet(hc, url, "weighted.example.com")
		if err != nil {
			return err.Error()
		}
		seen[r.Service] = true
		if !seen["blue"] || !seen["green"] {
			return fmt.Sprintf("backends seen so far: %v", seen)
		}
		return ""
	})

	const n = 500
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		r, err := lcGet(hc, url, "weighted.example.com")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !pods[r.Service][r.Pod] {
			t.Fatalf("request %d answered by pod %q of service %q, not a pod of that Deployment (%v)", i, r.Pod, r.Service, pods)
		}
		if r.Namespace != e2eNS {
			t.Fatalf("request %d answered from namespace %q", i, r.Namespace)
		}
		counts[r.Service]++
	}
	blue := 100 * float64(counts["blue"]) / n
	t.Logf("%d requests: blue %d, green %d (blue %.1f%%, want 80±10)", n, counts["blue"], counts["green"], blue)
	if blue < 70 || blue > 90 || counts["blue"]+counts["green"] != n {
		t.Fatalf("weights 80/20: got blue %d, green %d of %d", counts["blue"], counts["green"], n)
	}
}

// testIngress: an Ingress of class coxswain is served by the shared proxy
// pool's public Service (coxswain-shared-proxy, a LoadBalancer) on :80.
func testIngress(t *testing.T, e *lcEnv) {
	e.apply(t, `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: e2e}
spec:
  ingressClassName: coxswain
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: green, port: {number: 80}}}
`)
	var vip string
	testkit.EventuallyExplained(t, time.Minute, func() string {
		if vip = e.c.LoadBalancerIP(installNS, "coxswain-shared-proxy"); vip == "" {
			return "Service coxswain-system/coxswain-shared-proxy has no load-balancer VIP yet"
		}
		return ""
	})
	hc := &http.Client{Timeout: 5 * time.Second}
	url := "http://" + net.JoinHostPort(vip, "80") + "/shop/cart"
	r := waitServes(t, hc, url, "shop.example.com", "green", time.Minute)
	if !e.podNames(t, "green")[r.Pod] {
		t.Fatalf("Ingress answered by pod %q, not a green pod", r.Pod)
	}
	// The Ingress publishes the address it is served at.
	testkit.EventuallyExplained(t, time.Minute, func() string {
		ing := &networkingv1.Ingress{}
		if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: e2eNS, Name: "shop"}, ing); err != nil {
			return err.Error()
		}
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			if lb.IP == vip {
				return ""
			}
		}
		return fmt.Sprintf("Ingress status.loadBalancer %+v does not name VIP %s", ing.Status.LoadBalancer.Ingress, vip)
	})
	// A host the Ingress does not name is not routed.
	if _, err := lcGet(hc, url, "other.example.com"); err == nil {
		t.Fatal("a host no Ingress names was routed")
	}
}

// tlsSecrets creates a CA and two kubernetes.io/tls Secrets, cert-a
// (a.example.com) and cert-b (b.example.com), in e2e.
func (e *lcEnv) tlsSecrets(t testing.TB) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coxswain e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	e.caPool = x509.NewCertPool()
	e.caPool.AddCert(ca)
	for i, host := range []string{"a.example.com", "b.example.com"} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "cert-" + host[:1], Namespace: e2eNS},
			Type:       corev1.SecretTypeTLS,
			Data: map[string][]byte{
				corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
				corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
			},
		}
		if err := e.cl.Create(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// testTLSSNI: one HTTPS listener with two certificateRefs presents the
// certificate matching each SNI name and routes the request.
func testTLSSNI(t *testing.T, e *lcEnv) {
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tls-a, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: https}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: blue, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tls-b, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: https}]
  hostnames: [b.example.com]
  rules: [{backendRefs: [{name: green, port: 80}]}]
`)
	e.waitRouteAccepted(t, e2eNS, "tls-a", time.Minute)
	e.waitRouteAccepted(t, e2eNS, "tls-b", time.Minute)
	gw := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	addr := net.JoinHostPort(gw.Status.Addresses[0].Value, "443")
	for _, tc := range []struct{ host, service string }{{"a.example.com", "blue"}, {"b.example.com", "green"}} {
		var served *x509.Certificate
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{ServerName: tc.host, RootCAs: e.caPool, MinVersion: tls.VersionTLS12,
				VerifyConnection: func(cs tls.ConnectionState) error {
					served = cs.PeerCertificates[0]
					return nil
				}},
		}}
		r := waitServes(t, hc, "https://"+addr+"/", tc.host, tc.service, time.Minute)
		if served == nil || !slices.Equal(served.DNSNames, []string{tc.host}) {
			t.Fatalf("SNI %s: served certificate %v", tc.host, served)
		}
		t.Logf("SNI %s: certificate %s, answered by %s/%s", tc.host, served.Subject.CommonName, r.Service, r.Pod)
		hc.CloseIdleConnections()
	}
}

// testDedicatedProgrammed: a Gateway of a class with CoxswainGatewayParameters
// gets its own Deployment. While its proxies cannot run (an image the
// kubelet cannot run), the Gateway is Accepted but Programmed=False/Pending;
// once the parameters name the coxswain image, the Deployment's pods run
// via the local kubelet, bind, ack, the Gateway turns Programmed and its
// address serves.
func testDedicatedProgrammed(t *testing.T, e *lcEnv) {
	e.apply(t, `
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: dedicated, namespace: e2e}
spec:
  image: registry.example.com/e2e/not-runnable:v1
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e-dedicated}
spec:
  controllerName: coxswain-labs.dev/gateway-controller
  parametersRef: {group: gateway.coxswain-labs.dev, kind: CoxswainGatewayParameters, name: dedicated, namespace: e2e}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: e2e}
spec:
  gatewayClassName: e2e-dedicated
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: edge, namespace: e2e}
spec:
  parentRefs: [{name: edge}]
  hostnames: [edge.example.com]
  rules:
  - backendRefs: [{name: blue, port: 80}]
`)
	deploy := names.DedicatedName("edge", "e2e-dedicated")
	// The Deployment exists, its pod cannot run, and the Gateway waits.
	testkit.EventuallyExplained(t, time.Minute, func() string {
		pods := &corev1.PodList{}
		if err := e.cl.List(e.ctx, pods, client.InNamespace(e2eNS), client.MatchingLabels{names.LabelGatewayName: "edge"}); err != nil {
			return err.Error()
		}
		if len(pods.Items) == 0 {
			return "no pod of the dedicated Deployment " + deploy + " yet"
		}
		gw, err := e.gateway(e2eNS, "edge")
		if err != nil {
			return err.Error()
		}
		acc := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionAccepted))
		if acc == nil || acc.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Gateway edge not Accepted yet: %+v", acc)
		}
		return ""
	})
	// Hold: for 5 s the Gateway must never be Programmed.
	var last *metav1.Condition
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		gw, err := e.gateway(e2eNS, "edge")
		if err != nil {
			t.Fatal(err)
		}
		last = meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if last != nil && last.Status == metav1.ConditionTrue {
			t.Fatalf("Gateway edge Programmed while no proxy runs: %+v", last)
		}
	}
	if last == nil || last.Status != metav1.ConditionFalse || last.Reason != string(gwv1.GatewayReasonPending) {
		t.Fatalf("Gateway edge without running proxies: want Programmed=False/Pending, got %+v", last)
	}
	t.Logf("without proxies: Programmed=%s/%s %q", last.Status, last.Reason, last.Message)

	// Let the proxies run: the coxswain image.
	e.apply(t, `
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: dedicated, namespace: e2e}
spec:
  image: coxswain:latest
`)
	t0 := time.Now()
	gw := e.waitProgrammed(t, e2eNS, "edge", 2*time.Minute)
	t.Logf("Programmed %s after the parameters named a runnable image", time.Since(t0).Round(time.Millisecond))
	// Programmed must not precede a running proxy of that Deployment: a
	// pod with the coxswain image whose process the kubelet runs (its pod
	// status may turn Running a moment later, after the readiness probe).
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(e2eNS), client.MatchingLabels{names.LabelGatewayName: "edge"}); err != nil {
		t.Fatal(err)
	}
	running := 0
	sandboxes := e.c.Sandboxes()
	for _, p := range pods.Items {
		if p.Spec.Containers[0].Image == "coxswain:latest" && len(sandboxes[p.UID].PIDs) > 0 {
			running++
		}
	}
	if running == 0 {
		t.Fatalf("Gateway edge Programmed but no pod of %s runs a coxswain process (%d pods)", deploy, len(pods.Items))
	}
	testkit.EventuallyExplained(t, time.Minute, func() string { return e.deploymentReady(e2eNS, deploy, 1) })
	hc := &http.Client{Timeout: 5 * time.Second}
	r := waitServes(t, hc, gatewayURL(gw, "http", 8080)+"/", "edge.example.com", "blue", time.Minute)
	t.Logf("dedicated Gateway edge at %s served by %s", gw.Status.Addresses[0].Value, r.Pod)
}

// testSharedProgrammedAfterBindAndAck: every shared proxy process is
// stopped (SIGSTOP: connected, but neither binding nor acking); a new
// Gateway of the shared class is Accepted but stays Programmed=False/Pending;
// once the proxies continue (SIGCONT) it turns Programmed and serves.
func testSharedProgrammedAfterBindAndAck(t *testing.T, e *lcEnv) {
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(installNS), client.MatchingLabels(provision.SharedPoolSelector())); err != nil {
		t.Fatal(err)
	}
	sandboxes := e.c.Sandboxes()
	var pids []int
	for _, p := range pods.Items {
		pids = append(pids, sandboxes[p.UID].PIDs...)
	}
	if len(pids) == 0 {
		t.Fatalf("no shared proxy process found (%d pods)", len(pods.Items))
	}
	signal := func(sig syscall.Signal) {
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil {
				t.Errorf("kill -%d %d: %v", sig, pid, err)
			}
		}
	}
	signal(syscall.SIGSTOP)
	continued := false
	defer func() {
		if !continued {
			signal(syscall.SIGCONT)
		}
	}()
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: late, namespace: e2e}
spec:
  gatewayClassName: coxswain
  listeners:
  - {name: http, protocol: HTTP, port: 80}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: late, namespace: e2e}
spec:
  parentRefs: [{name: late}]
  hostnames: [late.example.com]
  rules:
  - backendRefs: [{name: green, port: 80}]
`)
	testkit.EventuallyExplained(t, time.Minute, func() string {
		gw, err := e.gateway(e2eNS, "late")
		if err != nil {
			return err.Error()
		}
		acc := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionAccepted))
		if acc == nil || acc.Status != metav1.ConditionTrue {
			return fmt.Sprintf("Gateway late not Accepted yet: %+v", acc)
		}
		return ""
	})
	var last *metav1.Condition
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		gw, err := e.gateway(e2eNS, "late")
		if err != nil {
			t.Fatal(err)
		}
		last = meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		if last != nil && last.Status == metav1.ConditionTrue {
			t.Fatalf("Gateway late Programmed while every shared proxy is stopped: %+v", last)
		}
	}
	if last == nil || last.Status != metav1.ConditionFalse || last.Reason != string(gwv1.GatewayReasonPending) {
		t.Fatalf("Gateway late with stopped proxies: want Programmed=False/Pending, got %+v", last)
	}
	t.Logf("proxies stopped: Programmed=%s/%s %q", last.Status, last.Reason, last.Message)
	signal(syscall.SIGCONT)
	continued = true
	t0 := time.Now()
	gw := e.waitProgrammed(t, e2eNS, "late", 2*time.Minute)
	t.Logf("Programmed %s after the proxies continued", time.Since(t0).Round(time.Millisecond))
	waitServes(t, &http.Client{Timeout: 5 * time.Second}, gatewayURL(gw, "http", 80)+"/", "late.example.com", "green", time.Minute)
}

// testControllerKilled: with two controller replicas, the leader is
// SIGKILLed (and killed again whenever the local kubelet restarts it) under
// a bounded request loop. No request fails, the proxies serve while no
// controller leads, the other replica takes the Lease and status updates
// resume.
func testControllerKilled(t *testing.T, e *lcEnv) {
	if out, err := e.c.Kubectl(e.ctx, nil, "scale", "-n", installNS, "deployment/coxswain-controller", "--replicas=2"); err != nil {
		t.Fatalf("scaling the controller: %v\n%s", err, out)
	}
	if _, err := e.c.WaitForPodsReady(e.ctx, installNS, controllerLb, 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// The leader: the Lease holder labels its own pod.
	var leader corev1.Pod
	var holder string
	testkit.EventuallyExplained(t, time.Minute, func() string {
		pods := &corev1.PodList{}
		if err := e.cl.List(e.ctx, pods, client.InNamespace(installNS), client.MatchingLabels{
			"app.kubernetes.io/component": "controller", names.LeaderLabel: "true"}); err != nil {
			return err.Error()
		}
		if len(pods.Items) != 1 {
			return fmt.Sprintf("%d controller pods labelled leader", len(pods.Items))
		}
		leader = pods.Items[0]
		holder = e.leaseHolder()
		if holder == "" {
			return "Lease " + names.LeaseName + " has no holder"
		}
		return ""
	})
	gw := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	url := gatewayURL(gw, "http", 80) + "/"
	testkit.EventuallyExplained(t, time.Minute, func() string {
		if _, err := lcGet(&http.Client{Timeout: 5 * time.Second}, url, "weighted.example.com"); err != nil {
			return err.Error()
		}
		return ""
	})

	// The bounded request loop.
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hc := &http.Client{Timeout: 5 * time.Second}
		deadline := time.Now().Add(3 * time.Minute)
		for i := 0; i < 200000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			sent.Add(1)
			if _, err := lcGet(hc, url, "weighted.example.com"); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// Kill the leader, and keep it down until the other replica leads.
	killed := 0
	killedAt := time.Now()
	var newLeader string
	deadline := time.Now().Add(90 * time.Second)
	for {
		for _, pid := range e.c.Sandboxes()[leader.UID].PIDs {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
		if h := e.leaseHolder(); h != "" && h != holder {
			pods := &corev1.PodList{}
			if err := e.cl.List(e.ctx, pods, client.InNamespace(installNS), client.MatchingLabels{
				"app.kubernetes.io/component": "controller", names.LeaderLabel: "true"}); err == nil &&
				len(pods.Items) > 0 {
				for _, p := range pods.Items {
					if p.UID != leader.UID {
						newLeader = p.Name
					}
				}
			}
			if newLeader != "" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL of leader %s (%d kills), no other replica took Lease %s (holder %q)", leader.Name, killed, names.LeaseName, e.leaseHolder())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if killed == 0 {
		t.Fatalf("no process of leader pod %s was killed", leader.Name)
	}
	takeover := time.Since(killedAt)
	servedWhileDown := sent.Load()
	t.Logf("leader %s SIGKILLed (%d kills); %s took the Lease after %s; %d requests sent meanwhile, %d failed",
		leader.Name, killed, newLeader, takeover.Round(time.Millisecond), servedWhileDown, failed.Load())

	// Status updates resume: a new HTTPRoute gets Accepted and serves.
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: after-failover, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [failover.example.com]
  rules:
  - backendRefs: [{name: green, port: 80}]
`)
	e.waitRouteAccepted(t, e2eNS, "after-failover", time.Minute)
	waitServes(t, &http.Client{Timeout: 5 * time.Second}, url, "failover.example.com", "green", time.Minute)

	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close
	t.Logf("request loop: %d sent, %d failed", sent.Load(), failed.Load())
	if servedWhileDown < 100 {
		t.Fatalf("only %d requests were sent while the controller was down; the loop did not run", servedWhileDown)
	}
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d requests failed across the controller kill; first: %v", f, sent.Load(), firstErr.Load())
	}
}

// leaseHolder is the holder identity of the controller's Lease ("" if none).
func (e *lcEnv) leaseHolder() string {
	l := &coordinationv1.Lease{}
	if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: installNS, Name: names.LeaseName}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
