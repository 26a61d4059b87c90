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

package discovery_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/discovery/bootstrap"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/proxy"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The envtest apiserver (real TokenRequest and TokenReview) starts once, on
// the first test that needs it.
var api testkit.Envtest

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

// serviceAccountToken creates ns/sa (if absent) and returns a real token for
// it with the given audience, via the TokenRequest API.
func serviceAccountToken(t *testing.T, ns, sa, audience string) string {
	t.Helper()
	ctx, k8s := context.Background(), api.Client(t)
	_ = k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	_ = k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	tr, err := api.Clientset(t).CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, sa, err)
	}
	return tr.Status.Token
}

// startBootstrap serves SVID bootstrap on 127.0.0.1 with the real
// TokenReviewer.
func startBootstrap(t *testing.T, p *pki, ttl time.Duration) (addr string, reg *prometheus.Registry) {
	addr, reg, _ = startBootstrapStoppable(t, p, ttl)
	return addr, reg
}

func startBootstrapStoppable(t *testing.T, p *pki, ttl time.Duration) (addr string, reg *prometheus.Registry, stop func()) {
	t.Helper()
	reg = prometheus.NewRegistry()
	b, err := bootstrap.NewServer(bootstrap.Options{
		CA:         p.ca,
		SVID:       p.serving,
		Reviewer:   &identity.TokenReviewer{Client: api.Client(t), Audience: names.TokenAudience},
		Authorizer: testAuthorizer(),
		TTL:        ttl,
		Registerer: reg,
		Log:        testr.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, lis) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return lis.Addr().String(), reg, stop
}

// testApplier records what the client applies, validating like the proxy
// does; a listener on failPort fails to bind (the snapshot is rejected).
// Binding succeeds for every other listener port.
type testApplier struct {
	mu       sync.Mutex
	failPort int32
	applied  []*snapshot.Snapshot
	bound    []int32
	cb       func([]int32)
}

func (a *testApplier) Apply(s *snapshot.Snapshot) error {
	if err := snapshot.Validate(s); err != nil {
		return err
	}
	var ports []int32
	for _, l := range s.Listeners {
		if l.Port == a.failPort {
			return fmt.Errorf("listen tcp :%d: bind: address already in use", l.Port)
		}
		ports = append(ports, l.Port)
	}
	a.mu.Lock()
	a.applied = append(a.applied, s)
	changed := !slices.Equal(a.bound, ports)
	a.bound = ports
	cb := a.cb
	a.mu.Unlock()
	if changed && cb != nil {
		cb(ports)
	}
	return nil
}

func (a *testApplier) BoundPorts() []int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.bound)
}

func (a *testApplier) OnBoundPortsChange(f func([]int32)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cb = f
}

// current is the version of the snapshot in force ("" before any).
func (a *testApplier) current(t *testing.T) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.applied) == 0 {
		return ""
	}
	return mustVersion(t, a.applied[len(a.applied)-1])
}

// degradableReadiness is the proxy's Readiness plus the "ready but
// degraded" note the client sets while disconnected.
type degradableReadiness struct {
	*proxy.Readiness
	mu   sync.Mutex
	note string
}

func (d *degradableReadiness) Degraded(note string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note = note
}

func (d *degradableReadiness) Ready() {
	d.mu.Lock()
	d.note = ""
	d.mu.Unlock()
	d.Readiness.Ready()
}

func (d *degradableReadiness) Note() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.note
}

type proxyFixture struct {
	client    *discovery.Client
	applier   *testApplier
	readiness *degradableReadiness
	reg       *prometheus.Registry
	done      chan error
	cancel    context.CancelFunc
}

// startProxyClient runs a discovery client as the given ServiceAccount, with
// only a token file, a trust bundle file and the endpoints.
func startProxyClient(t *testing.T, p *pki, bootstrapAddr, sa string, scope snapshot.Scope, endpoints ...string) *proxyFixture {
	t.Helper()
	return startProxyClientWith(t, p, bootstrapAddr, sa, scope, nil, endpoints...)
}

// startProxyClientWith is startProxyClient with configure applied to the
// client's options first.
func startProxyClientWith(t *testing.T, p *pki, bootstrapAddr, sa string, scope snapshot.Scope, configure func(*discovery.ClientOptions), endpoints ...string) *proxyFixture {
	t.Helper()
	ns := installNS
	if scope.Kind == snapshot.ScopeGateway {
		ns = scope.Namespace
	}
	dir := t.TempDir()
	tokenPath, bundlePath := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenPath, []byte(serviceAccountToken(t, ns, sa, names.TokenAudience)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundlePath, p.ca.BundlePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, e := range endpoints {
		eps = append(eps, "https://"+e)
	}
	f := &proxyFixture{applier: &testApplier{failPort: 6666}, readiness: &degradableReadiness{Readiness: proxy.NewReadiness("starting")}, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	opts := discovery.ClientOptions{
		Endpoints:         eps,
		BootstrapEndpoint: "https://" + bootstrapAddr,
		TokenPath:         tokenPath,
		TrustBundlePath:   bundlePath,
		ServerID:          p.serverID,
		Scope:             scope,
		NodeID:            "node-" + sa,
		Applier:           f.applier,
		Readiness:         f.readiness,
		Registerer:        f.reg,
		Log:               testr.New(t),
	}
	if configure != nil {
		configure(&opts)
	}
	c, err := discovery.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.client = c
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { f.done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-f.done:
		case <-time.After(waitFor):
			t.Error("client did not stop")
		}
	})
	return f
}

func TestClientEndToEnd(t *testing.T) {
	api.Config(t) // the apiserver starts before the PKI and SVID clocks do
	p := newPKI(t)
	bootstrapAddr, bootReg := startBootstrap(t, p, 0)
	standby := startServer(t, p, false, "")
	leader := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{18080}, "10.0.0.1")
	standby.publish(t, v1)
	leader.publish(t, v1)

	f := startProxyClient(t, p, bootstrapAddr, names.SharedProxyServiceAccount, shared, standby.addr, leader.addr)
	if f.readiness.Reason() == "" {
		t.Fatal("/readyz must fail before the first snapshot")
	}
	testkit.EventuallyWithin(t, waitFor, "v1 applied", func() bool { return f.applier.current(t) == mustVersion(t, v1) })
	testkit.EventuallyWithin(t, waitFor, "ready after the first snapshot", func() bool { return f.readiness.Reason() == "" })
	if got := metric(t, standby.reg, "coxswain_discovery_stream_rejections_total", map[string]string{"code": "FailedPrecondition"}); got < 1 {
		t.Fatalf("the standby was not dialled first (rejections %v)", got)
	}
	if got := metric(t, bootReg, "coxswain_discovery_bootstrap_total", map[string]string{"result": "issued"}); got != 1 {
		t.Fatalf("bootstraps issued = %v, want 1", got)
	}
	// Bound ports were reported and the snapshot acked: programmed.
	testkit.EventuallyWithin(t, waitFor, "Gateway programmed", func() bool {
		st := leader.GatewayState("apps", "gw", 1)
		n, ok := st.Proxies, st.Programmed()
		return n == 1 && ok
	})

	// A snapshot the proxy cannot apply is nacked (the delta, then the full
	// snapshot the server answers with); the last good one stays.
	bad := snap(shared, "gw", 2, []int32{18080, 6666}, "10.0.0.1")
	leader.publish(t, bad)
	testkit.EventuallyWithin(t, waitFor, "the server to count the Nacks", func() bool {
		return metric(t, leader.reg, "coxswain_discovery_nacks_total", map[string]string{"scope": "shared"}) == 2
	})
	if got := metric(t, f.reg, "coxswain_proxy_discovery_nacks_total", nil); got != 2 {
		t.Fatalf("client nacks = %v, want 2", got)
	}
	if f.applier.current(t) != mustVersion(t, v1) || f.client.Version() != mustVersionIn(t, v1, discovery.RichestLayout) {
		t.Fatal("a rejected snapshot must leave the last good one in force")
	}
	if leader.GatewayState("apps", "gw", 2).Programmed() {
		t.Fatal("a nacked generation must not be programmed")
	}

	v3 := snap(shared, "gw", 3, []int32{18080, 18081}, "10.0.0.3")
	leader.publish(t, v3)
	testkit.EventuallyWithin(t, waitFor, "v3 applied", func() bool { return f.applier.current(t) == mustVersion(t, v3) })

	// The controller goes away: the proxy keeps its routing (never cleared)
	// and stays ready; once a controller is back it takes new snapshots.
	leaderAddr := leader.addr
	leader.stop()
	testkit.EventuallyWithin(t, waitFor, "the client to notice the disconnect", func() bool { return !f.client.Connected() })
	if f.applier.current(t) != mustVersion(t, v3) {
		t.Fatal("the routing snapshot changed while disconnected")
	}
	if r := f.readiness.Reason(); r != "" {
		t.Fatalf("a proxy holding a snapshot must stay ready while disconnected, got %q", r)
	}
	testkit.EventuallyWithin(t, waitFor, "a degraded note while disconnected", func() bool { return f.readiness.Note() != "" })
	back := startServer(t, p, true, leaderAddr)
	v4 := snap(shared, "gw", 4, []int32{18080}, "10.0.0.4")
	back.publish(t, v4)
	testkit.EventuallyWithin(t, waitFor, "v4 applied after the controller returned", func() bool { return f.applier.current(t) == mustVersion(t, v4) })
	if n := f.readiness.Note(); n != "" {
		t.Fatalf("the degraded note must clear once connected, got %q", n)
	}
	testkit.EventuallyWithin(t, waitFor, "programmed on the new leader", func() bool {
		st := back.GatewayState("apps", "gw", 4)
		_, ok := st.Proxies, st.Programmed()
		return ok
	})
}

// speaksWire makes a test server speak wire version v (a controller of
// another release).
func speaksWire(v uint32) func(*discovery.Server) {
	return func(s *discovery.Server) { discovery.SetWireVersionForTest(s, v) }
}

// TestClientServesThroughWireVersionMismatch: the controller is upgraded
// to a release that speaks another wire version. The proxy keeps its last
// good snapshot in force and stays ready (degraded, saying why), asks
// again every WireMismatchRetry, and takes snapshots again once the
// controller is rolled back.
func TestClientServesThroughWireVersionMismatch(t *testing.T) {
	api.Config(t)
	p := newPKI(t)
	bootstrapAddr, _ := startBootstrap(t, p, 0)
	old := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{18097}, "10.0.0.1")
	old.publish(t, v1)
	f := startProxyClientWith(t, p, bootstrapAddr, names.SharedProxyServiceAccount, shared,
		func(o *discovery.ClientOptions) { o.WireMismatchRetry = 200 * time.Millisecond }, old.addr)
	testkit.EventuallyWithin(t, waitFor, "v1 applied and ready", func() bool {
		return f.applier.current(t) == mustVersion(t, v1) && f.readiness.Reason() == ""
	})

	old.stop()
	newer := startServer(t, p, true, old.addr, speaksWire(discovery.WireVersion+1))
	testkit.EventuallyWithin(t, waitFor, "refused twice (the client keeps asking)", func() bool {
		return metric(t, newer.reg, "coxswain_discovery_stream_rejections_total", map[string]string{"code": "FailedPrecondition"}) >= 2
	})
	select {
	case err := <-f.done:
		f.done <- err
		t.Fatalf("Run returned %v on a wire version mismatch; it must keep serving", err)
	default:
	}
	if r := f.readiness.Reason(); r != "" {
		t.Fatalf("not ready during the mismatch (%q): its endpoints would be removed and traffic lost", r)
	}
	if note := f.readiness.Note(); !strings.Contains(note, discovery.WireMismatchMessage) {
		t.Fatalf("degraded note %q does not name the wire version mismatch", note)
	}
	if f.applier.current(t) != mustVersion(t, v1) {
		t.Fatal("the last good snapshot was not kept")
	}
	if got := metric(t, f.reg, "coxswain_proxy_discovery_wire_version_mismatch", nil); got != 1 {
		t.Fatalf("coxswain_proxy_discovery_wire_version_mismatch = %v, want 1", got)
	}

	newer.stop()
	back := startServer(t, p, true, old.addr)
	v2 := snap(shared, "gw", 2, []int32{18097}, "10.0.0.2")
	back.publish(t, v2)
	testkit.EventuallyWithin(t, waitFor, "v2 applied after the rollback", func() bool { return f.applier.current(t) == mustVersion(t, v2) })
	testkit.EventuallyWithin(t, waitFor, "no longer degraded", func() bool { return f.readiness.Note() == "" && f.readiness.Reason() == "" })
	if got := metric(t, f.reg, "coxswain_proxy_discovery_wire_version_mismatch", nil); got != 0 {
		t.Fatalf("coxswain_proxy_discovery_wire_version_mismatch = %v after the rollback, want 0", got)
	}
}

// TestClientWithoutSnapshotWaitsOutWireVersionMismatch: a new proxy that
// has never had a snapshot stays not ready, with the mismatch as its
// reason, and keeps asking instead of exiting into a crash loop. The
// reason names the mismatch also when the server's refusal arrives before
// the client's first port report is sent (that send then fails with EOF,
// and the refusal is what the stream's Recv says).
func TestClientWithoutSnapshotWaitsOutWireVersionMismatch(t *testing.T) {
	api.Config(t)
	p := newPKI(t)
	for _, portsDelay := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprintf("ports reported after %v", portsDelay), func(t *testing.T) {
			clientWaitsOutWireMismatch(t, p, portsDelay)
		})
	}
}

func clientWaitsOutWireMismatch(t *testing.T, p *pki, portsDelay time.Duration) {
	bootstrapAddr, _ := startBootstrap(t, p, 0)
	srv := startServer(t, p, true, "", speaksWire(discovery.WireVersion+1))
	f := startProxyClientWith(t, p, bootstrapAddr, names.SharedProxyServiceAccount, shared,
		func(o *discovery.ClientOptions) {
			o.WireMismatchRetry = 200 * time.Millisecond
			o.Applier = slowPortsApplier{Applier: o.Applier, delay: portsDelay}
		}, srv.addr)
	testkit.EventuallyWithin(t, waitFor, "refused twice", func() bool {
		return metric(t, srv.reg, "coxswain_discovery_stream_rejections_total", map[string]string{"code": "FailedPrecondition"}) >= 2
	})
	select {
	case err := <-f.done:
		f.done <- err
		t.Fatalf("Run returned %v; it must keep asking", err)
	default:
	}
	if r := f.readiness.Reason(); !strings.Contains(r, discovery.WireMismatchMessage) {
		t.Fatalf("readiness reason %q does not name the wire version mismatch", r)
	}
}

// slowPortsApplier reads the bound ports after a delay, holding the
// client's first port report back.
type slowPortsApplier struct {
	discovery.Applier
	delay time.Duration
}

func (a slowPortsApplier) BoundPorts() []int32 {
	time.Sleep(a.delay)
	return a.Applier.BoundPorts()
}

func TestClientRebootstrapsAtHalfLife(t *testing.T) {
	api.Config(t)
	p := newPKI(t)
	// 4s SVIDs: the client renews about every 2s and reconnects, keeping
	// its routes.
	bootstrapAddr, bootReg := startBootstrap(t, p, 4*time.Second)
	srv := startServer(t, p, true, "")
	v1 := snap(dedicated, "web", 1, []int32{18090}, "10.0.0.1")
	if err := srv.Publish([]*snapshot.Snapshot{v1}); err != nil {
		t.Fatal(err)
	}
	f := startProxyClient(t, p, bootstrapAddr, "web-coxswain", dedicated, srv.addr)
	testkit.EventuallyWithin(t, waitFor, "v1 applied", func() bool { return f.applier.current(t) == mustVersion(t, v1) })
	testkit.EventuallyWithin(t, waitFor, "a second bootstrap", func() bool {
		return metric(t, bootReg, "coxswain_discovery_bootstrap_total", map[string]string{"result": "issued"}) >= 2
	})
	testkit.EventuallyWithin(t, waitFor, "a full snapshot on the renewed stream", func() bool {
		return metric(t, srv.reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": "full"}) >= 2
	})
	f.applier.mu.Lock()
	applies := len(f.applier.applied)
	f.applier.mu.Unlock()
	if applies != 1 {
		t.Fatalf("an identical snapshot after reconnect must not be re-applied (applied %d times)", applies)
	}
	if f.applier.current(t) != mustVersion(t, v1) {
		t.Fatal("routes changed across the SVID renewal")
	}
}

func TestClientKeepsStreamingWhenRenewalFails(t *testing.T) {
	api.Config(t)
	p := newPKI(t)
	bootstrapAddr, _, stopBootstrap := startBootstrapStoppable(t, p, 8*time.Second)
	srv := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{18095}, "10.0.0.1")
	if err := srv.Publish([]*snapshot.Snapshot{v1}); err != nil {
		t.Fatal(err)
	}
	f := startProxyClient(t, p, bootstrapAddr, names.SharedProxyServiceAccount, shared, srv.addr)
	testkit.EventuallyWithin(t, waitFor, "v1 applied", func() bool { return f.applier.current(t) == mustVersion(t, v1) })
	stopBootstrap()
	testkit.EventuallyWithin(t, waitFor, "a failed renewal", func() bool {
		return metric(t, f.reg, "coxswain_proxy_discovery_bootstrap_failures_total", nil) >= 1
	})
	// The SVID is still valid: the client streams on with it.
	v2 := snap(shared, "gw", 2, []int32{18095}, "10.0.0.2")
	if err := srv.Publish([]*snapshot.Snapshot{v2}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "v2 applied with the old SVID", func() bool { return f.applier.current(t) == mustVersion(t, v2) })
}
