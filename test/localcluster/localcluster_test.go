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
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
	"github.com/coxswain-go/coxswain/test/localcluster/kubelet"
	"github.com/coxswain-go/coxswain/test/localcluster/network"
	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// TestLocalCluster starts the cluster, runs a 2-replica echo-basic
// Deployment behind a Service through the real Deployment, ReplicaSet and
// EndpointSlice controllers, talks to each pod over the bridge, restarts a
// crashed container, rejects an unmapped image, deletes the Deployment and
// stops the cluster - checking that no process, namespace or bridge is
// left.
func TestLocalCluster(t *testing.T) {
	assets := localClusterAssets(t)
	if _, err := os.Stat(tlsMount); err == nil {
		t.Fatalf("%s exists on the host; the test needs it absent", tlsMount)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	lc := &clusterTest{t: t, ctx: ctx, echo: echoBasic(t)}
	lc.startOverLeftovers(assets)
	defer func() {
		if !lc.stopped {
			_ = lc.c.Stop()
		}
	}()
	defer func() {
		if t.Failed() {
			dumpLogs(t, lc.c.LogDir())
		}
	}()

	lc.createEcho()
	lc.checkEchoPods()
	lc.checkServiceNames()
	lc.checkServiceProxy()
	lc.checkPodLogs()
	// The Secret volume is mounted only in the pods' mount namespaces.
	if _, err := os.Stat(filepath.Join(tlsMount, "crt")); err == nil {
		t.Errorf("%s/crt is visible on the host: the volume mount leaked out of the pod", tlsMount)
	}
	lc.checkRestart()
	lc.checkUnsupportedImage()

	// A pod's graceful deletion: preStop sleep, endpoints, service proxy.
	termStart := time.Now()
	testGracefulTermination(ctx, t, lc.cs, lc.c)
	t.Logf("graceful termination checked in %s", time.Since(termStart).Round(time.Millisecond))

	lc.checkDeploymentDeleted()
	lc.checkStop()
}

// clusterTest is what TestLocalCluster's steps share.
type clusterTest struct {
	t    *testing.T
	ctx  context.Context
	echo string // the echo-basic binary

	c            *localcluster.Cluster
	cs           kubernetes.Interface
	controlPlane []int // PIDs
	stopped      bool

	cert      *x509.Certificate // the echo pods' TLS certificate
	depStart  time.Time         // when the echo Deployment was created
	endpoints []discoveryv1.Endpoint
	byName    map[string]corev1.Pod
	// Of each echo pod (and of the restarted container, in podPIDs).
	podUIDs    []types.UID
	netnsNames []string
	podPIDs    []int
}

// startOverLeftovers plants the leftovers of a crashed run, starts the
// cluster and checks that Start removed them.
func (lc *clusterTest) startOverLeftovers(assets string) {
	t := lc.t
	stalePID, staleNetnsPID, staleNetns, staleTarget := localcluster.PlantLeftovers(t, "cxbr0")
	start := time.Now()
	c, err := localcluster.Start(lc.ctx, localcluster.Config{
		AssetsDir: assets, Dir: t.TempDir(),
		Binaries: localcluster.Binaries{EchoBasic: lc.echo},
		Logf:     t.Logf,
		LockWait: 5 * time.Minute, // other packages' tests may hold the machine's one cluster
	})
	if err != nil {
		t.Fatal(err)
	}
	lc.c, lc.cs, lc.controlPlane = c, c.Client, c.ControlPlanePIDs()
	t.Logf("cluster started in %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range []int{stalePID, staleNetnsPID} {
		if process.Alive(pid) {
			t.Errorf("leftover process %d still runs after Start", pid)
		}
	}
	if _, err := os.Stat(staleTarget); !os.IsNotExist(err) {
		t.Errorf("leftover mount target %s still exists after Start (%v)", staleTarget, err)
	}
	if left, err := network.HarnessNetns(); err != nil || slices.Contains(left, staleNetns) {
		t.Errorf("leftover network namespace %s still exists after Start (%v)", staleNetns, err)
	}
}

// createEcho creates the namespace, the TLS Secret and the ConfigMap the
// echo pods use, the echo Deployment and its Service.
func (lc *clusterTest) createEcho() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, cert := testkit.SelfSigned(t, "echo.lc-test")
	lc.cert = cert
	if _, err := cs.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(certPEM), "tls.key": []byte(keyPEM)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-config"}, Data: map[string]string{"service": "echo-from-configmap"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, svc := echoDeployment()
	lc.depStart = time.Now()
	if _, err := cs.AppsV1().Deployments(testNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(testNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkEchoPods waits for the EndpointSlice controller to list two ready
// pod addresses, then checks each pod: its name and owner, its status, real
// HTTP and TLS from the host, and the one process its sandbox runs.
func (lc *clusterTest) checkEchoPods() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	testkit.EventuallyState(t, 60*time.Second, "EndpointSlice with 2 ready endpoints", func() (bool, string) {
		slices, err := cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err != nil {
			return false, err.Error()
		}
		lc.endpoints = nil
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					lc.endpoints = append(lc.endpoints, e)
				}
			}
		}
		return len(lc.endpoints) == 2, fmt.Sprintf("%d ready endpoints", len(lc.endpoints))
	})
	t.Logf("2 ready endpoints %s after the Deployment was created", time.Since(lc.depStart).Round(time.Millisecond))

	pods, err := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
	if err != nil {
		t.Fatal(err)
	}
	lc.byName = map[string]corev1.Pod{}
	for _, p := range pods.Items {
		lc.byName[p.Name] = p
	}
	sandboxes := lc.c.Sandboxes()
	for _, e := range lc.endpoints {
		pod, ip := lc.checkEndpointPod(e)
		sb, ok := sandboxes[pod.UID]
		if !ok || sb.Netns == "" || len(sb.PIDs) != 1 || sb.IP != ip.String() {
			t.Fatalf("pod %s sandbox: %+v", pod.Name, sb)
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", sb.PIDs[0]))
		if err != nil || exe != lc.echo {
			t.Errorf("pod %s runs %q (%v), want %s", pod.Name, exe, err, lc.echo)
		}
		lc.podUIDs = append(lc.podUIDs, pod.UID)
		lc.netnsNames = append(lc.netnsNames, sb.Netns)
		lc.podPIDs = append(lc.podPIDs, sb.PIDs[0])
	}
}

// checkEndpointPod checks the echo pod behind one ready endpoint and
// returns it with its address.
func (lc *clusterTest) checkEndpointPod(e discoveryv1.Endpoint) (corev1.Pod, net.IP) {
	t := lc.t
	_, podNet, _ := net.ParseCIDR(podNetwork)
	if len(e.Addresses) != 1 || e.TargetRef == nil {
		t.Fatalf("endpoint %+v: want one address and a target", e)
	}
	ip := net.ParseIP(e.Addresses[0])
	if ip == nil || !podNet.Contains(ip) || ip.IsLoopback() {
		t.Fatalf("endpoint address %s is not in the pod network %s", e.Addresses[0], podNetwork)
	}
	name := e.TargetRef.Name
	// Names come from the real Deployment and ReplicaSet controllers.
	if !regexp.MustCompile(`^echo-[a-z0-9]+-[a-z0-9]{5}$`).MatchString(name) {
		t.Errorf("pod name %q does not look like name-<rs-hash>-<suffix>", name)
	}
	pod, ok := lc.byName[name]
	if !ok {
		t.Fatalf("endpoint targets %s, which is not an echo pod", name)
	}
	if owner := metav1.GetControllerOf(&pod); owner == nil || owner.Kind != "ReplicaSet" {
		t.Errorf("pod %s is not owned by a ReplicaSet: %v", name, pod.OwnerReferences)
	}
	if pod.Status.PodIP != ip.String() || pod.Status.HostIP != lc.c.NodeIP || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("pod %s status: podIP %s hostIP %s phase %s", name, pod.Status.PodIP, pod.Status.HostIP, pod.Status.Phase)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		found := false
		for _, cond := range pod.Status.Conditions {
			if cond.Type == ct && cond.Status == corev1.ConditionTrue {
				found = true
			}
		}
		if !found {
			t.Errorf("pod %s: condition %s is not True: %+v", name, ct, pod.Status.Conditions)
		}
	}
	// Real HTTP to the pod IP from the host, over the bridge.
	reply, err := getEcho(&http.Client{Timeout: 5 * time.Second}, "http://"+net.JoinHostPort(ip.String(), "3000")+"/lc-test")
	if err != nil {
		t.Fatal(err)
	}
	if reply.Pod != name || reply.Namespace != testNS || reply.Path != "/lc-test" || reply.Service != "echo-from-configmap" {
		t.Errorf("pod %s at %s answered %+v", name, ip, reply)
	}
	// TLS on 8443 with the certificate from the Secret volume.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip.String(), "8443"),
		&tls.Config{ServerName: "echo.lc-test", RootCAs: poolOf(lc.cert)})
	if err != nil {
		t.Fatalf("TLS to pod %s: %v", name, err)
	}
	_ = conn.Close()
	return pod, ip
}

// checkPodLogs reads a pod's log through the apiserver (the kubelet API),
// with sinceTime as the conformance suite's mirror tests read them.
func (lc *clusterTest) checkPodLogs() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	logName := lc.endpoints[0].TargetRef.Name
	testkit.EventuallyState(t, 20*time.Second, "pod logs through the apiserver", func() (bool, string) {
		b, err := cs.CoreV1().Pods(testNS).GetLogs(logName, &corev1.PodLogOptions{
			Container: "echo", SinceTime: &metav1.Time{Time: lc.depStart.Add(-time.Second)},
		}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(b), "/lc-test"), string(b)
	})
	if b, err := cs.CoreV1().Pods(testNS).GetLogs(logName, &corev1.PodLogOptions{
		Container: "echo", SinceTime: &metav1.Time{Time: time.Now().Add(time.Hour)},
	}).DoRaw(ctx); err != nil || len(b) != 0 {
		t.Errorf("logs since the future: %q, %v", b, err)
	}
}

// checkRestart: a crashed container is restarted and becomes Ready again.
func (lc *clusterTest) checkRestart() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	if err := syscall.Kill(lc.podPIDs[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 30*time.Second, "crashed container restarted and Ready", func() (bool, string) {
		p, err := cs.CoreV1().Pods(testNS).Get(ctx, lc.byName[lc.endpoints[0].TargetRef.Name].Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return false, "no container status"
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.Ready, fmt.Sprintf("restarts %d ready %t", st.RestartCount, st.Ready)
	})
	sb := lc.c.Sandboxes()[lc.podUIDs[0]]
	if len(sb.PIDs) != 1 || sb.PIDs[0] == lc.podPIDs[0] {
		t.Fatalf("after the crash the sandbox runs %v (old pid %d)", sb.PIDs, lc.podPIDs[0])
	}
	lc.podPIDs = append(lc.podPIDs, sb.PIDs[0])
	if _, err := getEcho(&http.Client{Timeout: 5 * time.Second}, "http://"+net.JoinHostPort(lc.endpoints[0].Addresses[0], "3000")+"/"); err != nil {
		t.Fatalf("restarted pod does not answer: %v", err)
	}
}

// checkUnsupportedImage: an image with no local binary fails the pod with
// a clear reason.
func (lc *clusterTest) checkUnsupportedImage() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	if _, err := cs.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 20*time.Second, "unmapped image fails the pod", func() (bool, string) {
		p, err := cs.CoreV1().Pods(testNS).Get(ctx, "nginx", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == kubelet.ReasonUnsupportedImage &&
				strings.Contains(p.Status.Message, `"nginx:1.27"`),
			fmt.Sprintf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
}

// checkDeploymentDeleted: deleting the Deployment removes the pods, their
// processes, their namespaces and the mount target created for them.
func (lc *clusterTest) checkDeploymentDeleted() {
	t, ctx, cs := lc.t, lc.ctx, lc.cs
	if err := cs.AppsV1().Deployments(testNS).Delete(ctx, "echo", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyState(t, 60*time.Second, "echo pods deleted", func() (bool, string) {
		pods, err := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
	testkit.EventuallyState(t, 20*time.Second, "echo sandboxes gone", func() (bool, string) {
		sbs := lc.c.Sandboxes()
		for _, uid := range lc.podUIDs {
			if _, ok := sbs[uid]; ok {
				return false, "sandbox of " + string(uid) + " still runs"
			}
		}
		return true, ""
	})
	for _, pid := range lc.podPIDs {
		if process.Alive(pid) {
			t.Errorf("pod process %d still runs after the Deployment was deleted", pid)
		}
	}
	left, err := network.HarnessNetns()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range lc.netnsNames {
		if slices.Contains(left, ns) {
			t.Errorf("network namespace %s still exists after its pod was deleted", ns)
		}
	}
	if _, err := os.Stat(tlsMount); err == nil {
		t.Errorf("mount target %s was not removed after its pods were deleted", tlsMount)
	}
	if _, err := cs.CoreV1().Pods(testNS).Get(ctx, "nginx", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// checkStop stops the cluster and checks that nothing remains: no
// control-plane or pod process, no pod namespace or its /etc/netns
// directory, no bridge.
func (lc *clusterTest) checkStop() {
	t := lc.t
	stopStart := time.Now()
	if err := lc.c.Stop(); err != nil {
		t.Fatal(err)
	}
	lc.stopped = true
	t.Logf("cluster stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	for _, pid := range append(lc.controlPlane, lc.podPIDs...) {
		if process.Alive(pid) {
			t.Errorf("process %d still runs after Stop", pid)
		}
	}
	if left, err := network.HarnessNetns(); err != nil || len(left) != 0 {
		t.Errorf("network namespaces left after Stop: %v (%v)", left, err)
	}
	if entries, err := os.ReadDir("/etc/netns"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "cxp-") {
				t.Errorf("/etc/netns/%s left after Stop", e.Name())
			}
		}
	}
	if network.LinkExists(lc.c.Bridge()) {
		t.Errorf("bridge %s left after Stop", lc.c.Bridge())
	}
}
