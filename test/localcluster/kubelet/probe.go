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

package kubelet

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeTarget struct {
	port int32
	// udp: port is a UDP port, ready once a socket is bound to it in the
	// container's network namespace (UDP has no handshake to probe).
	udp      bool
	path     string // HTTP GET path; "" means a TCP connect
	https    bool
	period   time.Duration
	explicit bool // from a readinessProbe: keep probing after Ready
}

// readinessTarget picks what readiness waits for: the readinessProbe's
// HTTP/TCP port, else the first TCP container port, else the first UDP
// container port (a bound socket), else the image's known port, else
// nothing (ready once running).
func readinessTarget(c *corev1.Container, plan launchPlan, env map[string]string) probeTarget {
	if pr := c.ReadinessProbe; pr != nil {
		period := 10 * time.Second
		if pr.PeriodSeconds > 0 {
			period = time.Duration(pr.PeriodSeconds) * time.Second
		}
		switch {
		case pr.HTTPGet != nil:
			path := pr.HTTPGet.Path
			if path == "" {
				path = "/"
			}
			return probeTarget{port: resolvePort(c, pr.HTTPGet.Port), path: path,
				https: pr.HTTPGet.Scheme == corev1.URISchemeHTTPS, period: period, explicit: true}
		case pr.TCPSocket != nil:
			return probeTarget{port: resolvePort(c, pr.TCPSocket.Port), period: period, explicit: true}
		case pr.GRPC != nil:
			return probeTarget{port: pr.GRPC.Port, period: period, explicit: true}
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			return probeTarget{port: p.ContainerPort}
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == corev1.ProtocolUDP {
			return probeTarget{port: p.ContainerPort, udp: true}
		}
	}
	if plan.defaultPort != 0 {
		port := plan.defaultPort
		if plan.defaultPortEnv != "" {
			if v, err := strconv.Atoi(env[plan.defaultPortEnv]); err == nil && v > 0 && v < 65536 {
				port = int32(v)
			}
		}
		return probeTarget{port: port}
	}
	return probeTarget{}
}

func resolvePort(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// probe checks readiness of a running container.
func (r *podRunner) probe(c *containerState, now time.Time) {
	r.mu.Lock()
	p, ready, last := c.proc, c.ready, c.lastProbe
	target := c.probe
	r.mu.Unlock()
	if p == nil || p.Exited() {
		return
	}
	if ready && (!target.explicit || now.Sub(last) < target.period) {
		return
	}
	ok := true
	switch {
	case target.udp:
		ok = udpBound(p.PID(), target.port)
	case target.port != 0:
		ok = probeOnce(r.ip.String(), target)
	}
	r.mu.Lock()
	c.ready, c.lastProbe = ok, now
	r.mu.Unlock()
}

// probeOnce checks one HTTP or TCP target from the host through the bridge.
func probeOnce(ip string, t probeTarget) bool {
	addr := net.JoinHostPort(ip, strconv.Itoa(int(t.port)))
	if t.path == "" {
		conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	scheme := "http"
	if t.https {
		scheme = "https"
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // probes do not verify, as the kubelet's
		DisableKeepAlives: true,
	}}
	resp, err := client.Get(scheme + "://" + addr + t.path)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

// udpBound reports whether a UDP socket is bound to port in the network
// namespace of process pid: /proc/<pid>/net/udp and udp6 list that
// namespace's sockets, local address as hex "IP:PORT".
func udpBound(pid int, port int32) bool {
	suffix := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"udp", "udp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 1 && strings.HasSuffix(fields[1], suffix) {
				return true
			}
		}
	}
	return false
}

func (r *podRunner) allReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.containers) == 0 {
		return false
	}
	for _, c := range r.containers {
		if !c.ready {
			return false
		}
	}
	return true
}
