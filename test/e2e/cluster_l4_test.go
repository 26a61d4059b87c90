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
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// l4Backends are echo-basic's TCP server (plain on 3000, TLS with cert-a
// on 8443) and its UDP echo server (8080), each behind a Service.
const l4Backends = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: tcp-echo, namespace: e2e, labels: {app: tcp-echo}}
spec:
  selector: {matchLabels: {app: tcp-echo}}
  template:
    metadata: {labels: {app: tcp-echo}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.6.0
        env:
        - {name: TCP_ECHO_SERVER, value: "1"}
        - {name: TLS_SERVER_CERT, value: /etc/cert/tls.crt}
        - {name: TLS_SERVER_PRIV_KEY, value: /etc/cert/tls.key}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: SERVICE_NAME, value: tcp-echo}
        ports: [{containerPort: 3000}, {containerPort: 8443}]
        volumeMounts: [{name: cert, mountPath: /etc/cert}]
      volumes: [{name: cert, secret: {secretName: cert-a}}]
---
apiVersion: v1
kind: Service
metadata: {name: tcp-echo, namespace: e2e}
spec:
  selector: {app: tcp-echo}
  ports:
  - {name: plain, port: 3000, targetPort: 3000}
  - {name: tls, port: 8443, targetPort: 8443}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: udp-echo, namespace: e2e, labels: {app: udp-echo}}
spec:
  selector: {matchLabels: {app: udp-echo}}
  template:
    metadata: {labels: {app: udp-echo}}
    spec:
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.6.0
        env:
        - {name: UDP_ECHO_SERVER, value: "1"}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: SERVICE_NAME, value: udp-echo}
        ports: [{containerPort: 8080, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: udp-echo, namespace: e2e}
spec:
  selector: {app: udp-echo}
  ports: [{name: dns, port: 5353, protocol: UDP, targetPort: 8080}]
`

// l4Gateway is a shared Gateway with a TCP and a UDP listener on one port
// and a TLS passthrough listener, and a route of each kind.
const l4Gateway = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: l4, namespace: e2e}
spec:
  gatewayClassName: coxswain
  listeners:
  - {name: tcp, protocol: TCP, port: 9000}
  - {name: udp, protocol: UDP, port: 9000}
  - {name: tls, protocol: TLS, port: 9443, tls: {mode: Passthrough}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: tcp, namespace: e2e}
spec:
  parentRefs: [{name: l4, sectionName: tcp}]
  rules: [{backendRefs: [{name: tcp-echo, port: 3000}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: udp, namespace: e2e}
spec:
  parentRefs: [{name: l4, sectionName: udp}]
  rules: [{backendRefs: [{name: udp-echo, port: 5353}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: tls, namespace: e2e}
spec:
  parentRefs: [{name: l4, sectionName: tls}]
  hostnames: [a.example.com]
  rules: [{backendRefs: [{name: tcp-echo, port: 8443}]}]
`

// tcpAssertion is what echo-basic's TCP server answers TEST with.
type tcpAssertion struct {
	Pod   string `json:"pod"`
	IsTLS bool   `json:"isTLS"`
	TLS   *struct {
		ServerName string `json:"serverName"`
	} `json:"tls"`
}

// tcpTest reads the server's greeting, sends TEST and decodes the answer.
func tcpTest(c net.Conn) (tcpAssertion, error) {
	var a tcpAssertion
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		return a, fmt.Errorf("reading the greeting: %w", err)
	}
	if _, err := io.WriteString(c, "TEST\n"); err != nil {
		return a, err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return a, fmt.Errorf("reading the answer to TEST: %w", err)
	}
	return a, json.Unmarshal([]byte(line), &a)
}

// testL4Routes: TCP, UDP and TLS passthrough through one shared Gateway,
// real bytes end to end: the TCP echo answers through the TCP listener; a
// UDP datagram gets its echo back through the UDP listener on the same
// port; a TLS connection with SNI a.example.com reaches the TLS backend
// unopened (the client verifies the backend's own certificate), and an SNI
// no route serves is refused.
func testL4Routes(t *testing.T, e *lcEnv) {
	e.apply(t, l4Backends)
	for _, app := range []string{"tcp-echo", "udp-echo"} {
		if _, err := e.c.WaitForPodsReady(e.ctx, e2eNS, "app="+app, 1, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	e.apply(t, l4Gateway)
	gw := e.waitProgrammed(t, e2eNS, "l4", 2*time.Minute)
	host := gw.Status.Addresses[0].Value

	var tcp tcpAssertion
	testkit.EventuallyExplained(t, time.Minute, func() string {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, "9000"), 3*time.Second)
		if err != nil {
			return err.Error()
		}
		defer func() { _ = c.Close() }()
		if tcp, err = tcpTest(c); err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(tcp.Pod, "tcp-echo-") || tcp.IsTLS {
			return fmt.Sprintf("TCP listener reached %+v, want a plain tcp-echo pod", tcp)
		}
		return ""
	})
	t.Logf("TCP :9000 reached %s", tcp.Pod)

	testkit.EventuallyExplained(t, time.Minute, func() string {
		c, err := net.Dial("udp", net.JoinHostPort(host, "9000"))
		if err != nil {
			return err.Error()
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("hello over udp")); err != nil {
			return err.Error()
		}
		buf := make([]byte, 2048)
		n, err := c.Read(buf)
		if err != nil {
			return "no UDP echo: " + err.Error()
		}
		var got struct {
			Request string `json:"request"`
			Service string `json:"service"`
		}
		if err := json.Unmarshal(buf[:n], &got); err != nil || got.Request != "hello over udp" || got.Service != "udp-echo" {
			return fmt.Sprintf("UDP answer %q (%v)", buf[:n], err)
		}
		return ""
	})
	t.Log("UDP :9000 echoed by udp-echo")

	var passed tcpAssertion
	testkit.EventuallyExplained(t, time.Minute, func() string {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(host, "9443"),
			&tls.Config{ServerName: "a.example.com", RootCAs: e.caPool, MinVersion: tls.VersionTLS12})
		if err != nil {
			return err.Error()
		}
		defer func() { _ = c.Close() }()
		if passed, err = tcpTest(c); err != nil {
			return err.Error()
		}
		if !passed.IsTLS || passed.TLS == nil || passed.TLS.ServerName != "a.example.com" {
			return fmt.Sprintf("TLS passthrough reached %+v, want the backend's own TLS with SNI a.example.com", passed)
		}
		return ""
	})
	t.Logf("TLS :9443 passed through to %s, which saw SNI a.example.com", passed.Pod)

	_, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", net.JoinHostPort(host, "9443"),
		&tls.Config{ServerName: "z.example.com", RootCAs: e.caPool, MinVersion: tls.VersionTLS12})
	if err == nil || (!errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "reset by peer")) {
		t.Fatalf("TLS with an SNI no route serves: %v, want the connection refused", err)
	}
}
