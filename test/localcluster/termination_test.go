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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// keepAlive is one HTTP/1.1 connection to a Service address, reused for
// every request (no retries, no reconnects).
type keepAlive struct {
	conn net.Conn
	br   *bufio.Reader
}

func (k *keepAlive) get(host string) (echoReply, error) {
	var r echoReply
	_ = k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(k.conn, "GET /keep-alive HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		return r, err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return r, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return r, err
	}
	if resp.StatusCode != http.StatusOK || resp.Close {
		return r, fmt.Errorf("status %d, close %t", resp.StatusCode, resp.Close)
	}
	return r, json.Unmarshal(b, &r)
}

// testGracefulTermination deletes one pod of a 2-replica Deployment whose
// container has a 5 s preStop sleep and a 40 s grace period (above the
// harness's former 15 s cap), and checks what Kubernetes does: the pod's
// endpoint turns not ready and terminating at once while its process still
// runs; new connections through the ClusterIP go only to the other pod, while
// a connection already open to the terminating pod keeps being served; the
// process gets SIGTERM only after the preStop sleep; then the pod is gone.
func testGracefulTermination(ctx context.Context, t *testing.T, cs kubernetes.Interface, c *localcluster.Cluster) {
	clusterIP := createTermDeployment(ctx, t, cs)
	defer func() {
		// Remove the rest at once (grace period 0: no preStop sleep).
		_ = cs.AppsV1().Deployments(testNS).Delete(ctx, "term", metav1.DeleteOptions{})
		_ = cs.CoreV1().Services(testNS).Delete(ctx, "term", metav1.DeleteOptions{})
		_ = cs.CoreV1().Pods(testNS).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{LabelSelector: "app=term"})
	}()
	testkit.EventuallyState(t, 60*time.Second, "2 ready endpoints of term", func() (bool, string) {
		eps, err := termEndpoints(ctx, cs)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, cond := range eps {
			if cond.Ready != nil && *cond.Ready {
				n++
			}
		}
		return n == 2, fmt.Sprintf("%d ready", n)
	})
	addr := net.JoinHostPort(clusterIP, "8080")
	kept, victim := openKeepAlive(t, addr)
	defer func() { _ = kept.conn.Close() }()
	pod, err := cs.CoreV1().Pods(testNS).Get(ctx, victim.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.Sandboxes()[pod.UID].PIDs
	if len(pids) != 1 {
		t.Fatalf("pod %s runs %v, want one process", pod.Name, pids)
	}

	deleted := time.Now()
	if err := cs.CoreV1().Pods(testNS).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkTerminating(ctx, t, cs, pod.Name, pids[0], addr, kept, deleted)

	testkit.EventuallyState(t, 20*time.Second, "the pod's process ends after SIGTERM", func() (bool, string) {
		return !process.Alive(pids[0]), "still running"
	})
	if ended := time.Since(deleted); ended < termPreStop {
		t.Errorf("the process ended %s after the deletion, before its %s preStop sleep was over", ended, termPreStop)
	}
	testkit.EventuallyState(t, 20*time.Second, "the pod object is gone", func() (bool, string) {
		_, err := cs.CoreV1().Pods(testNS).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// termPreStop is the preStop sleep of the term Deployment's container.
const termPreStop = 5 * time.Second

// createTermDeployment creates the term Deployment (echo-basic over plain
// HTTP, with the preStop sleep and a 40 s grace period) and its Service,
// and returns the Service's ClusterIP.
func createTermDeployment(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	dep, svc := echoDeployment()
	dep.Name, svc.Name = "term", "term"
	labels := map[string]string{"app": "term"}
	dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels, svc.Spec.Selector = labels, labels, labels
	spec := &dep.Spec.Template.Spec
	// Plain HTTP only: no TLS volume, whose mount target the main test
	// checks is removed once the echo pods are gone.
	spec.Volumes, spec.Containers[0].VolumeMounts = nil, nil
	var env []corev1.EnvVar
	for _, e := range spec.Containers[0].Env {
		if e.Name != "TLS_SERVER_CERT" && e.Name != "TLS_SERVER_PRIVKEY" {
			env = append(env, e)
		}
	}
	spec.Containers[0].Env = env
	spec.TerminationGracePeriodSeconds = ptr.To[int64](40)
	spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Sleep: &corev1.SleepAction{Seconds: int64(termPreStop / time.Second)},
	}}
	if _, err := cs.AppsV1().Deployments(testNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := cs.CoreV1().Services(testNS).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Spec.ClusterIP
}

// termEndpoints are the term Service's endpoints' conditions by pod name.
func termEndpoints(ctx context.Context, cs kubernetes.Interface) (map[string]discoveryv1.EndpointConditions, error) {
	slices, err := cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=term"})
	if err != nil {
		return nil, err
	}
	out := map[string]discoveryv1.EndpointConditions{}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil {
				out[e.TargetRef.Name] = e.Conditions
			}
		}
	}
	return out, nil
}

// openKeepAlive opens a keep-alive connection through the ClusterIP at addr
// and returns it with the reply of its first request (naming its pod).
func openKeepAlive(t *testing.T, addr string) (*keepAlive, echoReply) {
	var kept *keepAlive
	var victim echoReply
	testkit.EventuallyState(t, 20*time.Second, "a keep-alive connection through the ClusterIP", func() (bool, string) {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return false, err.Error()
		}
		kept = &keepAlive{conn: conn, br: bufio.NewReader(conn)}
		if victim, err = kept.get("term"); err != nil {
			_ = conn.Close()
			return false, err.Error()
		}
		return true, ""
	})
	return kept, victim
}

// checkTerminating checks, within the preStop sleep of the pod deleted at
// deleted: its endpoint is not ready and terminating while its process
// (pid) runs, new connections to addr avoid it, and the connection kept
// open to it is still served.
func checkTerminating(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, pid int, addr string, kept *keepAlive, deleted time.Time) {
	testkit.EventuallyState(t, 3*time.Second, "the deleted pod's endpoint turns not ready and terminating", func() (bool, string) {
		eps, err := termEndpoints(ctx, cs)
		if err != nil {
			return false, err.Error()
		}
		cond, ok := eps[name]
		return ok && cond.Ready != nil && !*cond.Ready && cond.Terminating != nil && *cond.Terminating, fmt.Sprintf("%+v", eps)
	})
	if !process.Alive(pid) {
		t.Fatalf("pod %s's process ended %s after the deletion, inside its %s preStop sleep", name, time.Since(deleted), termPreStop)
	}
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testkit.EventuallyState(t, 2*time.Second, "new connections avoid the terminating pod", func() (bool, string) {
		for i := 0; i < 6; i++ {
			r, err := getEcho(fresh, "http://"+addr+"/new")
			if err != nil {
				return false, err.Error()
			}
			if r.Pod == name {
				return false, "a new connection reached " + name
			}
		}
		return true, ""
	})
	r, err := kept.get("term")
	if err != nil || r.Pod != name {
		t.Fatalf("the open connection to the terminating pod: %+v, %v; want it still served by %s", r, err, name)
	}
	if since := time.Since(deleted); since >= termPreStop {
		t.Fatalf("the checks took %s, beyond the %s preStop sleep: the machine is too slow for this test", since, termPreStop)
	}
	t.Logf("pod %s terminating: endpoint not ready, new connections elsewhere, open connection served (%s after the deletion)", name, time.Since(deleted).Round(time.Millisecond))
}
