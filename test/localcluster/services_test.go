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

package localcluster_test

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// echoClusterIP is the echo Service's ClusterIP.
func (lc *clusterTest) echoClusterIP() string {
	echoSvc, err := lc.cs.CoreV1().Services(testNS).Get(lc.ctx, "echo", metav1.GetOptions{})
	if err != nil {
		lc.t.Fatal(err)
	}
	return echoSvc.Spec.ClusterIP
}

// checkServiceNames: Service names resolve inside pods (their /etc/hosts)
// to the ClusterIP; the kubernetes Service's to its ClusterIP too.
func (lc *clusterTest) checkServiceNames() {
	if _, err := exec.LookPath("getent"); err != nil {
		return
	}
	clusterIP := lc.echoClusterIP()
	for name, want := range map[string]string{
		"echo.lc-test.svc.cluster.local": clusterIP,
		"echo":                           clusterIP,
		"kubernetes.default.svc":         "10.96.0.1",
	} {
		testkit.EventuallyState(lc.t, 10*time.Second, "resolving "+name+" in a pod", func() (bool, string) {
			out, err := exec.Command("ip", "netns", "exec", lc.netnsNames[1], "getent", "hosts", name).Output()
			if err != nil {
				return false, err.Error()
			}
			f := strings.Fields(string(out))
			return len(f) > 0 && f[0] == want, string(out)
		})
	}
}

// checkServiceProxy: the ClusterIP is served (user-space service proxy)
// from the host and from pods, spreading connections over both pods; a
// LoadBalancer Service gets a VIP on the bridge in its status, and serves
// too.
func (lc *clusterTest) checkServiceProxy() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	clusterIP := lc.echoClusterIP()
	seen := map[string]bool{}
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testkit.EventuallyState(t, 20*time.Second, "both pods answer through the ClusterIP", func() (bool, string) {
		reply, err := getEcho(fresh, "http://"+net.JoinHostPort(clusterIP, "8080")+"/")
		if err != nil {
			return false, err.Error()
		}
		seen[reply.Pod] = true
		return len(seen) == 2, fmt.Sprintf("pods seen: %v", seen)
	})
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", lc.netnsNames[1], "curl", "-sS", "-m", "5", "http://echo.lc-test.svc:8080/from-pod").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"path": "/from-pod"`) {
			t.Errorf("pod to Service name: %v: %s", err, out)
		}
	}
	_, svc := echoDeployment()
	lb := svc.DeepCopy()
	lb.ObjectMeta = metav1.ObjectMeta{Name: "echo-lb", Namespace: testNS}
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Spec.Ports = []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(3000)}}
	if _, err := cs.CoreV1().Services(testNS).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var vip string
	testkit.EventuallyState(t, 20*time.Second, "LoadBalancer Service gets a VIP", func() (bool, string) {
		got, err := cs.CoreV1().Services(testNS).Get(ctx, "echo-lb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ing := got.Status.LoadBalancer.Ingress; len(ing) == 1 {
			vip = ing[0].IP
		}
		return vip != "", fmt.Sprintf("%+v", got.Status.LoadBalancer)
	})
	_, podNet, _ := net.ParseCIDR(podNetwork)
	if ip := net.ParseIP(vip); ip == nil || !podNet.Contains(ip) || ip.String() == lc.c.NodeIP || lc.c.LoadBalancerIP(testNS, "echo-lb") != vip {
		t.Fatalf("VIP %s: want an address of the bridge's network other than the node's", vip)
	}
	testkit.EventuallyState(t, 20*time.Second, "the VIP serves", func() (bool, string) {
		reply, err := getEcho(fresh, "http://"+vip+"/lb")
		if err != nil {
			return false, err.Error()
		}
		return reply.Path == "/lb" && reply.Namespace == testNS, fmt.Sprintf("%+v", reply)
	})
}
