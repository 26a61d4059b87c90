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
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestNoRollbackAfterRecreate: the newest accepted signedAt outlives the
// Project, so deleting and recreating it with an older, validly signed CA is
// refused, visibly; a recreation signed later is accepted.
func TestNoRollbackAfterRecreate(t *testing.T) {
	shard := uuid.NewString()
	rec := newRecorder()
	log, lines := captureLog(t)
	c, err := New(Config{ShardID: shard, RESTConfig: cfg, Keys: keys, OnEvent: rec.on, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	testkit.EventuallyWithin(t, waitFor, "first list", c.Ready)

	t1, t2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	p := project(shard, "p.svc:443")
	p.Spec.AgentCA.Certificates = pem("NEWCA")
	name := create(t, p, t2).Name
	rec.expect(t, Added, name)

	deleteProject(t, name)
	rec.expect(t, Removed, name)
	if rs := c.Removals(); len(rs) != 1 || rs[0].Name != name || !rs[0].SignedAt.Equal(t2) {
		t.Fatalf("removals after deletion: %+v", rs)
	}

	stale := value(c.cfg.Metrics.TrustRefused.WithLabelValues("stale"))
	old := project(shard, "p.svc:443")
	old.Name = name
	old.Spec.AgentCA.Certificates = pem("OLDCA")
	create(t, old, t1)
	ev := rec.expect(t, TrustRefused, name)
	if !errors.Is(ev.Err, trust.ErrStale) {
		t.Fatalf("recreation with an older signature: refusal %v, want ErrStale", ev.Err)
	}
	if _, ok := c.Get(name); ok {
		t.Fatal("project recreated with an older signature joined the membership")
	}
	if got := value(c.cfg.Metrics.TrustRefused.WithLabelValues("stale")); got != stale+1 {
		t.Fatalf("stale refusals %v, want %v", got, stale+1)
	}
	if !lines.has("refusing a change of signed project fields", name, `"reason"="stale"`, "before the project was removed") {
		t.Fatal("the refusal was not logged")
	}

	// A recreation signed after the remembered signature is a real one.
	deleteProject(t, name)
	fresh := project(shard, "p.svc:443")
	fresh.Name = name
	create(t, fresh, t2.Add(time.Minute))
	rec.expect(t, Added, name)
	if m, _ := c.Get(name); m.Certificates != fresh.Spec.AgentCA.Certificates {
		t.Fatalf("fresh recreation: %+v", m)
	}
	if rs := c.Removals(); len(rs) != 0 {
		t.Fatalf("removal kept after a valid recreation: %+v", rs)
	}
}

// TestRemovalRetention drives observe and remove directly: removals are
// seeded, bounded by age and count (oldest removal first), and refuse older
// signatures of seeded members too.
func TestRemovalRetention(t *testing.T) {
	shard := uuid.NewString()
	now := t0.Add(1000 * time.Hour)
	clock := func() time.Time { return now }
	seeded := Removal{Name: uuid.NewString(), SignedAt: t0.Add(5 * time.Hour), RemovedAt: now.Add(-time.Hour)}
	expired := Removal{Name: uuid.NewString(), SignedAt: t0, RemovedAt: now.Add(-49 * time.Hour)}
	// A seeded member older than its own removal record (an inconsistent
	// snapshot) is not served.
	behind := project(shard, "behind.svc:443")
	behind.Name = seeded.Name
	sign(t, behind, signer, t0.Add(4*time.Hour))
	c, err := New(Config{ShardID: shard, RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Keys: keys, Log: testr.New(t),
		Now: clock, RemovalRetention: 48 * time.Hour, MaxRemovals: 3, Removed: []Removal{seeded, expired},
		Seed: []Member{{Name: behind.Name, ShardID: shard, APIServerEndpoint: behind.Spec.APIServerEndpoint,
			Certificates: behind.Spec.AgentCA.Certificates, TrustSignature: behind.Spec.TrustSignature}}})
	if err != nil {
		t.Fatal(err)
	}
	if ms := c.Members(); len(ms) != 0 {
		t.Fatalf("seeded member older than its removal served: %+v", ms)
	}
	if rs := c.Removals(); len(rs) != 1 || rs[0].Name != seeded.Name || !rs[0].SignedAt.Equal(seeded.SignedAt) || !rs[0].RemovedAt.Equal(seeded.RemovedAt) {
		t.Fatalf("seeded removals after the age bound: %+v", rs)
	}
	if c.observe(behind) {
		t.Fatal("older signature accepted against a seeded removal")
	}

	var names []string
	for i := 0; i < 4; i++ {
		now = now.Add(time.Minute)
		p := project(shard, "r.svc:443")
		sign(t, p, signer, t0.Add(time.Duration(i)*time.Hour))
		if !c.observe(p) {
			t.Fatalf("project %d not accepted", i)
		}
		c.remove(p.Name)
		names = append(names, p.Name)
	}
	got := map[string]bool{}
	for _, r := range c.Removals() {
		got[r.Name] = true
	}
	// Bound 3: the seeded removal (oldest) and the first project are gone.
	if len(got) != 3 || got[seeded.Name] || got[names[0]] || !got[names[1]] || !got[names[2]] || !got[names[3]] {
		t.Fatalf("removals after the count bound: %v (projects %v)", got, names)
	}
	// Past the age bound everything is forgotten at the next removal.
	now = now.Add(49 * time.Hour)
	p := project(shard, "late.svc:443")
	sign(t, p, signer, t0)
	if !c.observe(p) {
		t.Fatal("late project not accepted")
	}
	c.remove(p.Name)
	if rs := c.Removals(); len(rs) != 1 || rs[0].Name != p.Name || !rs[0].RemovedAt.Equal(now) {
		t.Fatalf("removals after the age bound: %+v", rs)
	}
}
