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
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The policy layer on the local cluster. The peers the policies talk to
// (a JWKS server, HTTP and gRPC ext_authz servers, a Redis, a backend that
// fails) run in this test process on the Node's address, which every pod
// reaches; Services without selectors and hand-written EndpointSlices
// point at them, as they would at any server outside the cluster.

// hostService renders a selectorless Service named name in e2e on port
// 80 whose EndpointSlices point at the host listeners addrs.
func hostService(name string, addrs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
apiVersion: v1
kind: Service
metadata: {name: %s, namespace: e2e}
spec:
  ports: [{name: http, port: 80}]
`, name)
	for i, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		fmt.Fprintf(&b, `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: %s-%d, namespace: e2e, labels: {kubernetes.io/service-name: %s}}
addressType: IPv4
ports: [{name: http, port: %s}]
endpoints: [{addresses: [%s], conditions: {ready: true}}]
`, name, i, name, port, host)
	}
	return b.String() + "---\n"
}

// hostListen listens on the Node's address, closed when the test ends.
func (e *lcEnv) hostListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(e.c.NodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// hostHTTP serves h on the Node's address and returns host:port.
func (e *lcEnv) hostHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln := e.hostListen(t)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// policyRoute routes host on Gateway web's HTTP listener to blue, with the
// given extra rule fields, and waits until it answers want (status).
func (e *lcEnv) policyRoute(t *testing.T, name, host, backend string, want int) string {
	t.Helper()
	e.apply(t, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: e2e}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [%s]
  rules:
  - backendRefs: [{name: %s, port: 80}]
`, name, host, backend))
	e.waitRouteAccepted(t, e2eNS, name, time.Minute)
	gw := e.waitProgrammed(t, e2eNS, "web", time.Minute)
	url := gatewayURL(gw, "http", 80) + "/"
	waitStatus(t, url, host, nil, want, time.Minute)
	return url
}

// statusOf sends one GET with host and headers and returns the status.
func statusOf(url, host string, hdr map[string]string) (int, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header, nil
}

// waitStatus polls (bounded) until a GET answers want.
func waitStatus(t testing.TB, url, host string, hdr map[string]string, want int, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		code, _, err := statusOf(url, host, hdr)
		if err != nil {
			return err.Error()
		}
		if code != want {
			return fmt.Sprintf("GET %s (Host %s, %v): %d, want %d", url, host, hdr, code, want)
		}
		return ""
	})
}

// jwksServer serves a key set whose keys the test swaps.
type jwksServer struct {
	mu   sync.Mutex
	keys []jose.JSONWebKey
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	set := jose.JSONWebKeySet{Keys: s.keys}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

func (s *jwksServer) set(keys ...*ecdsa.PrivateKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = s.keys[:0]
	for i, k := range keys {
		s.keys = append(s.keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kidOf(keys, i), Algorithm: string(jose.ES256), Use: "sig"})
	}
}

func kidOf(keys []*ecdsa.PrivateKey, i int) string { return fmt.Sprintf("k-%x", keys[i].X.Bytes()[:4]) }

// signToken signs a token for audience e2e with key (key id kid).
func signToken(t testing.TB, key *ecdsa.PrivateKey, kid, subject string) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://issuer.e2e", Audience: jwt.Audience{"e2e"}, Subject: subject,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// testPolicyJWT: a JwtAuth with a JWKS the test serves; its key rotates
// mid-run: a token of the new key is accepted (the proxy refetches on the
// unknown key id), one of the old key is refused once the cached set
// expires.
func testPolicyJWT(t *testing.T, e *lcEnv) {
	k1, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	js := &jwksServer{}
	js.set(k1)
	addr := e.hostHTTP(t, js)
	e.apply(t, fmt.Sprintf(`
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: JwtAuth
metadata: {name: jwt, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: jwt}]
  issuer: https://issuer.e2e
  audiences: [e2e]
  jwksURI: http://%s/jwks
  jwksCacheDuration: 3s
  claimsToHeaders: [{claim: sub, header: X-User}]
`, addr))
	url := e.policyRoute(t, "jwt", "jwt.example.com", "blue", http.StatusUnauthorized)
	old := signToken(t, k1, kidOf([]*ecdsa.PrivateKey{k1}, 0), "alice")
	waitStatus(t, url, "jwt.example.com", map[string]string{"Authorization": "Bearer " + old}, http.StatusOK, 30*time.Second)
	if code, _, err := statusOf(url, "jwt.example.com", map[string]string{"Authorization": "Bearer not-a-token"}); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("a malformed token: %d %v, want 401", code, err)
	}
	// Rotate: the JWKS now holds only k2.
	js.set(k2)
	fresh := signToken(t, k2, kidOf([]*ecdsa.PrivateKey{k2}, 0), "bob")
	waitStatus(t, url, "jwt.example.com", map[string]string{"Authorization": "Bearer " + fresh}, http.StatusOK, 30*time.Second)
	waitStatus(t, url, "jwt.example.com", map[string]string{"Authorization": "Bearer " + old}, http.StatusUnauthorized, 30*time.Second)
	assertPolicyAccepted(t, e, "JwtAuth", "jwt")
}

// assertPolicyAccepted waits for our Accepted=True ancestor on a policy.
func assertPolicyAccepted(t *testing.T, e *lcEnv, kind, name string) {
	t.Helper()
	testkit.EventuallyExplained(t, time.Minute, func() string {
		out, err := e.c.Kubectl(e.ctx, nil, "get", strings.ToLower(kind)+".gateway.coxswain-labs.dev", "-n", e2eNS, name,
			"-o", `jsonpath={.status.ancestors[?(@.controllerName=="`+names.ControllerName+`")].conditions[?(@.type=="Accepted")].status}`)
		if err != nil {
			return err.Error() + out
		}
		if strings.TrimSpace(out) != "True" {
			return fmt.Sprintf("%s %s Accepted = %q", kind, name, out)
		}
		return ""
	})
}

// authzServer is an envoy.service.auth.v3 Authorization server: it admits
// requests with "x-allow: yes", adding x-auth-user, and denies the rest
// with 403 and a body.
type authzServer struct {
	authv3.UnimplementedAuthorizationServer
	checks atomic.Int64
}

func (s *authzServer) Check(_ context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	s.checks.Add(1)
	h := req.GetAttributes().GetRequest().GetHttp().GetHeaders()
	if h["x-allow"] == "yes" {
		return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)}, HttpResponse: &authv3.CheckResponse_OkResponse{
			OkResponse: &authv3.OkHttpResponse{Headers: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-auth-user", Value: "grpc-user"}}}},
		}}, nil
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.PermissionDenied)}, HttpResponse: &authv3.CheckResponse_DeniedResponse{
		DeniedResponse: &authv3.DeniedHttpResponse{Status: &typev3.HttpStatus{Code: typev3.StatusCode_Forbidden}, Body: "denied by ext_authz"},
	}}, nil
}

// testPolicyExtAuth: a gRPC ext_authz server (Envoy's protocol) and an
// HTTP one, each in front of its own route.
func testPolicyExtAuth(t *testing.T, e *lcEnv) {
	gs := grpc.NewServer()
	az := &authzServer{}
	authv3.RegisterAuthorizationServer(gs, az)
	gln := e.hostListen(t)
	go func() { _ = gs.Serve(gln) }()
	t.Cleanup(gs.Stop)
	httpAddr := e.hostHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer letmein" {
			w.Header().Set("X-Auth-User", "http-user")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="e2e"`)
		http.Error(w, "who are you?", http.StatusUnauthorized)
	}))
	e.apply(t, hostService("authz-grpc", gln.Addr().String())+hostService("authz-http", httpAddr)+`
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata: {name: grpc, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: extauth-grpc}]
  protocol: GRPC
  backendRef: {name: authz-grpc, port: 80}
  timeout: 2s
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainExternalAuth
metadata: {name: http, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: extauth-http}]
  protocol: HTTP
  backendRef: {name: authz-http, port: 80}
  upstreamHeaders: [x-auth-user]
  clientHeaders: [www-authenticate]
`)
	gurl := e.policyRoute(t, "extauth-grpc", "grpc-auth.example.com", "blue", http.StatusForbidden)
	waitStatus(t, gurl, "grpc-auth.example.com", map[string]string{"X-Allow": "yes"}, http.StatusOK, 30*time.Second)
	if az.checks.Load() == 0 {
		t.Fatal("the gRPC authorization server was never asked")
	}
	hurl := e.policyRoute(t, "extauth-http", "http-auth.example.com", "blue", http.StatusUnauthorized)
	code, hdr, err := statusOf(hurl, "http-auth.example.com", nil)
	if err != nil || code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
		t.Fatalf("HTTP ext auth denial: %d %v %v, want 401 with WWW-Authenticate", code, hdr, err)
	}
	waitStatus(t, hurl, "http-auth.example.com", map[string]string{"Authorization": "Bearer letmein"}, http.StatusOK, 30*time.Second)
	// The authorization server going away fails closed.
	gs.Stop()
	waitStatus(t, gurl, "grpc-auth.example.com", map[string]string{"X-Allow": "yes"}, http.StatusServiceUnavailable, 30*time.Second)
}

// startRedis runs redis-server on the Node's address until the test ends.
func (e *lcEnv) startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is missing: apt-get install -y redis-server (`make redis` and .ci/run install it)")
	}
	ln := e.hostListen(t)
	addr := ln.Addr().String()
	_ = ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testkit.EventuallyExplained(t, 10*time.Second, func() string {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err.Error()
		}
		defer func() { _ = c.Close() }()
		_, _ = c.Write([]byte("PING\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.HasPrefix(line, "+PONG") {
			return "redis answered " + line
		}
		return ""
	})
	return addr
}

// testPolicyGlobalRateLimit: a Global RateLimit on a dedicated Gateway
// with two proxy replicas sharing one real Redis: requests sent to both
// pods directly are admitted, in total, at the configured count ±10%.
func testPolicyGlobalRateLimit(t *testing.T, e *lcEnv) {
	redis := e.startRedis(t)
	const limit, period = 40, 10 * time.Second
	e.apply(t, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e-policies}
spec: {controllerName: coxswain-labs.dev/gateway-controller}
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata: {name: rl, namespace: e2e}
spec:
  replicas: 2
  rateLimit: {redisAddress: "%s"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: rl, namespace: e2e}
spec:
  gatewayClassName: e2e-policies
  infrastructure:
    parametersRef: {group: gateway.coxswain-labs.dev, kind: CoxswainGatewayParameters, name: rl}
  listeners:
  - {name: http, protocol: HTTP, port: 8090}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: rl, namespace: e2e}
spec:
  parentRefs: [{name: rl}]
  rules:
  - backendRefs: [{name: blue, port: 80}]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RateLimit
metadata: {name: shared, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: rl}]
  requests: %d
  period: %s
  key: {type: Route}
  mode: Global
  failOpen: false
`, redis, limit, period))
	e.waitProgrammed(t, e2eNS, "rl", 3*time.Minute)
	deploy := names.DedicatedName("rl", "e2e-policies")
	testkit.EventuallyExplained(t, 2*time.Minute, func() string { return e.deploymentReady(e2eNS, deploy, 2) })
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(e2eNS), client.MatchingLabels{names.LabelGatewayName: "rl"}); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			urls = append(urls, "http://"+net.JoinHostPort(p.Status.PodIP, "8090")+"/")
		}
	}
	if len(urls) != 2 {
		t.Fatalf("want 2 proxy pods of Gateway rl, have %v", urls)
	}
	for _, u := range urls {
		waitStatus(t, u, "rl.example.com", nil, http.StatusOK, time.Minute)
	}
	// Start right after a window boundary, so one burst fits one window.
	for i := 0; i < 200 && time.Now().UnixNano()%int64(period) > int64(300*time.Millisecond); i++ {
		time.Sleep(time.Until(time.Now().Truncate(period).Add(period)) + 20*time.Millisecond)
	}
	admitted, limited := 0, 0
	perPod := map[string]int{}
	start := time.Now()
	for i := 0; i < 3*limit && time.Since(start) < period/2; i++ {
		u := urls[i%2]
		code, hdr, err := statusOf(u, "rl.example.com", nil)
		switch {
		case err != nil:
			t.Fatalf("request %d to %s: %v", i, u, err)
		case code == http.StatusOK:
			admitted++
			perPod[u]++
		case code == http.StatusTooManyRequests:
			limited++
			if hdr.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %v", hdr)
			}
		default:
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	t.Logf("global rate limit %d per %s across 2 replicas: %d admitted (%v), %d limited in %s", limit, period, admitted, perPod, limited, time.Since(start).Round(time.Millisecond))
	if lo, hi := limit*9/10, limit*11/10; admitted < lo || admitted > hi {
		t.Fatalf("%d requests admitted, want %d ±10%%", admitted, limit)
	}
	if len(perPod) != 2 {
		t.Fatalf("only %v admitted requests: the limit was not exercised on both replicas", perPod)
	}
}

// testPolicyOutlierDetection: three endpoints, one answering 500; passive
// outlier detection ejects it, and past the detection window fewer than 1%
// of requests fail.
func testPolicyOutlierDetection(t *testing.T, e *lcEnv) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	var bad atomic.Int64
	fail := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		bad.Add(1)
		http.Error(w, "broken", http.StatusInternalServerError)
	})
	e.apply(t, hostService("flaky", e.hostHTTP(t, ok), e.hostHTTP(t, ok), e.hostHTTP(t, fail))+`
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainBackendPolicy
metadata: {name: flaky, namespace: e2e}
spec:
  targetRefs: [{group: "", kind: Service, name: flaky}]
  outlierDetection: {consecutive5xx: 3, baseEjectionTime: 60s, maxEjectionPercent: 50}
`)
	url := e.policyRoute(t, "flaky", "flaky.example.com", "flaky", http.StatusOK)
	const window, total = 60, 400
	failedAfter := 0
	for i := 0; i < total; i++ {
		code, _, err := statusOf(url, "flaky.example.com", nil)
		if i >= window && (err != nil || code != http.StatusOK) {
			failedAfter++
		}
	}
	rate := float64(failedAfter) / float64(total-window)
	t.Logf("outlier detection: the failing endpoint was asked %d times; %d of the %d requests after the first %d failed (%.2f%%)", bad.Load(), failedAfter, total-window, window, 100*rate)
	if rate >= 0.01 {
		t.Fatalf("error rate %.2f%% after the detection window, want < 1%%", 100*rate)
	}
	if bad.Load() == 0 {
		t.Fatal("the failing endpoint never got a request: the test proved nothing")
	}
}

// testPolicyRetryRollout: a RetryPolicy keeps idempotent requests at 0
// failures while the backend Deployment rolls. A removed pod's address can
// swallow packets (its network namespace is gone), so a try to it times
// out rather than failing fast: the policy retries timeouts too.
func testPolicyRetryRollout(t *testing.T, e *lcEnv) {
	e.apply(t, echoBackend("rolling", 2)+`
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: RetryPolicy
metadata: {name: rolling, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: rolling}]
  attempts: 3
  perTryTimeout: 1s
  retryOn: [connect-failure, reset, gateway-error, timeout]
  budget: {percent: 100}
`)
	testkit.EventuallyExplained(t, 2*time.Minute, func() string { return e.deploymentReady(e2eNS, "rolling", 2) })
	url := e.policyRoute(t, "rolling", "rolling.example.com", "rolling", http.StatusOK)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	load := startLoad(loadConfig{addr: addr, host: "rolling.example.com", conns: 4, pace: 5 * time.Millisecond, maxDuration: 3 * time.Minute, maxRequestsPerConn: 100000})
	defer load.finish()
	time.Sleep(time.Second)
	e.kubectl(t, "rollout", "restart", "-n", e2eNS, "deployment/rolling")
	e.kubectl(t, "rollout", "status", "-n", e2eNS, "deployment/rolling", "--timeout=3m")
	time.Sleep(2 * time.Second)
	r := load.finish()
	t.Logf("load through the backend rollout: %s", r)
	if r.Sent == 0 || r.Failed != 0 {
		t.Fatalf("%d of %d requests failed during the rollout; first failures:\n%s", r.Failed, r.Sent, strings.Join(r.Failures, "\n"))
	}
}

// testPolicyProxyProtocol: a ClientTrafficPolicy takes the client address
// from PROXY protocol headers of a trusted source (the Node, where the
// Service proxy relays from) into X-Forwarded-For and the access log; a
// listener that trusts another range refuses the connection.
func testPolicyProxyProtocol(t *testing.T, e *lcEnv) {
	e.apply(t, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: pp, namespace: e2e}
spec:
  gatewayClassName: coxswain
  listeners:
  - {name: trusted, protocol: HTTP, port: 8082}
  - {name: untrusted, protocol: HTTP, port: 8083}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: pp, namespace: e2e}
spec:
  parentRefs: [{name: pp}]
  rules:
  - backendRefs: [{name: blue, port: 80}]
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: pp-trusted, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: pp, sectionName: trusted}]
  proxyProtocol: {trustedCIDRs: ["%s/32"]}
---
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: ClientTrafficPolicy
metadata: {name: pp-untrusted, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: pp, sectionName: untrusted}]
  proxyProtocol: {trustedCIDRs: [192.0.2.0/24]}
`, e.c.NodeIP))
	gw := e.waitProgrammed(t, e2eNS, "pp", 2*time.Minute)
	assertPolicyAccepted(t, e, "ClientTrafficPolicy", "pp-trusted")
	host := gw.Status.Addresses[0].Value
	const client = "203.0.113.77"
	send := func(port string) (string, error) {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 5*time.Second)
		if err != nil {
			return "", err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(c, "PROXY TCP4 %s 192.0.2.1 40000 %s\r\nGET /pp HTTP/1.1\r\nHost: pp.example.com\r\nConnection: close\r\n\r\n", client, port); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		return string(b), err
	}
	var body string
	testkit.EventuallyExplained(t, time.Minute, func() string {
		b, err := send("8082")
		if err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(b, "HTTP/1.1 200") {
			return "trusted PROXY connection answered: " + firstLine(b)
		}
		body = b
		return ""
	})
	if !strings.Contains(body, client) {
		t.Fatalf("the backend did not see the PROXY client %s in X-Forwarded-For:\n%s", client, body)
	}
	b, err := send("8083")
	if err == nil && b != "" {
		t.Fatalf("a PROXY connection from an untrusted source was served: %s", firstLine(b))
	}
	// The shared proxies' access log names the PROXY client.
	testkit.EventuallyExplained(t, 30*time.Second, func() string {
		out, err := e.c.Kubectl(e.ctx, nil, "logs", "-n", installNS, "-l", labels.SelectorFromSet(provision.SharedPoolSelector()).String(), "--tail=-1")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(out, `"client_ip":"`+client+`"`) {
			return "no access log line with client_ip " + client
		}
		return ""
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
