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
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The hitless rollout cases: a bounded load of 8 keep-alive connections runs
// through the replacement or removal of proxy pods and must see 0 failed
// requests. Each proxy pod is terminated as the renderer configures it: a
// 2 s preStop sleep, then SIGTERM, a 5 s drain (503 on /readyz, every
// response with Connection: close), then the listeners close.

// hitlessLoad is the load every case runs: 8 connections, one request per
// connection every 2 ms at most, bounded to 3 minutes.
func hitlessLoad(addr, host string) loadConfig {
	return loadConfig{addr: addr, host: host, conns: 8, pace: 2 * time.Millisecond,
		maxDuration: 3 * time.Minute, maxRequestsPerConn: 200000}
}

// proxyPods lists the UIDs of the pods matching selector in ns.
func (e *lcEnv) proxyPods(t testing.TB, ns string, selector map[string]string) map[types.UID]string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		t.Fatal(err)
	}
	out := map[types.UID]string{}
	for _, p := range pods.Items {
		out[p.UID] = p.Name
	}
	return out
}

// waitPodsGone waits until none of pods exists any more: each has run its
// whole termination (preStop sleep, drain, exit).
func (e *lcEnv) waitPodsGone(t testing.TB, ns string, selector map[string]string, pods map[types.UID]string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		var left []string
		for uid, name := range e.proxyPods(t, ns, selector) {
			if _, ok := pods[uid]; ok {
				left = append(left, name)
			}
		}
		if len(left) > 0 {
			return fmt.Sprintf("pods still terminating: %v", left)
		}
		return ""
	})
}

// kubectl runs kubectl against the cluster and fails the test on error.
func (e *lcEnv) kubectl(t testing.TB, args ...string) {
	t.Helper()
	if out, err := e.c.Kubectl(e.ctx, nil, args...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// underLoad starts the load on addr, checks it is served, runs disrupt,
// keeps the load running one more second and asserts no request failed.
func underLoad(t *testing.T, addr, host string, disrupt func()) {
	t.Helper()
	load := startLoad(hitlessLoad(addr, host))
	defer load.finish()
	time.Sleep(time.Second)
	if load.sent.Load() == 0 || load.failed.Load() != 0 {
		r := load.finish()
		t.Fatalf("the load is not served before the disruption: %s; first failures: %v", r, r.Failures)
	}
	disrupt()
	time.Sleep(time.Second)
	r := load.finish()
	t.Logf("load: %s", r)
	if r.Failed != 0 {
		t.Fatalf("%d of %d requests failed; first failures:\n%s", r.Failed, r.Sent, strings.Join(r.Failures, "\n"))
	}
	if r.Redials == 0 {
		t.Fatalf("no response closed its connection: no load connection went through a draining proxy (%s)", r)
	}
}

// hitlessRoute routes hitless.example.com on Gateway web to blue and returns
// web's port-80 address once it serves.
func (e *lcEnv) hitlessRoute(t *testing.T) string {
	t.Helper()
	e.apply(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: hitless, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [hitless.example.com]
  rules:
  - backendRefs: [{name: blue, port: 80}]
`)
	e.waitRouteAccepted(t, e2eNS, "hitless", time.Minute)
	gw := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	waitServes(t, &http.Client{Timeout: 5 * time.Second}, gatewayURL(gw, "http", 80)+"/", "hitless.example.com", "blue", time.Minute)
	return net.JoinHostPort(gw.Status.Addresses[0].Value, "80")
}

// testHitlessSharedRollout: `kubectl rollout restart` of the shared pool
// replaces both of its pods, one by one, under load.
func testHitlessSharedRollout(t *testing.T, e *lcEnv) {
	addr := e.hitlessRoute(t)
	testkit.EventuallyExplained(t, 2*time.Minute, func() string { return e.deploymentReady(installNS, names.SharedPoolName, 2) })
	old := e.proxyPods(t, installNS, provision.SharedPoolSelector())
	underLoad(t, addr, "hitless.example.com", func() {
		e.kubectl(t, "rollout", "restart", "-n", installNS, "deployment/"+names.SharedPoolName)
		e.kubectl(t, "rollout", "status", "-n", installNS, "deployment/"+names.SharedPoolName, "--timeout=3m")
		e.waitPodsGone(t, installNS, provision.SharedPoolSelector(), old, 2*time.Minute)
	})
}

// testHitlessDedicatedRollout: `kubectl rollout restart` of the dedicated
// Gateway edge's Deployment (one replica: surge first, then the old pod
// drains) under load.
func testHitlessDedicatedRollout(t *testing.T, e *lcEnv) {
	deploy := names.DedicatedName("edge", "e2e-dedicated")
	selector := map[string]string{names.LabelGatewayName: "edge"}
	gw := e.waitProgrammed(t, e2eNS, "edge", time.Minute)
	testkit.EventuallyExplained(t, time.Minute, func() string { return e.deploymentReady(e2eNS, deploy, 1) })
	waitServes(t, &http.Client{Timeout: 5 * time.Second}, gatewayURL(gw, "http", 8080)+"/", "edge.example.com", "blue", time.Minute)
	old := e.proxyPods(t, e2eNS, selector)
	underLoad(t, net.JoinHostPort(gw.Status.Addresses[0].Value, "8080"), "edge.example.com", func() {
		e.kubectl(t, "rollout", "restart", "-n", e2eNS, "deployment/"+deploy)
		e.kubectl(t, "rollout", "status", "-n", e2eNS, "deployment/"+deploy, "--timeout=3m")
		e.waitPodsGone(t, e2eNS, selector, old, 2*time.Minute)
	})
}

// testHitlessSharedScaleDown: the shared pool scaled from 2 replicas to 1
// under load; the removed pod drains. The pool is then scaled back to 2
// (the controller also re-applies its replica count on its next sync).
func testHitlessSharedScaleDown(t *testing.T, e *lcEnv) {
	addr := e.hitlessRoute(t)
	testkit.EventuallyExplained(t, 2*time.Minute, func() string { return e.deploymentReady(installNS, names.SharedPoolName, 2) })
	before := e.proxyPods(t, installNS, provision.SharedPoolSelector())
	underLoad(t, addr, "hitless.example.com", func() {
		e.kubectl(t, "scale", "-n", installNS, "deployment/"+names.SharedPoolName, "--replicas=1")
		// One of the two pods is deleted and drains.
		var removed map[types.UID]string
		testkit.EventuallyExplained(t, time.Minute, func() string {
			pods := &corev1.PodList{}
			if err := e.cl.List(e.ctx, pods, client.InNamespace(installNS), client.MatchingLabels(provision.SharedPoolSelector())); err != nil {
				return err.Error()
			}
			for _, p := range pods.Items {
				if _, ok := before[p.UID]; ok && p.DeletionTimestamp != nil {
					removed = map[types.UID]string{p.UID: p.Name}
					return ""
				}
			}
			return "no shared proxy pod is terminating yet"
		})
		e.waitPodsGone(t, installNS, provision.SharedPoolSelector(), removed, 2*time.Minute)
		e.kubectl(t, "scale", "-n", installNS, "deployment/"+names.SharedPoolName, "--replicas=2")
		testkit.EventuallyExplained(t, 2*time.Minute, func() string { return e.deploymentReady(installNS, names.SharedPoolName, 2) })
	})
}
