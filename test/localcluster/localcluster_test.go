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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/testenv"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

const (
	testNS     = "lc-test"
	tlsMount   = "/etc/coxswain-localcluster-test-tls" // absent on the host
	echoImage  = "registry.k8s.io/gateway-api/echo-basic:v1.5.1"
	podNetwork = "10.244.0.0/16"
)

// echoBasic returns the echo-basic binary: $LOCALCLUSTER_ECHO_BASIC, else
// built from the pinned conformance module (test/localcluster/echobasic).
func echoBasic(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOCALCLUSTER_ECHO_BASIC"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "echo-basic")
	cmd := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/gateway-api/conformance/echo-basic")
	cmd.Dir = filepath.Join(testenv.RepoRoot(), "test", "localcluster", "echobasic")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building echo-basic: %v\n%s", err, out)
	}
	return bin
}

// selfSigned returns a PEM certificate and key for name.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), cert
}

// poll runs cond every 200ms until it returns true or timeout passes.
func poll(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s (last: %s)", what, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func echoDeployment() (*appsv1.Deployment, *corev1.Service) {
	labels := map[string]string{"app": "echo"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: testNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "echo", Image: echoImage,
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							// echo-basic serves TLS on 8443 from files at these
							// paths, and panics if they are missing: the Secret
							// volume must be mounted at tlsMount for the process.
							{Name: "TLS_SERVER_CERT", Value: tlsMount + "/crt"},
							{Name: "TLS_SERVER_PRIVKEY", Value: tlsMount + "/key"},
							{Name: "SERVICE_NAME", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "echo-config"}, Key: "service"}}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: tlsMount, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "echo-tls",
						Items:      []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}},
					}}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: testNS},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(3000)}},
		},
	}
	return dep, svc
}

type echoReply struct {
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
	Path      string `json:"path"`
}

func getEcho(client *http.Client, url string) (echoReply, error) {
	var r echoReply
	resp, err := client.Get(url)
	if err != nil {
		return r, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return r, err
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode, b)
	}
	return r, json.Unmarshal(b, &r)
}

// TestLocalCluster starts the cluster, runs a 2-replica echo-basic
// Deployment behind a Service through the real Deployment, ReplicaSet and
// EndpointSlice controllers, talks to each pod over the bridge, restarts a
// crashed container, rejects an unmapped image, deletes the Deployment and
// stops the cluster - checking that no process, namespace or bridge is
// left.
func TestLocalCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: the local cluster needs root (network namespaces, a bridge, bind mounts); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: iproute2's `ip` is missing (apt-get install -y iproute2, or `make localcluster-deps`)")
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.Preflight(assets); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tlsMount); err == nil {
		t.Fatalf("%s exists on the host; the test needs it absent", tlsMount)
	}
	echo := echoBasic(t)

	// Leftovers of a crashed run are removed at start.
	stalePID, staleNetnsPID, staleNetns, staleTarget := localcluster.PlantLeftovers(t, "cxbr0")

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{
		AssetsDir: assets, Dir: t.TempDir(),
		Binaries: localcluster.Binaries{EchoBasic: echo},
		Logf:     t.Logf,
		LockWait: 5 * time.Minute, // other packages' tests may hold the machine's one cluster
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster started in %s", time.Since(start).Round(time.Millisecond))
	for _, pid := range []int{stalePID, staleNetnsPID} {
		if localcluster.ProcessAlive(pid) {
			t.Errorf("leftover process %d still runs after Start", pid)
		}
	}
	if _, err := os.Stat(staleTarget); !os.IsNotExist(err) {
		t.Errorf("leftover mount target %s still exists after Start (%v)", staleTarget, err)
	}
	if left, err := localcluster.HarnessNetns(); err != nil || slices.Contains(left, staleNetns) {
		t.Errorf("leftover network namespace %s still exists after Start (%v)", staleNetns, err)
	}
	controlPlane := c.ControlPlanePIDs()
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	defer func() {
		if t.Failed() {
			dumpLogs(t, c.LogDir())
		}
	}()
	cs := c.Client

	// Objects: namespace, the TLS Secret and a ConfigMap the pods use.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, cert := selfSigned(t, "echo.lc-test")
	if _, err := cs.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "echo-config"}, Data: map[string]string{"service": "echo-from-configmap"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, svc := echoDeployment()
	depStart := time.Now()
	if _, err := cs.AppsV1().Deployments(testNS).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(testNS).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The EndpointSlice controller lists two ready pod addresses.
	_, podNet, _ := net.ParseCIDR(podNetwork)
	var endpoints []discoveryv1.Endpoint
	poll(t, "EndpointSlice with 2 ready endpoints", 60*time.Second, func() (bool, string) {
		slices, err := cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err != nil {
			return false, err.Error()
		}
		endpoints = nil
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					endpoints = append(endpoints, e)
				}
			}
		}
		return len(endpoints) == 2, fmt.Sprintf("%d ready endpoints", len(endpoints))
	})
	t.Logf("2 ready endpoints %s after the Deployment was created", time.Since(depStart).Round(time.Millisecond))

	pods, err := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		byName[p.Name] = p
	}
	// Names come from the real Deployment and ReplicaSet controllers.
	nameRE := regexp.MustCompile(`^echo-[a-z0-9]+-[a-z0-9]{5}$`)
	httpc := &http.Client{Timeout: 5 * time.Second}
	sandboxes := c.Sandboxes()
	var podUIDs []types.UID
	var netnsNames []string
	var podPIDs []int
	for _, e := range endpoints {
		if len(e.Addresses) != 1 || e.TargetRef == nil {
			t.Fatalf("endpoint %+v: want one address and a target", e)
		}
		ip := net.ParseIP(e.Addresses[0])
		if ip == nil || !podNet.Contains(ip) || ip.IsLoopback() {
			t.Fatalf("endpoint address %s is not in the pod network %s", e.Addresses[0], podNetwork)
		}
		name := e.TargetRef.Name
		if !nameRE.MatchString(name) {
			t.Errorf("pod name %q does not look like name-<rs-hash>-<suffix>", name)
		}
		pod, ok := byName[name]
		if !ok {
			t.Fatalf("endpoint targets %s, which is not an echo pod", name)
		}
		if owner := metav1.GetControllerOf(&pod); owner == nil || owner.Kind != "ReplicaSet" {
			t.Errorf("pod %s is not owned by a ReplicaSet: %v", name, pod.OwnerReferences)
		}
		if pod.Status.PodIP != ip.String() || pod.Status.HostIP != c.NodeIP || pod.Status.Phase != corev1.PodRunning {
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
		reply, err := getEcho(httpc, "http://"+net.JoinHostPort(ip.String(), "3000")+"/lc-test")
		if err != nil {
			t.Fatal(err)
		}
		if reply.Pod != name || reply.Namespace != testNS || reply.Path != "/lc-test" || reply.Service != "echo-from-configmap" {
			t.Errorf("pod %s at %s answered %+v", name, ip, reply)
		}
		// TLS on 8443 with the certificate from the Secret volume.
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip.String(), "8443"),
			&tls.Config{ServerName: "echo.lc-test", RootCAs: poolOf(cert)})
		if err != nil {
			t.Fatalf("TLS to pod %s: %v", name, err)
		}
		_ = conn.Close()

		sb, ok := sandboxes[pod.UID]
		if !ok || sb.Netns == "" || len(sb.PIDs) != 1 || sb.IP != ip.String() {
			t.Fatalf("pod %s sandbox: %+v", name, sb)
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", sb.PIDs[0]))
		if err != nil || exe != echo {
			t.Errorf("pod %s runs %q (%v), want %s", name, exe, err, echo)
		}
		podUIDs = append(podUIDs, pod.UID)
		netnsNames = append(netnsNames, sb.Netns)
		podPIDs = append(podPIDs, sb.PIDs[0])
	}
	// Service names resolve inside pods (their /etc/hosts) to a ready
	// endpoint; the kubernetes Service to the apiserver on the bridge.
	echoSvc, err := cs.CoreV1().Services(testNS).Get(ctx, "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := echoSvc.Spec.ClusterIP
	if _, err := exec.LookPath("getent"); err == nil {
		for name, want := range map[string]string{
			"echo.lc-test.svc.cluster.local": clusterIP,
			"echo":                           clusterIP,
			"kubernetes.default.svc":         "10.96.0.1",
		} {
			poll(t, "resolving "+name+" in a pod", 10*time.Second, func() (bool, string) {
				out, err := exec.Command("ip", "netns", "exec", netnsNames[1], "getent", "hosts", name).Output()
				if err != nil {
					return false, err.Error()
				}
				f := strings.Fields(string(out))
				return len(f) > 0 && f[0] == want, string(out)
			})
		}
	}
	// The ClusterIP is served (user-space service proxy) from the host and
	// from pods, spreading connections over both pods; a LoadBalancer
	// Service gets a VIP on the bridge in its status, and serves too.
	seen := map[string]bool{}
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	poll(t, "both pods answer through the ClusterIP", 20*time.Second, func() (bool, string) {
		reply, err := getEcho(fresh, "http://"+net.JoinHostPort(clusterIP, "8080")+"/")
		if err != nil {
			return false, err.Error()
		}
		seen[reply.Pod] = true
		return len(seen) == 2, fmt.Sprintf("pods seen: %v", seen)
	})
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", netnsNames[1], "curl", "-sS", "-m", "5", "http://echo.lc-test.svc:8080/from-pod").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"path": "/from-pod"`) {
			t.Errorf("pod to Service name: %v: %s", err, out)
		}
	}
	lb := svc.DeepCopy()
	lb.ObjectMeta = metav1.ObjectMeta{Name: "echo-lb", Namespace: testNS}
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Spec.Ports = []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(3000)}}
	if _, err := cs.CoreV1().Services(testNS).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var vip string
	poll(t, "LoadBalancer Service gets a VIP", 20*time.Second, func() (bool, string) {
		got, err := cs.CoreV1().Services(testNS).Get(ctx, "echo-lb", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if ing := got.Status.LoadBalancer.Ingress; len(ing) == 1 {
			vip = ing[0].IP
		}
		return vip != "", fmt.Sprintf("%+v", got.Status.LoadBalancer)
	})
	if ip := net.ParseIP(vip); ip == nil || !podNet.Contains(ip) || ip.String() == c.NodeIP || c.LoadBalancerIP(testNS, "echo-lb") != vip {
		t.Fatalf("VIP %s: want an address of the bridge's network other than the node's", vip)
	}
	poll(t, "the VIP serves", 20*time.Second, func() (bool, string) {
		reply, err := getEcho(fresh, "http://"+vip+"/lb")
		if err != nil {
			return false, err.Error()
		}
		return reply.Path == "/lb" && reply.Namespace == testNS, fmt.Sprintf("%+v", reply)
	})

	// Pod logs through the apiserver (the kubelet API), with sinceTime as
	// the conformance suite's mirror tests read them.
	logName := endpoints[0].TargetRef.Name
	poll(t, "pod logs through the apiserver", 20*time.Second, func() (bool, string) {
		b, err := cs.CoreV1().Pods(testNS).GetLogs(logName, &corev1.PodLogOptions{
			Container: "echo", SinceTime: &metav1.Time{Time: depStart.Add(-time.Second)},
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

	// The Secret volume is mounted only in the pods' mount namespaces.
	if _, err := os.Stat(filepath.Join(tlsMount, "crt")); err == nil {
		t.Errorf("%s/crt is visible on the host: the volume mount leaked out of the pod", tlsMount)
	}

	// A crashed container is restarted and becomes Ready again.
	if err := syscall.Kill(podPIDs[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, "crashed container restarted and Ready", 30*time.Second, func() (bool, string) {
		p, err := cs.CoreV1().Pods(testNS).Get(ctx, byName[endpoints[0].TargetRef.Name].Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ContainerStatuses) != 1 {
			return false, "no container status"
		}
		st := p.Status.ContainerStatuses[0]
		return st.RestartCount >= 1 && st.Ready, fmt.Sprintf("restarts %d ready %t", st.RestartCount, st.Ready)
	})
	sb := c.Sandboxes()[podUIDs[0]]
	if len(sb.PIDs) != 1 || sb.PIDs[0] == podPIDs[0] {
		t.Fatalf("after the crash the sandbox runs %v (old pid %d)", sb.PIDs, podPIDs[0])
	}
	podPIDs = append(podPIDs, sb.PIDs[0])
	if _, err := getEcho(httpc, "http://"+net.JoinHostPort(endpoints[0].Addresses[0], "3000")+"/"); err != nil {
		t.Fatalf("restarted pod does not answer: %v", err)
	}

	// An image with no local binary fails the pod with a clear reason.
	if _, err := cs.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "unmapped image fails the pod", 20*time.Second, func() (bool, string) {
		p, err := cs.CoreV1().Pods(testNS).Get(ctx, "nginx", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == localcluster.ReasonUnsupportedImage &&
				strings.Contains(p.Status.Message, `"nginx:1.27"`),
			fmt.Sprintf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})

	// A pod's graceful deletion: preStop sleep, endpoints, service proxy.
	termStart := time.Now()
	testGracefulTermination(t, ctx, cs, c)
	t.Logf("graceful termination checked in %s", time.Since(termStart).Round(time.Millisecond))

	// Deleting the Deployment removes the pods, their processes and their
	// namespaces.
	if err := cs.AppsV1().Deployments(testNS).Delete(ctx, "echo", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	poll(t, "echo pods deleted", 60*time.Second, func() (bool, string) {
		pods, err := cs.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: "app=echo"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
	poll(t, "echo sandboxes gone", 20*time.Second, func() (bool, string) {
		sbs := c.Sandboxes()
		for _, uid := range podUIDs {
			if _, ok := sbs[uid]; ok {
				return false, "sandbox of " + string(uid) + " still runs"
			}
		}
		return true, ""
	})
	for _, pid := range podPIDs {
		if localcluster.ProcessAlive(pid) {
			t.Errorf("pod process %d still runs after the Deployment was deleted", pid)
		}
	}
	left, err := localcluster.HarnessNetns()
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range netnsNames {
		for _, l := range left {
			if l == ns {
				t.Errorf("network namespace %s still exists after its pod was deleted", ns)
			}
		}
	}
	if _, err := os.Stat(tlsMount); err == nil {
		t.Errorf("mount target %s was not removed after its pods were deleted", tlsMount)
	}
	if _, err := cs.CoreV1().Pods(testNS).Get(ctx, "nginx", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	// Stop: nothing remains.
	stopStart := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	t.Logf("cluster stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	for _, pid := range append(controlPlane, podPIDs...) {
		if localcluster.ProcessAlive(pid) {
			t.Errorf("process %d still runs after Stop", pid)
		}
	}
	if left, err := localcluster.HarnessNetns(); err != nil || len(left) != 0 {
		t.Errorf("network namespaces left after Stop: %v (%v)", left, err)
	}
	if entries, err := os.ReadDir("/etc/netns"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "cxp-") {
				t.Errorf("/etc/netns/%s left after Stop", e.Name())
			}
		}
	}
	if localcluster.LinkExists(c.Bridge()) {
		t.Errorf("bridge %s left after Stop", c.Bridge())
	}
}

func poolOf(cert *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(cert)
	return p
}

// dumpLogs prints the tail of every log the cluster wrote.
func dumpLogs(t *testing.T, dir string) {
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("==== %s ====\n%s", path, b)
		return nil
	})
}
