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

// Package localcluster runs a Kubernetes cluster without containers: etcd,
// kube-apiserver and kube-controller-manager as local processes, plus a
// small in-process kubelet that runs pods as local binaries in network
// namespaces wired into a bridge. It needs root and iproute2. See
// docs/localcluster.md.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubernetesVersion is the version of the control-plane binaries the
// harness expects in the envtest asset directory.
const KubernetesVersion = "1.37.2"

// Controllers are the kube-controller-manager controllers the harness runs.
// root-ca-cert-publisher fills the kube-root-ca.crt ConfigMap that every
// service-account token volume projects.
var Controllers = []string{
	"deployment", "replicaset", "endpointslice", "namespace", "garbagecollector",
	"serviceaccount", "serviceaccount-token", "root-ca-cert-publisher",
}

// Config configures a local cluster. Zero values take the defaults.
type Config struct {
	// AssetsDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: $KUBEBUILDER_ASSETS, else the envtest asset directory.
	AssetsDir string
	// Dir is the work directory (etcd data, keys, kubeconfig, pod files,
	// logs). It is wiped at start. Default: <state dir>/run.
	Dir string
	// Binaries maps images to local binaries.
	Binaries Binaries
	// NodeName is the one Node's name. Default "localcluster".
	NodeName string
	// Bridge is the pod bridge. Default "cxbr0".
	Bridge string
	// BridgeCIDR is the bridge's address and the pod network. Default
	// "10.244.0.1/16"; the apiserver listens on the bridge address.
	BridgeCIDR string
	// ServiceCIDR is the Service ClusterIP range. Default "10.96.0.0/16".
	ServiceCIDR string
	// StartTimeout bounds Start. Default 2 minutes.
	StartTimeout time.Duration
	// LockWait is how long Start waits for another local cluster on this
	// machine to stop (there is one bridge, so one cluster at a time).
	// Default 0: fail at once. Tests running in parallel packages set it.
	LockWait time.Duration
	// Logf receives progress and pod events. Default: log.Printf to stderr.
	Logf func(format string, args ...any)
}

// Cluster is a running local cluster.
type Cluster struct {
	cfg Config

	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// RESTConfig is an admin client configuration.
	RESTConfig *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// APIServer is the apiserver URL (https://<bridge address>:<port>).
	APIServer string
	// NodeIP is the Node's address (the bridge address), reachable from
	// the host and from every pod.
	NodeIP string

	lock    *instanceLock
	reg     *pidRegistry
	net     *network
	etcd    *process
	api     *process
	kcm     *process
	kubelet *kubelet
	stopped bool
}

func (c *Config) defaults() error {
	if c.AssetsDir == "" {
		c.AssetsDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if c.AssetsDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		c.AssetsDir = filepath.Join(home, ".local", "share", "kubebuilder-envtest", "k8s", KubernetesVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	}
	if c.Dir == "" {
		c.Dir = filepath.Join(StateDir(), "run")
	}
	if c.NodeName == "" {
		c.NodeName = "localcluster"
	}
	if c.Bridge == "" {
		c.Bridge = "cxbr0"
	}
	if c.BridgeCIDR == "" {
		c.BridgeCIDR = "10.244.0.1/16"
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 2 * time.Minute
	}
	for _, b := range []*string{&c.Binaries.EchoBasic, &c.Binaries.Coxswain} {
		if *b == "" {
			continue
		}
		abs, err := filepath.Abs(*b)
		if err != nil {
			return err
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("binary %s is not an executable file", abs)
		}
		*b = abs
	}
	if c.Logf == nil {
		l := log.New(os.Stderr, "localcluster: ", log.LstdFlags)
		c.Logf = l.Printf
	}
	return nil
}

// StateDir holds the instance lock and the PID registry. It is fixed per
// machine so a second cluster, or a run after a crash, finds them.
func StateDir() string {
	if st, err := os.Stat("/run"); err == nil && st.IsDir() {
		return "/run/coxswain-localcluster"
	}
	return filepath.Join(os.TempDir(), "coxswain-localcluster")
}

// Preflight checks what the harness needs from the machine: root, iproute2
// and the control-plane binaries. Its errors say how to fix them.
func Preflight(assetsDir string) error {
	if os.Geteuid() != 0 {
		return errors.New("the local cluster needs root (network namespaces, a bridge, bind mounts); run it as root, as CI does")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the local cluster needs iproute2's `ip`: apt-get install -y iproute2 (or `make localcluster-deps`)")
	}
	if assetsDir == "" {
		return nil
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if st, err := os.Stat(filepath.Join(assetsDir, b)); err != nil || st.IsDir() {
			return fmt.Errorf("no %s in %s: build the assets with `make localcluster-assets` "+
				"(ENVTEST_EXTRA_BINARIES=kube-controller-manager hack/envtest/build.sh %s)", b, assetsDir, assetsDir)
		}
	}
	return nil
}

// Start brings up a cluster: stale leftovers removed, bridge, etcd,
// kube-apiserver, kube-controller-manager and the local kubelet. Every step
// is bounded; on error everything started so far is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if err := Preflight(cfg.AssetsDir); err != nil {
		return nil, err
	}
	state := StateDir()
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	lock, err := acquireLock(ctx, filepath.Join(state, "lock"), cfg.LockWait)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	c := &Cluster{cfg: cfg, lock: lock}
	if err := c.start(ctx); err != nil {
		if serr := c.Stop(); serr != nil {
			cfg.Logf("stopping after a failed start: %v", serr)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("local cluster did not start within %s: %w", cfg.StartTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	cfg := c.cfg
	state := StateDir()
	pidsFile := filepath.Join(state, "pids")
	if killed, err := killRecorded(pidsFile); err != nil {
		return fmt.Errorf("stopping leftovers of an earlier run: %w", err)
	} else if len(killed) > 0 {
		cfg.Logf("stopped leftovers of an earlier run: %s", strings.Join(killed, ", "))
	}
	c.reg = newPIDRegistry(pidsFile)
	mountsRecord := filepath.Join(state, "mounts")
	if removed := removeRecordedMountTargets(mountsRecord); len(removed) > 0 {
		cfg.Logf("removed mount targets an earlier run left: %s", strings.Join(removed, ", "))
	}

	var err error
	c.net, err = newNetwork(cfg.Bridge, cfg.BridgeCIDR)
	if err != nil {
		return err
	}
	if err := c.net.setup(); err != nil {
		return err
	}
	nodeIP := c.net.gateway.String()
	c.NodeIP = nodeIP

	if err := os.RemoveAll(cfg.Dir); err != nil {
		return err
	}
	logs := filepath.Join(cfg.Dir, "logs")
	for _, d := range []string{cfg.Dir, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	serviceIP, err := firstServiceIP(cfg.ServiceCIDR)
	if err != nil {
		return err
	}
	keys, err := newPKI(filepath.Join(cfg.Dir, "pki"), []net.IP{c.net.gateway, net.ParseIP("127.0.0.1"), serviceIP},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return fmt.Errorf("generating keys: %w", err)
	}

	// etcd, on loopback, with a fresh data directory.
	etcdClient, etcdPeer, err := freePort(), freePort(), error(nil)
	if etcdClient == 0 || etcdPeer == 0 {
		return errors.New("no free loopback port for etcd")
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	c.etcd, err = startProcess(procSpec{
		name: "etcd", path: filepath.Join(cfg.AssetsDir, "etcd"), logPath: filepath.Join(logs, "etcd.log"),
		args: []string{
			"--name=localcluster", "--data-dir=" + filepath.Join(cfg.Dir, "etcd"),
			"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=localcluster=" + peerURL, "--unsafe-no-fsync=true",
		},
		env: []string{"PATH=" + os.Getenv("PATH")},
	}, c.reg)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, c.etcd, "etcd", 30*time.Second, filepath.Join(logs, "etcd.log"), func() bool {
		resp, err := http.Get(clientURL + "/health") //nolint:noctx // bounded by the client default below
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}); err != nil {
		return err
	}
	cfg.Logf("etcd ready on %s (pid %d)", clientURL, c.etcd.pid())

	// kube-apiserver, on the bridge address: reachable from the host and
	// from pods, and a valid (non-loopback) endpoint of the kubernetes
	// Service.
	apiPort := freePort()
	if apiPort == 0 {
		return errors.New("no free port for kube-apiserver")
	}
	c.APIServer = "https://" + net.JoinHostPort(nodeIP, strconv.Itoa(apiPort))
	apiLog := filepath.Join(logs, "kube-apiserver.log")
	c.api, err = startProcess(procSpec{
		name: "kube-apiserver", path: filepath.Join(cfg.AssetsDir, "kube-apiserver"), logPath: apiLog,
		args: []string{
			"--etcd-servers=" + clientURL,
			"--bind-address=" + nodeIP, "--advertise-address=" + nodeIP, "--secure-port=" + strconv.Itoa(apiPort),
			"--cert-dir=" + filepath.Join(cfg.Dir, "apiserver-certs"),
			"--tls-cert-file=" + keys.serverCertFile, "--tls-private-key-file=" + keys.serverKeyFile,
			"--client-ca-file=" + keys.caCertFile,
			"--kubelet-client-certificate=" + keys.kubeletClientCertFile,
			"--kubelet-client-key=" + keys.kubeletClientKeyFile,
			"--kubelet-certificate-authority=" + keys.caCertFile,
			"--kubelet-preferred-address-types=InternalIP",
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + keys.saPubFile,
			"--service-account-signing-key-file=" + keys.saKeyFile,
			"--api-audiences=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=" + cfg.ServiceCIDR,
			"--allow-privileged=true",
			"--disable-admission-plugins=DefaultStorageClass,DefaultIngressClass",
		},
		env: []string{"PATH=" + os.Getenv("PATH")},
	}, c.reg)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(cfg.Dir, "kubeconfig")
	if err := keys.writeKubeconfig(kubeconfig, c.APIServer); err != nil {
		return err
	}
	c.Kubeconfig = kubeconfig
	c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c.RESTConfig.QPS, c.RESTConfig.Burst = 100, 200
	c.Client, err = kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, c.api, "kube-apiserver", 60*time.Second, apiLog, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return err == nil && strings.TrimSpace(string(body)) == "ok"
	}); err != nil {
		return err
	}
	cfg.Logf("kube-apiserver ready on %s (pid %d)", c.APIServer, c.api.pid())

	// kube-controller-manager: the controllers pods and EndpointSlices
	// need, no leader election, no serving port.
	kcmLog := filepath.Join(logs, "kube-controller-manager.log")
	c.kcm, err = startProcess(procSpec{
		name: "kube-controller-manager", path: filepath.Join(cfg.AssetsDir, "kube-controller-manager"), logPath: kcmLog,
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + strings.Join(Controllers, ","),
			"--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file=" + keys.saKeyFile,
			"--root-ca-file=" + keys.caCertFile,
			"--service-cluster-ip-range=" + cfg.ServiceCIDR,
			"--concurrent-deployment-syncs=5", "--concurrent-replicaset-syncs=5",
			"--concurrent-service-endpoint-syncs=5",
			"--endpointslice-updates-batch-period=0s",
		},
		env: []string{"PATH=" + os.Getenv("PATH")},
	}, c.reg)
	if err != nil {
		return err
	}
	// The serviceaccount controller creating "default" shows the
	// controller manager is running its controllers.
	if err := waitFor(ctx, c.kcm, "kube-controller-manager", 60*time.Second, kcmLog, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(rctx, "default", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return err
	}
	cfg.Logf("kube-controller-manager ready (pid %d)", c.kcm.pid())

	shim, err := os.Executable()
	if err != nil {
		return err
	}
	hostNS, err := mountNamespace()
	if err != nil {
		return err
	}
	c.kubelet = &kubelet{
		client: c.Client, nodeName: cfg.NodeName, net: c.net, binaries: cfg.Binaries,
		podsDir: filepath.Join(cfg.Dir, "pods"), logsDir: filepath.Join(logs, "pods"),
		apiHost: nodeIP, apiPort: strconv.Itoa(apiPort), shimPath: shim, hostMountNS: hostNS,
		reg: c.reg, logf: cfg.Logf,
		servingCert: keys.kubeletCertFile, servingKey: keys.kubeletKeyFile, caPEM: keys.caCertPEM,
		mountsRecord: mountsRecord,
	}
	if err := c.kubelet.start(ctx); err != nil {
		return fmt.Errorf("local kubelet: %w", err)
	}
	cfg.Logf("node %s ready at %s; kubeconfig %s", cfg.NodeName, nodeIP, kubeconfig)
	return nil
}

// waitFor polls ready every 100ms until it holds, the process exits, or the
// timeout passes; errors carry the tail of the process log.
func waitFor(ctx context.Context, p *process, name string, timeout time.Duration, logPath string, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during startup (%v); last log lines:\n%s", name, p.err, tail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; last log lines:\n%s", name, timeout, tail(logPath, 20))
		case <-t.C:
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const max = 64 << 10
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, max))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort picks a free TCP port on loopback (0 when none).
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// firstServiceIP is the kubernetes Service's ClusterIP (the range's first
// host address).
func firstServiceIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("service CIDR %q: want an IPv4 CIDR", cidr)
	}
	return uintToIP(ipToUint(n.IP.To4()) + 1), nil
}

// Stop stops everything in reverse order, each process by its PID, removes
// the pod namespaces and the bridge, and releases the instance lock. It is
// safe to call more than once.
func (c *Cluster) Stop() error {
	if c == nil || c.stopped {
		return nil
	}
	c.stopped = true
	var errs []error
	if c.kubelet != nil {
		if err := c.kubelet.stop(60 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range []*process{c.kcm, c.api, c.etcd} {
		if p == nil {
			continue
		}
		if err := p.stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.net != nil {
		if err := c.net.cleanup(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.reg != nil && len(errs) == 0 {
		_ = os.Remove(c.reg.path)
		_ = os.Remove(filepath.Join(StateDir(), "mounts")) // every pod released its targets
	}
	c.lock.release()
	return errors.Join(errs...)
}

// ControlPlanePIDs are the PIDs of etcd, kube-apiserver and
// kube-controller-manager.
func (c *Cluster) ControlPlanePIDs() []int {
	var pids []int
	for _, p := range []*process{c.etcd, c.api, c.kcm} {
		if p != nil {
			pids = append(pids, p.pid())
		}
	}
	return pids
}

// Sandboxes reports, by pod UID, what the local kubelet runs now.
func (c *Cluster) Sandboxes() map[types.UID]PodSandbox {
	if c.kubelet == nil {
		return nil
	}
	return c.kubelet.sandboxes()
}

// Bridge is the name of the pod bridge.
func (c *Cluster) Bridge() string { return c.cfg.Bridge }

// LogDir holds the control-plane logs and, under pods/, every container's
// log (kept after the pod is gone).
func (c *Cluster) LogDir() string { return filepath.Join(c.cfg.Dir, "logs") }

// Down removes what a crashed run left behind (processes it recorded, pod
// namespaces, veths, the bridge). It refuses while a cluster is running.
func Down(bridge string) error {
	if bridge == "" {
		bridge = "cxbr0"
	}
	if err := Preflight(""); err != nil {
		return err
	}
	state := StateDir()
	if err := os.MkdirAll(state, 0o755); err != nil {
		return err
	}
	lock, err := acquireLock(context.Background(), filepath.Join(state, "lock"), 0)
	if err != nil {
		return fmt.Errorf("%w (to stop a running cluster, interrupt its `localcluster up`)", err)
	}
	defer lock.release()
	if _, err := killRecorded(filepath.Join(state, "pids")); err != nil {
		return err
	}
	removeRecordedMountTargets(filepath.Join(state, "mounts"))
	n, err := newNetwork(bridge, "10.244.0.1/16")
	if err != nil {
		return err
	}
	return n.cleanup()
}

// WaitForPodsReady waits (bounded) until every pod in namespace matching
// selector is Ready and at least want exist.
func (c *Cluster) WaitForPodsReady(ctx context.Context, namespace, selector string, want int, timeout time.Duration) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			ready := 0
			for i := range pods.Items {
				if podReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
					ready++
				}
			}
			last = fmt.Sprintf("%d pods, %d ready", len(pods.Items), ready)
			if ready >= want && ready == len(pods.Items) {
				return pods.Items, nil
			}
		} else if !apierrors.IsNotFound(err) {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pods %q in %s not ready within %s: %s", selector, namespace, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
