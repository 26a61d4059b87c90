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

package relay

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/lifecycle"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.Counter.GetValue()
}

// TestNoRollbackAcrossRestart: the relay remembers the newest accepted
// signedAt of a torn-down project in its snapshot file, so a restarted
// relay refuses the project recreated with an older, validly signed CA.
func TestNoRollbackAcrossRestart(t *testing.T) {
	ctx := context.Background()
	shard := uuid.NewString()
	tl := tool(t)
	name := uuid.NewString()
	if _, err := tl.Setup(ctx, lifecycle.SetupInput{Name: name, ShardID: shard, APIServerEndpoint: "p.svc:6443"}); err != nil {
		t.Fatal(err)
	}
	current := get(t, name)
	accepted := current.Spec.TrustSignature.SignedAt.Time

	// The same project as it was an hour before, with another CA, validly
	// signed then: what an attacker holding an old signed spec would bring
	// back.
	oldCA, oldKey, err := lifecycle.NewAgentCA(name, time.Now().Add(-time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	old := &infrav1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{infrav1alpha1.ShardIDLabel: shard}},
		Spec: infrav1alpha1.ProjectSpec{ShardID: shard, APIServerEndpoint: "p.svc:6443",
			AgentCA: &infrav1alpha1.AgentCA{Certificates: oldCA}},
	}
	if old.Spec.TrustSignature, err = signer.Sign(trustFields(old), accepted.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}

	snapPath := filepath.Join(t.TempDir(), "relay-snapshot.json")
	cert, roots := serverCert(t)
	r := startRelay(t, shard, cfg, snapPath, cert)
	testkit.EventuallyWithin(t, waitFor, "project in membership", func() bool { _, ok := r.relay.Membership.Get(name); return ok })
	if _, err := tl.Teardown(ctx, name, shard); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "removal in the snapshot file", func() bool {
		s, _, _ := LoadSnapshot(snapPath)
		return len(s.Projects) == 0 && len(s.RemovedProjects) == 1 && s.RemovedProjects[0].Name == name &&
			s.RemovedProjects[0].SignedAt.Equal(accepted)
	})
	r.stop()

	r2 := startRelay(t, shard, cfg, snapPath, cert)
	testkit.EventuallyWithin(t, waitFor, "first list", r2.relay.Membership.Ready)
	if err := k8s.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), old) })
	stale := r2.metrics.TrustRefused.WithLabelValues("stale")
	testkit.EventuallyWithin(t, waitFor, "stale refusal counted", func() bool { return counter(stale) == 1 })
	if r2.log.count("refusing a change of signed project fields", name, `"reason"="stale"`) != 1 {
		t.Fatal("the refusal was not logged")
	}
	if _, ok := r2.relay.Membership.Get(name); ok {
		t.Fatal("project recreated with an older signature joined the membership")
	}
	// An agent of the old CA is refused.
	agentKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := lifecycle.IssueAgentCertificate(oldCA, oldKey, name, "agent-1", agentKey.Public(), time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(r2.addr, roots, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: agentKey}); err == nil {
		t.Fatal("agent of the rolled-back CA accepted")
	}
	// The removal survives the rewrites of the snapshot file.
	if err := r2.relay.WriteSnapshot(); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := LoadSnapshot(snapPath); len(s.RemovedProjects) != 1 || s.RemovedProjects[0].Name != name {
		t.Fatalf("snapshot removals after restart: %+v", s.RemovedProjects)
	}
}
