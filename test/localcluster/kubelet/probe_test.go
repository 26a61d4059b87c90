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
	"net"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestReadinessTarget(t *testing.T) {
	echo := launchPlan{defaultPort: 3000, defaultPortEnv: "HTTP_PORT"}
	coredns := launchPlan{defaultPort: 53}
	tests := []struct {
		name string
		c    corev1.Container
		plan launchPlan
		env  map[string]string
		want probeTarget
	}{
		{"image default", corev1.Container{}, echo, nil, probeTarget{port: 3000}},
		{"HTTP_PORT overrides the default", corev1.Container{}, echo, map[string]string{"HTTP_PORT": "8080"}, probeTarget{port: 8080}},
		{"coredns: 53, HTTP_PORT means nothing", corev1.Container{}, coredns, map[string]string{"HTTP_PORT": "8080"}, probeTarget{port: 53}},
		{"first TCP container port", corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 9000}}}, echo, nil, probeTarget{port: 9000}},
		{"nothing to wait for", corev1.Container{}, launchPlan{}, nil, probeTarget{}},
		{"readiness httpGet by port name", corev1.Container{
			Ports:          []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("admin")}}},
		}, echo, nil, probeTarget{port: 9901, path: "/readyz", period: 2e9, explicit: true}},
		{"readiness tcpSocket", corev1.Container{
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(81)}}},
		}, echo, nil, probeTarget{port: 81, period: 10e9, explicit: true}},
	}
	for _, tt := range tests {
		if got := readinessTarget(&tt.c, tt.plan, tt.env); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestUDPReadiness: a container with only UDP ports is ready once a socket
// is bound to the first of them in its network namespace.
func TestUDPReadiness(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolUDP}}}
	if got := readinessTarget(c, launchPlan{defaultPort: 3000}, nil); !got.udp || got.port != 8080 {
		t.Fatalf("readinessTarget = %+v, want UDP port 8080", got)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(pc.LocalAddr().(*net.UDPAddr).Port)
	if !udpBound(os.Getpid(), port) {
		t.Fatalf("udpBound(self, %d) = false with a socket bound there", port)
	}
	_ = pc.Close()
	if udpBound(os.Getpid(), port) {
		t.Fatalf("udpBound(self, %d) = true after the socket closed", port)
	}
}
