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

package lifecycle

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The package's envtest control plane, started before the tests with the
// shipped Project roles installed.
var (
	api       testkit.Envtest
	admin     client.Client
	lifecycle client.Client // impersonates the lifecycle identity
)

func TestMain(m *testing.M) {
	os.Exit(api.RunStarted(m, func(cfg *rest.Config) (err error) {
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := infrav1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		if admin, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return err
		}
		return bindLifecycle(cfg, scheme)
	}))
}

// bindLifecycle installs the shipped Project roles and binds the lifecycle
// one to a test user; the tool runs as that user.
func bindLifecycle(cfg *rest.Config, scheme *runtime.Scheme) error {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "config", "rbac", "infra_project_roles.yaml"))
	if err != nil {
		return err
	}
	objs, err := testkit.DecodeObjects(raw)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil {
			return err
		}
	}
	const user = "cosmos-lifecycle-test"
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-lifecycle"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "coxswain-infra-project-lifecycle"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}); err != nil {
		return err
	}
	ucfg := rest.CopyConfig(cfg)
	ucfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	if lifecycle, err = client.New(ucfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = lifecycle.List(ctx, &infrav1alpha1.ProjectList{})
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	signer = trusttest.Signer("cosmos-test", "lifecycle")
	keys   = trusttest.KeySet(signer)
)

func newTool(t *testing.T, clk *clocktesting.FakePassiveClock) *Tool {
	kek, err := NewAESKEK(trusttest.SampleKEK())
	if err != nil {
		t.Fatal(err)
	}
	return &Tool{Client: lifecycle, Signer: signer, KEK: kek, Clock: clk, Log: testr.New(t)}
}

func get(t *testing.T, name string) *infrav1alpha1.Project {
	t.Helper()
	p := &infrav1alpha1.Project{}
	if err := admin.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func verifySigned(t *testing.T, p *infrav1alpha1.Project) {
	t.Helper()
	if err := keys.Verify(trust.FieldsOf(p), p.Spec.TrustSignature); err != nil {
		t.Fatalf("project %s is not validly signed: %v", p.Name, err)
	}
}

// checkCAKey opens the sealed key and checks it belongs to the first
// certificate, and that the CA is limited to the project's SPIFFE IDs.
func checkCAKey(t *testing.T, tool *Tool, p *infrav1alpha1.Project) {
	t.Helper()
	ca := p.Spec.AgentCA
	keyDER, err := OpenCAKey(context.Background(), tool.KEK, p.Name, ca.SealedKey, ca.WrappedDataKey)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := firstCertificate(ca.Certificates)
	if err != nil {
		t.Fatal(err)
	}
	if !k.(*ecdsa.PrivateKey).PublicKey.Equal(cert.PublicKey) {
		t.Fatal("sealed key does not match the first CA certificate")
	}
	if len(cert.PermittedURIDomains) != 1 || cert.PermittedURIDomains[0] != p.Name {
		t.Fatalf("CA not constrained to the project: %v", cert.PermittedURIDomains)
	}
	if _, err := OpenCAKey(context.Background(), tool.KEK, uuid.NewString(), ca.SealedKey, ca.WrappedDataKey); err == nil {
		t.Fatal("sealed key opens for another project")
	}
}

func TestSetup(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	tool := newTool(t, clk)
	in := SetupInput{Name: uuid.NewString(), ShardID: uuid.NewString(), APIServerEndpoint: "p.shard.svc:6443"}

	res, err := tool.Setup(ctx, in)
	if err != nil || res.Outcome != Created || !res.CACreated {
		t.Fatalf("first setup: %+v %v", res, err)
	}
	p := get(t, in.Name)
	if p.Labels[infrav1alpha1.ShardIDLabel] != in.ShardID || p.Spec.ShardID != in.ShardID || p.Spec.APIServerEndpoint != in.APIServerEndpoint {
		t.Fatalf("created project %+v", p)
	}
	verifySigned(t, p)
	checkCAKey(t, tool, p)

	// Idempotent: nothing is written.
	clk.SetTime(clk.Now().Add(time.Hour))
	res, err = tool.Setup(ctx, in)
	if err != nil || res.Outcome != Unchanged || res.CACreated {
		t.Fatalf("rerun: %+v %v", res, err)
	}
	if got := get(t, in.Name); got.ResourceVersion != p.ResourceVersion {
		t.Fatal("idempotent setup wrote the project")
	}

	// An endpoint change is re-signed later; the CA is kept byte for byte.
	in.APIServerEndpoint = "p2.shard.svc:6443"
	in.RelayRoots = "-----BEGIN CERTIFICATE-----\nROOT\n-----END CERTIFICATE-----\n"
	res, err = tool.Setup(ctx, in)
	if err != nil || res.Outcome != Updated || res.CACreated {
		t.Fatalf("endpoint change: %+v %v", res, err)
	}
	p2 := get(t, in.Name)
	verifySigned(t, p2)
	if !p2.Spec.TrustSignature.SignedAt.After(p.Spec.TrustSignature.SignedAt.Time) {
		t.Fatal("changed project not re-signed with a newer signedAt")
	}
	if p2.Spec.AgentCA.Certificates != p.Spec.AgentCA.Certificates || string(p2.Spec.AgentCA.SealedKey) != string(p.Spec.AgentCA.SealedKey) {
		t.Fatal("setup replaced an existing CA")
	}

	// A shard move is refused with a clear error and nothing changes.
	moved := in
	moved.ShardID = uuid.NewString()
	if _, err := tool.Setup(ctx, moved); !errors.Is(err, ErrShardMove) {
		t.Fatalf("shard move: want ErrShardMove, got %v", err)
	} else {
		t.Logf("shard move refused: %v", err)
	}
	if got := get(t, in.Name); got.ResourceVersion != p2.ResourceVersion {
		t.Fatal("refused shard move wrote the project")
	}

	// Missing CA: setup repairs it with a new one.
	broken := get(t, in.Name)
	broken.Spec.AgentCA = nil
	if err := lifecycle.Update(ctx, broken); err != nil {
		t.Fatal(err)
	}
	res, err = tool.Setup(ctx, in)
	if err != nil || res.Outcome != Updated || !res.CACreated {
		t.Fatalf("repair: %+v %v", res, err)
	}
	p3 := get(t, in.Name)
	verifySigned(t, p3)
	checkCAKey(t, tool, p3)
	if p3.Spec.AgentCA.Certificates == p2.Spec.AgentCA.Certificates {
		t.Fatal("repair reused the old certificate")
	}

	// A lost shard label is restored.
	unlabelled := get(t, in.Name)
	delete(unlabelled.Labels, infrav1alpha1.ShardIDLabel)
	if err := lifecycle.Update(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	if res, err = tool.Setup(ctx, in); err != nil || res.Outcome != Updated || res.CACreated {
		t.Fatalf("label repair: %+v %v", res, err)
	}
	if got := get(t, in.Name); got.Labels[infrav1alpha1.ShardIDLabel] != in.ShardID || got.Spec.AgentCA.Certificates != p3.Spec.AgentCA.Certificates {
		t.Fatalf("label not restored or CA replaced: %v", got.Labels)
	}

	// Missing Project: setup recreates it.
	if _, err := tool.Teardown(ctx, in.Name, in.ShardID); err != nil {
		t.Fatal(err)
	}
	if res, err = tool.Setup(ctx, in); err != nil || res.Outcome != Created {
		t.Fatalf("recreate: %+v %v", res, err)
	}
	verifySigned(t, get(t, in.Name))
}

func TestSetupRefusesBrokenCA(t *testing.T) {
	ctx := context.Background()
	tool := newTool(t, clocktesting.NewFakePassiveClock(time.Now()))
	in := SetupInput{Name: uuid.NewString(), ShardID: uuid.NewString(), APIServerEndpoint: "p.svc:443"}
	if _, err := tool.Setup(ctx, in); err != nil {
		t.Fatal(err)
	}
	p := get(t, in.Name)
	p.Spec.AgentCA.SealedKey, p.Spec.AgentCA.WrappedDataKey = nil, nil
	if err := lifecycle.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Setup(ctx, in); !errors.Is(err, ErrBrokenCA) {
		t.Fatalf("want ErrBrokenCA, got %v", err)
	}
	if got := get(t, in.Name); got.Spec.AgentCA.Certificates != p.Spec.AgentCA.Certificates {
		t.Fatal("setup replaced a CA")
	}
	for _, bad := range []SetupInput{
		{Name: "not-a-uuid", ShardID: in.ShardID, APIServerEndpoint: "x:1"},
		{Name: in.Name, ShardID: "nope", APIServerEndpoint: "x:1"},
		{Name: in.Name, ShardID: in.ShardID},
	} {
		if _, err := tool.Setup(ctx, bad); err == nil {
			t.Errorf("bad input accepted: %+v", bad)
		}
	}
}

func TestRotateCA(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	tool := newTool(t, clk)
	in := SetupInput{Name: uuid.NewString(), ShardID: uuid.NewString(), APIServerEndpoint: "p.svc:443"}
	if _, err := tool.Setup(ctx, in); err != nil {
		t.Fatal(err)
	}
	p0 := get(t, in.Name)
	oldCert := p0.Spec.AgentCA.Certificates

	if _, err := tool.RotateCAFinish(ctx, in.Name, time.Hour); !errors.Is(err, ErrNoRotation) {
		t.Fatalf("finish without start: %v", err)
	}

	clk.SetTime(clk.Now().Add(time.Minute))
	res, err := tool.RotateCAStart(ctx, in.Name)
	if err != nil || res.Outcome != Updated {
		t.Fatalf("start: %+v %v", res, err)
	}
	p1 := get(t, in.Name)
	verifySigned(t, p1)
	ca := p1.Spec.AgentCA
	if blocks := SplitPEM(ca.Certificates); len(blocks) != 2 || blocks[0] != oldCert || blocks[1] != ca.NextCertificate {
		t.Fatalf("after start certificates = %d blocks", len(blocks))
	}
	if len(ca.NextSealedKey) == 0 || len(ca.NextWrappedDataKey) == 0 || string(ca.SealedKey) != string(p0.Spec.AgentCA.SealedKey) {
		t.Fatal("start did not set next* or changed the current key")
	}
	if !p1.Spec.TrustSignature.SignedAt.After(p0.Spec.TrustSignature.SignedAt.Time) {
		t.Fatal("start not re-signed")
	}
	// Start again: no-op; setup during a rotation keeps it.
	if res, err := tool.RotateCAStart(ctx, in.Name); err != nil || res.Outcome != Unchanged {
		t.Fatalf("second start: %+v %v", res, err)
	}
	if res, err := tool.Setup(ctx, in); err != nil || res.Outcome != Unchanged {
		t.Fatalf("setup during rotation: %+v %v", res, err)
	}

	clk.SetTime(clk.Now().Add(time.Minute))
	res, err = tool.RotateCAFinish(ctx, in.Name, time.Hour)
	if err != nil || res.Outcome != Updated || res.RetireAfter == nil {
		t.Fatalf("finish: %+v %v", res, err)
	}
	p2 := get(t, in.Name)
	verifySigned(t, p2)
	ca2 := p2.Spec.AgentCA
	if string(ca2.SealedKey) != string(ca.NextSealedKey) || ca2.NextCertificate != "" || len(ca2.NextSealedKey) != 0 || len(ca2.NextWrappedDataKey) != 0 {
		t.Fatal("finish did not promote the next CA")
	}
	if blocks := SplitPEM(ca2.Certificates); len(blocks) != 2 || blocks[0] != ca.NextCertificate || blocks[1] != oldCert {
		t.Fatal("old CA not kept (second) during the grace period")
	}
	checkCAKey(t, tool, p2)

	// Before the grace period ends: pending, nothing written.
	clk.SetTime(clk.Now().Add(30 * time.Minute))
	if res, err := tool.RotateCAFinish(ctx, in.Name, time.Hour); err != nil || res.Outcome != Pending {
		t.Fatalf("finish in grace: %+v %v", res, err)
	}
	if get(t, in.Name).ResourceVersion != p2.ResourceVersion {
		t.Fatal("pending finish wrote the project")
	}
	clk.SetTime(clk.Now().Add(31 * time.Minute))
	if res, err := tool.RotateCAFinish(ctx, in.Name, time.Hour); err != nil || res.Outcome != Updated {
		t.Fatalf("finish after grace: %+v %v", res, err)
	}
	p3 := get(t, in.Name)
	verifySigned(t, p3)
	if blocks := SplitPEM(p3.Spec.AgentCA.Certificates); len(blocks) != 1 || blocks[0] != ca.NextCertificate {
		t.Fatal("old CA not dropped after the grace period")
	}
	if _, ok := p3.Annotations[AnnotationRetireAfter]; ok {
		t.Fatal("retire annotation left behind")
	}
	checkCAKey(t, tool, p3)
}

func TestTeardown(t *testing.T) {
	ctx := context.Background()
	tool := newTool(t, clocktesting.NewFakePassiveClock(time.Now()))
	in := SetupInput{Name: uuid.NewString(), ShardID: uuid.NewString(), APIServerEndpoint: "p.svc:443"}
	if _, err := tool.Setup(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Teardown(ctx, in.Name, uuid.NewString()); err == nil {
		t.Fatal("teardown with the wrong shard accepted")
	}
	if res, err := tool.Teardown(ctx, in.Name, in.ShardID); err != nil || res.Outcome != Deleted {
		t.Fatalf("teardown: %+v %v", res, err)
	}
	if err := admin.Get(ctx, types.NamespacedName{Name: in.Name}, &infrav1alpha1.Project{}); !apierrors.IsNotFound(err) {
		t.Fatalf("project still there: %v", err)
	}
	if res, err := tool.Teardown(ctx, in.Name, ""); err != nil || res.Outcome != Unchanged {
		t.Fatalf("second teardown: %+v %v", res, err)
	}
}

func TestEnvelope(t *testing.T) {
	ctx := context.Background()
	kek, _ := NewAESKEK(trusttest.SampleKEK())
	other, _ := NewAESKEK(make([]byte, 32))
	sealed, wrapped, err := Seal(ctx, kek, []byte("secret"), []byte("aad"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := Open(ctx, kek, sealed, wrapped, []byte("aad")); err != nil || string(pt) != "secret" {
		t.Fatalf("open: %q %v", pt, err)
	}
	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	badWrap := append([]byte(nil), wrapped...)
	badWrap[5] ^= 1
	for name, f := range map[string]func() error{
		"wrong aad":       func() error { _, err := Open(ctx, kek, sealed, wrapped, []byte("other")); return err },
		"wrong kek":       func() error { _, err := Open(ctx, other, sealed, wrapped, []byte("aad")); return err },
		"tampered sealed": func() error { _, err := Open(ctx, kek, tampered, wrapped, []byte("aad")); return err },
		"tampered wrap":   func() error { _, err := Open(ctx, kek, sealed, badWrap, []byte("aad")); return err },
		"short":           func() error { _, err := Open(ctx, kek, sealed[:5], wrapped, []byte("aad")); return err },
		"nil kek":         func() error { _, _, err := Seal(ctx, nil, []byte("x"), nil); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewAESKEK(make([]byte, 16)); err == nil {
		t.Error("16-byte KEK accepted")
	}
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"raw": trusttest.SampleKEK(),
		"hex": []byte(hex.EncodeToString(trusttest.SampleKEK()) + "\n"),
	} {
		path := filepath.Join(dir, name)
		_ = os.WriteFile(path, content, 0o600)
		k, err := LoadKEKFile(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Open(ctx, k, sealed, wrapped, []byte("aad")); err != nil {
			t.Fatalf("%s KEK does not open: %v", name, err)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "bad"), []byte("short"), 0o600)
	if _, err := LoadKEKFile(filepath.Join(dir, "bad")); err == nil {
		t.Error("bad KEK file accepted")
	}
}

func TestIssueAgentCertificateChains(t *testing.T) {
	project := uuid.NewString()
	now := time.Now()
	caPEM, caKey, err := NewAgentCA(project, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	agentKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(caPEM))
	for _, tc := range []struct {
		project string
		ok      bool
	}{{project, true}, {uuid.NewString(), false}} {
		der, err := IssueAgentCertificate(caPEM, caKey, tc.project, "a1", agentKey.Public(), now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if (err == nil) != tc.ok {
			t.Fatalf("project %s: verify err %v, want ok=%v", tc.project, err, tc.ok)
		}
	}
}
