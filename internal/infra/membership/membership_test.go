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

package membership

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	encpem "encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testenv"
)

var (
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	scheme := runtime.NewScheme()
	if err := infrav1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	env, err := testenv.Environment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

var (
	signer = trusttest.Signer("cosmos-test", "membership")
	keys   = trusttest.KeySet(signer)
	t0     = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
)

var (
	pemMu    sync.Mutex
	pemCache = map[string]string{}
)

// pem returns a self-signed CA certificate named s, as PEM; the same name
// gives the same certificate within a test run.
func pem(s string) string {
	pemMu.Lock()
	defer pemMu.Unlock()
	if c, ok := pemCache[s]; ok {
		return c
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: s}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: t0, NotAfter: t0.Add(365 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		panic(err)
	}
	pemCache[s] = string(encpem.EncodeToMemory(&encpem.Block{Type: "CERTIFICATE", Bytes: der}))
	return pemCache[s]
}

func sign(t *testing.T, p *infrav1alpha1.Project, s trust.Signer, at time.Time) {
	t.Helper()
	sig, err := s.Sign(trust.FieldsOf(p), at)
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.TrustSignature = sig
}

func project(shard, endpoint string) *infrav1alpha1.Project {
	return &infrav1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: uuid.NewString(), Labels: map[string]string{infrav1alpha1.ShardIDLabel: shard}},
		Spec: infrav1alpha1.ProjectSpec{ShardID: shard, APIServerEndpoint: endpoint,
			AgentCA: &infrav1alpha1.AgentCA{Certificates: pem("CA1")}},
	}
}

func create(t *testing.T, p *infrav1alpha1.Project, at time.Time) *infrav1alpha1.Project {
	t.Helper()
	sign(t, p, signer, at)
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// update re-reads p, applies mutate and writes it.
func update(t *testing.T, name string, mutate func(*infrav1alpha1.Project)) *infrav1alpha1.Project {
	t.Helper()
	p := &infrav1alpha1.Project{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	mutate(p)
	if err := k8s.Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func setReady(t *testing.T, name string, status metav1.ConditionStatus) {
	t.Helper()
	p := &infrav1alpha1.Project{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: infrav1alpha1.ConditionReady, Status: status, Reason: "Test"})
	p.Status.ConsecutiveFailures++
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

type recorder struct{ ch chan Event }

func newRecorder() *recorder    { return &recorder{ch: make(chan Event, 256)} }
func (r *recorder) on(ev Event) { r.ch <- ev }
func (r *recorder) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no membership event within 15s")
		return Event{}
	}
}

func (r *recorder) expect(t *testing.T, typ EventType, name string) Event {
	t.Helper()
	ev := r.next(t)
	if ev.Type != typ || ev.Name != name {
		t.Fatalf("got event %s %s (err %v), want %s %s", ev.Type, ev.Name, ev.Err, typ, name)
	}
	return ev
}

func start(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("membership client did not stop within 10s")
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEvents(t *testing.T) {
	shard := uuid.NewString()
	rec := newRecorder()
	c, err := New(Config{ShardID: shard, RESTConfig: cfg, Keys: keys, OnEvent: rec.on, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadyzCheck(nil) == nil {
		t.Fatal("ready before the first list")
	}
	start(t, c)
	waitFor(t, "first list", c.Ready)

	a := create(t, project(shard, "a.svc:443"), t0)
	rec.expect(t, Added, a.Name)

	// Status-only update: no event, but the observation is applied.
	setReady(t, a.Name, metav1.ConditionTrue)
	b := create(t, project(shard, "b.svc:443"), t0)
	rec.expect(t, Added, b.Name)
	if m, _ := c.Get(a.Name); m.Ready != metav1.ConditionTrue {
		t.Fatalf("status observation not applied: %+v", m)
	}

	// Endpoint change: EndpointChanged only.
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.APIServerEndpoint = "a2.svc:443"
		sign(t, p, signer, t0.Add(time.Minute))
	})
	ev := rec.expect(t, EndpointChanged, a.Name)
	if ev.Previous == nil || ev.Previous.APIServerEndpoint != "a.svc:443" || ev.Member.APIServerEndpoint != "a2.svc:443" {
		t.Fatalf("endpoint event: %+v", ev)
	}
	// CA change: TrustChanged only (no reconnect).
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.AgentCA.Certificates = pem("CA1") + pem("CA2")
		sign(t, p, signer, t0.Add(2*time.Minute))
	})
	rec.expect(t, TrustChanged, a.Name)
	// Relay roots change: TrustChanged.
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.RelayRoots = pem("ROOT")
		sign(t, p, signer, t0.Add(3*time.Minute))
	})
	rec.expect(t, TrustChanged, a.Name)
	// Changing an unsigned spec field (sealed key material) produces nothing.
	update(t, a.Name, func(p *infrav1alpha1.Project) { p.Spec.AgentCA.SealedKey = []byte("sealed") })

	// Forged, unknown-key and stale changes are refused; last values kept;
	// the health observation is still applied.
	before := value(c.cfg.Metrics.TrustRefused.WithLabelValues("bad_signature"))
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.APIServerEndpoint = "evil.svc:443"
		sign(t, p, trusttest.Signer("cosmos-test", "mallory"), t0.Add(4*time.Minute))
	})
	ev = rec.expect(t, TrustRefused, a.Name)
	if !errors.Is(ev.Err, trust.ErrBadSignature) {
		t.Fatalf("refusal reason %v", ev.Err)
	}
	setReady(t, a.Name, metav1.ConditionFalse)
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.AgentCA.Certificates = pem("EVILCA")
		sign(t, p, trusttest.Signer("cosmos-unknown", "x"), t0.Add(5*time.Minute))
	})
	ev = rec.expect(t, TrustRefused, a.Name)
	if !errors.Is(ev.Err, trust.ErrUnknownKey) {
		t.Fatalf("refusal reason %v", ev.Err)
	}
	update(t, a.Name, func(p *infrav1alpha1.Project) {
		p.Spec.APIServerEndpoint = "old.svc:443"
		p.Spec.AgentCA.Certificates = pem("CA1")
		p.Spec.RelayRoots = ""
		sign(t, p, signer, t0) // validly signed, but older than the accepted signature
	})
	ev = rec.expect(t, TrustRefused, a.Name)
	if !errors.Is(ev.Err, trust.ErrStale) {
		t.Fatalf("refusal reason %v", ev.Err)
	}
	m, _ := c.Get(a.Name)
	if m.APIServerEndpoint != "a2.svc:443" || m.Certificates != pem("CA1")+pem("CA2") || m.RelayRoots != pem("ROOT") {
		t.Fatalf("refused change applied: %+v", m)
	}
	if m.Ready != metav1.ConditionFalse {
		t.Fatalf("unsigned observation not applied alongside a refused change: %v", m.Ready)
	}
	if got := value(c.cfg.Metrics.TrustRefused.WithLabelValues("bad_signature")); got <= before {
		t.Fatal("refusal not counted")
	}
	// A fresh valid signature over the current fields is accepted again.
	update(t, a.Name, func(p *infrav1alpha1.Project) { sign(t, p, signer, t0.Add(time.Hour)) })
	rec.expect(t, EndpointChanged, a.Name)
	rec.expect(t, TrustChanged, a.Name)

	// A Project first seen without a valid signature does not join.
	u := project(shard, "u.svc:443")
	if err := k8s.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	rec.expect(t, TrustRefused, u.Name)
	if _, ok := c.Get(u.Name); ok {
		t.Fatal("unsigned project joined the membership")
	}

	// Wrong spec.shardID under the right label: ignored and counted. The
	// ValidatingAdmissionPolicy may refuse it first; then only the unit test
	// below covers it.
	w := project(shard, "w.svc:443")
	w.Spec.ShardID = uuid.NewString()
	ignoredBefore := value(c.cfg.Metrics.Ignored.WithLabelValues("shard_mismatch"))
	if err := k8s.Create(context.Background(), create0(t, w)); err != nil {
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
		t.Logf("admission refused the mismatched project: %v", err)
	} else {
		waitFor(t, "shard mismatch counted", func() bool {
			return value(c.cfg.Metrics.Ignored.WithLabelValues("shard_mismatch")) > ignoredBefore
		})
		if _, ok := c.Get(w.Name); ok {
			t.Fatal("project of another shard joined")
		}
	}

	// Deletion: Removed.
	if err := k8s.Delete(context.Background(), &infrav1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Name: b.Name}}); err != nil {
		t.Fatal(err)
	}
	rec.expect(t, Removed, b.Name)
	select {
	case ev := <-rec.ch:
		t.Fatalf("unexpected event %s %s", ev.Type, ev.Name)
	default:
	}
}

// create0 signs w without creating it.
func create0(t *testing.T, p *infrav1alpha1.Project) *infrav1alpha1.Project {
	sign(t, p, signer, t0)
	return p
}

// TestWrongShardIgnored drives observe directly (no admission in the way).
func TestWrongShardIgnored(t *testing.T) {
	shard := uuid.NewString()
	rec := newRecorder()
	c, err := New(Config{ShardID: shard, RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Keys: keys, OnEvent: rec.on, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	p := project(shard, "x.svc:443")
	p.Spec.ShardID = uuid.NewString()
	sign(t, p, signer, t0)
	if c.observe(p) {
		t.Fatal("mismatched project observed as a member")
	}
	if len(c.Members()) != 0 || len(rec.ch) != 0 {
		t.Fatal("mismatched project produced membership or events")
	}
	if value(c.cfg.Metrics.Ignored.WithLabelValues("shard_mismatch")) != 1 {
		t.Fatal("mismatch not counted")
	}
}

// breaker is a transport that a test can break: requests fail and open
// response bodies (the watch stream) are cut.
type breaker struct {
	mu     sync.Mutex
	broken bool
	bodies map[*cutBody]struct{}
}

type cutBody struct {
	http.Response
	b  *breaker
	rc interface {
		Read([]byte) (int, error)
		Close() error
	}
}

func (c *cutBody) Read(p []byte) (int, error) { return c.rc.Read(p) }
func (c *cutBody) Close() error {
	c.b.mu.Lock()
	delete(c.b.bodies, c)
	c.b.mu.Unlock()
	return c.rc.Close()
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (b *breaker) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		b.mu.Lock()
		broken := b.broken
		b.mu.Unlock()
		if broken {
			return nil, errors.New("transport broken by test")
		}
		resp, err := rt.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		cb := &cutBody{b: b, rc: resp.Body}
		b.mu.Lock()
		if b.bodies == nil {
			b.bodies = map[*cutBody]struct{}{}
		}
		b.bodies[cb] = struct{}{}
		b.mu.Unlock()
		resp.Body = cb
		return resp, nil
	})
}

func (b *breaker) set(broken bool) {
	b.mu.Lock()
	b.broken = broken
	var open []*cutBody
	if broken {
		for cb := range b.bodies {
			open = append(open, cb)
		}
	}
	b.mu.Unlock()
	for _, cb := range open {
		_ = cb.rc.Close()
	}
}

// TestTransportFailureKeepsMembership: out of service until the first list;
// a broken watch and failing relists never shrink the membership; the first
// successful relist is diffed against the last known set.
func TestTransportFailureKeepsMembership(t *testing.T) {
	shard := uuid.NewString()
	a := create(t, project(shard, "a.svc:443"), t0)
	b := create(t, project(shard, "b.svc:443"), t0)

	brk := &breaker{}
	brk.set(true)
	rc := rest.CopyConfig(cfg)
	rc.WrapTransport = brk.wrap
	rec := newRecorder()
	c, err := New(Config{ShardID: shard, RESTConfig: rc, Keys: keys, OnEvent: rec.on, Log: testr.New(t),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	waitFor(t, "failed lists", func() bool { return value(c.cfg.Metrics.ListErrors) >= 2 })
	if c.Ready() || c.ReadyzCheck(nil) == nil || len(c.Members()) != 0 {
		t.Fatal("ready or populated before any list succeeded")
	}

	brk.set(false)
	waitFor(t, "first list", c.Ready)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		ev := rec.next(t)
		if ev.Type != Added {
			t.Fatalf("unexpected %s", ev.Type)
		}
		got[ev.Name] = true
	}
	if !got[a.Name] || !got[b.Name] {
		t.Fatalf("added %v", got)
	}
	// Make sure the watch is established before cutting it.
	setReady(t, a.Name, metav1.ConditionTrue)
	waitFor(t, "watch delivers", func() bool { m, _ := c.Get(a.Name); return m.Ready == metav1.ConditionTrue })

	listErrs := value(c.cfg.Metrics.ListErrors)
	brk.set(true)
	// While broken: a deletion and an addition happen on the server.
	if err := k8s.Delete(context.Background(), &infrav1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Name: a.Name}}); err != nil {
		t.Fatal(err)
	}
	cc := create(t, project(shard, "c.svc:443"), t0)
	waitFor(t, "relists failing", func() bool { return value(c.cfg.Metrics.ListErrors) >= listErrs+3 })
	if m := c.Members(); len(m) != 2 || m[0].Name == cc.Name || m[1].Name == cc.Name {
		t.Fatalf("membership changed during the outage: %+v", m)
	}
	if !c.Ready() {
		t.Fatal("readiness lost during an outage after the first list")
	}
	select {
	case ev := <-rec.ch:
		t.Fatalf("event during the outage: %s %s", ev.Type, ev.Name)
	default:
	}

	brk.set(false)
	seen := map[EventType]string{}
	for i := 0; i < 2; i++ {
		ev := rec.next(t)
		seen[ev.Type] = ev.Name
	}
	if seen[Removed] != a.Name || seen[Added] != cc.Name {
		t.Fatalf("after recovery: %v", seen)
	}
	names := map[string]bool{}
	for _, m := range c.Members() {
		names[m.Name] = true
	}
	if len(names) != 2 || !names[b.Name] || !names[cc.Name] {
		t.Fatalf("membership after relist: %v", names)
	}
}

// TestSeed: a seeded membership is served before the first list (but not
// ready), invalid seeds are dropped, and the first list is diffed against it.
func TestSeed(t *testing.T) {
	shard := uuid.NewString()
	live := create(t, project(shard, "live.svc:443"), t0)
	gone := project(shard, "gone.svc:443")
	sign(t, gone, signer, t0)
	forged := project(shard, "forged.svc:443")
	sign(t, forged, trusttest.Signer("cosmos-test", "mallory"), t0)
	toMember := func(p *infrav1alpha1.Project) Member {
		return Member{Name: p.Name, ShardID: shard, APIServerEndpoint: p.Spec.APIServerEndpoint,
			Certificates: p.Spec.AgentCA.Certificates, TrustSignature: p.Spec.TrustSignature}
	}
	rec := newRecorder()
	c, err := New(Config{ShardID: shard, RESTConfig: cfg, Keys: keys, OnEvent: rec.on, Log: testr.New(t),
		Seed: []Member{toMember(live), toMember(gone), toMember(forged)}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.Members(); len(ms) != 2 || c.Ready() {
		t.Fatalf("seeded members %+v ready=%v", ms, c.Ready())
	}
	start(t, c)
	rec.expect(t, Removed, gone.Name)
	waitFor(t, "ready", c.Ready)
	if ms := c.Members(); len(ms) != 1 || ms[0].Name != live.Name {
		t.Fatalf("after first list %+v", ms)
	}
	// Projects of other shards exist on this apiserver (earlier tests): the
	// label selector keeps them out of the list and watch altogether.
	other := create(t, project(uuid.NewString(), "other.svc:443"), t0)
	sentinel := create(t, project(shard, "sentinel.svc:443"), t0)
	rec.expect(t, Added, sentinel.Name)
	if n := value(c.cfg.Metrics.Ignored.WithLabelValues("shard_mismatch")); n != 0 {
		t.Fatalf("the client saw %v projects of other shards (%s among them): label selector not applied", n, other.Name)
	}
}

// value reads a counter or gauge.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
