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

package controlplane_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/discovery/controlplane"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/proxy"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	ns = "coxswain-system"
	// waitFor bounds every wait in these tests.
	waitFor = 30 * time.Second
)

// recorder is a minimal data plane: it validates and records snapshots and
// reports every listener port as bound.
type recorder struct {
	mu      sync.Mutex
	applied []*snapshot.Snapshot
	bound   []int32
	cb      func([]int32)
	refuse  error // set: Apply fails with it, as a proxy that cannot bind
}

func (r *recorder) Apply(s *snapshot.Snapshot) error {
	if err := snapshot.Validate(s); err != nil {
		return err
	}
	r.mu.Lock()
	refuse := r.refuse
	r.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	var ports []int32
	for _, l := range s.Listeners {
		ports = append(ports, l.Port)
	}
	r.mu.Lock()
	r.applied, r.bound = append(r.applied, s), ports
	cb := r.cb
	r.mu.Unlock()
	if cb != nil {
		cb(ports)
	}
	return nil
}

func (r *recorder) BoundPorts() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bound)
}

func (r *recorder) OnBoundPortsChange(f func([]int32)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cb = f
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.applied)
}

// TestControllerAndProxyWiring runs the controller side as `serve
// controller` would (a manager with AddToManager) and a proxy client that
// has only a token, the trust ConfigMap's bundle and the endpoints.
func TestControllerAndProxyWiring(t *testing.T) {
	cp := startControlPlane(t)
	ctx, srv := cp.ctx, cp.srv
	dp, readiness := cp.startProxy(t)

	s := &snapshot.Snapshot{
		Scope: snapshot.SharedPool(),
		Listeners: []snapshot.Listener{{Name: "gateway/apps/gw/80", Port: 20080, ExternalPort: 80, Protocol: snapshot.ProtocolHTTP,
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*"}}}},
		Gateways: []snapshot.GatewayRef{{Namespace: "apps", Name: "gw", Generation: 1, Ports: []int32{20080}}},
	}
	if err := srv.Publish([]*snapshot.Snapshot{s}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the proxy to apply the snapshot", func() bool { return dp.count() == 1 })
	testkit.EventuallyWithin(t, waitFor, "ready", func() bool { return readiness.Reason() == "" })
	testkit.EventuallyWithin(t, waitFor, "Programmed", func() bool {
		st := srv.GatewayState("apps", "gw", 1)
		n, ok := st.Proxies, st.Programmed()
		return n == 1 && ok
	})
	// The proxy refuses generation 2: the server reports the refusal with
	// the proxy's node id and words, for the status writer.
	dp.mu.Lock()
	dp.refuse = errors.New("listen tcp :20081: bind: address already in use")
	dp.mu.Unlock()
	s2 := *s
	s2.Gateways = []snapshot.GatewayRef{{Namespace: "apps", Name: "gw", Generation: 2, Ports: []int32{20080}}}
	if err := srv.Publish([]*snapshot.Snapshot{&s2}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the refusal of generation 2", func() bool {
		st := srv.GatewayState("apps", "gw", 2)
		return len(st.Rejections) == 1 && st.Rejections[0].NodeID == "shared-proxy-0" &&
			strings.Contains(st.Rejections[0].Detail, "bind: address already in use") && st.Ready == 0 && st.Proxies == 1
	})
	if st := srv.GatewayState("apps", "gw", 1); len(st.Rejections) != 1 || st.Ready != 1 {
		t.Fatalf("generation 1 stays served (ready=%d) and its newer snapshot refused (%d rejections)", st.Ready, len(st.Rejections))
	}
	// The CA Secret was created in auto mode.
	sec := &corev1.Secret{}
	if err := cp.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.CASecretName}, sec); err != nil {
		t.Fatalf("CA Secret: %v", err)
	}
}

// controlPlane is an envtest apiserver and a manager running what
// AddToManager adds, on loopback addresses.
type controlPlane struct {
	ctx                  context.Context
	cancel               context.CancelFunc
	c                    client.Client
	cs                   kubernetes.Interface
	srv                  *discovery.Server
	streamAddr, bootAddr string
}

// startControlPlane starts the apiserver and the manager; cleanups stop
// them.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	// A control plane of its own: the manager owns the CA Secret and the
	// trust ConfigMap, which the test asserts it creates.
	api := testkit.StartEnvtest(t)
	cfg := api.Config(t)
	cp := &controlPlane{c: api.Client(t), cs: api.Clientset(t)}
	cp.ctx, cp.cancel = context.WithCancel(context.Background())
	t.Cleanup(cp.cancel)
	if err := cp.c.Create(cp.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := cp.c.Create(cp.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SharedProxyServiceAccount}}); err != nil {
		t.Fatal(err)
	}

	ctrl.SetLogger(testr.New(t))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		t.Fatal(err)
	}
	var f controlplane.Flags
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	f.AddFlags(fs)
	cp.streamAddr, cp.bootAddr = testkit.FreeAddr(t), testkit.FreeAddr(t)
	if err := fs.Parse([]string{"--discovery-bind-address=" + cp.streamAddr, "--discovery-bootstrap-bind-address=" + cp.bootAddr}); err != nil {
		t.Fatal(err)
	}
	cp.srv, _, err = controlplane.AddToManager(mgr, f, controlplane.Options{
		Namespace:             ns,
		GatewayServiceAccount: func(string, string) (string, bool) { return "", false },
	})
	if err != nil {
		t.Fatal(err)
	}
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(cp.ctx) }()
	t.Cleanup(func() { cp.cancel(); <-mgrDone })
	return cp
}

// startProxy runs a discovery client for the shared pool configured from
// its flags alone, with what a proxy pod mounts; a cleanup stops it.
func (cp *controlPlane) startProxy(t *testing.T) (*recorder, *proxy.Readiness) {
	t.Helper()
	tokenPath, bundlePath := cp.proxyMounts(t)
	var pf discovery.ProxyFlags
	pfs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	pf.AddFlags(pfs)
	if err := pfs.Parse([]string{
		"--discovery-endpoint=https://" + cp.streamAddr,
		"--discovery-bootstrap-endpoint=https://" + cp.bootAddr,
		"--discovery-token-path=" + tokenPath,
		"--discovery-trust-bundle=" + bundlePath,
	}); err != nil {
		t.Fatal(err)
	}
	opts, err := pf.ClientOptions(snapshot.SharedPool(), "shared-proxy-0")
	if err != nil {
		t.Fatal(err)
	}
	dp := &recorder{}
	readiness := proxy.NewReadiness("starting")
	opts.Applier, opts.Readiness, opts.Log = dp, readiness, testr.New(t)
	cl, err := discovery.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	clientDone := make(chan error, 1)
	go func() { clientDone <- cl.Run(cp.ctx) }()
	t.Cleanup(func() { cp.cancel(); <-clientDone })
	return dp, readiness
}

// proxyMounts writes what a proxy pod mounts, the trust ConfigMap's bundle
// (once the controller has published it) and a projected token, and
// returns their paths.
func (cp *controlPlane) proxyMounts(t *testing.T) (tokenPath, bundlePath string) {
	t.Helper()
	trust := &corev1.ConfigMap{}
	testkit.EventuallyWithin(t, waitFor, "the trust ConfigMap", func() bool {
		return cp.c.Get(cp.ctx, client.ObjectKey{Namespace: ns, Name: names.TrustBundleConfigMapName}, trust) == nil
	})
	tr, err := cp.cs.CoreV1().ServiceAccounts(ns).CreateToken(cp.ctx, names.SharedProxyServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{names.TokenAudience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenPath, bundlePath = filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenPath, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, []byte(trust.Data["ca.crt"]), 0o600); err != nil {
		t.Fatal(err)
	}
	return tokenPath, bundlePath
}
