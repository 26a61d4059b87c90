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
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestEvents walks Projects through every kind of change on one client. It
// is long on purpose: each step starts from the state the step before left.
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
	testkit.EventuallyWithin(t, waitFor, "first list", c.Ready)

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
		testkit.EventuallyWithin(t, waitFor, "shard mismatch counted", func() bool {
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
	testkit.EventuallyWithin(t, waitFor, "ready", c.Ready)
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
