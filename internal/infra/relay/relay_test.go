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
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/lifecycle"
	"github.com/coxswain-go/coxswain/internal/infra/membership"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The package's envtest control plane, started before the tests: every
// relay test serves Projects read through it.
var (
	api testkit.Envtest
	cfg *rest.Config
	k8s client.Client
)

func TestMain(m *testing.M) {
	os.Exit(api.RunStarted(m, func(c *rest.Config) (err error) {
		scheme := runtime.NewScheme()
		if err := infrav1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		cfg = c
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		return err
	}))
}

// waitFor bounds every wait in these tests.
const waitFor = 15 * time.Second

var signer = trusttest.Signer("cosmos-test", "relay")

func tool(t *testing.T) *lifecycle.Tool {
	kek, err := lifecycle.NewAESKEK(trusttest.SampleKEK())
	if err != nil {
		t.Fatal(err)
	}
	return &lifecycle.Tool{Client: k8s, Signer: signer, KEK: kek, Log: testr.New(t)}
}

func get(t *testing.T, name string) *infrav1alpha1.Project {
	t.Helper()
	p := &infrav1alpha1.Project{}
	if err := k8s.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentCert issues a client certificate for agent of claimedProject with the
// CA of caProject (current CA, or the next one when next is set).
func agentCert(t *testing.T, tl *lifecycle.Tool, caProject *infrav1alpha1.Project, next bool, claimedProject string) tls.Certificate {
	t.Helper()
	ca := caProject.Spec.AgentCA
	certPEM, sealed, wrapped := lifecycle.SplitPEM(ca.Certificates)[0], ca.SealedKey, ca.WrappedDataKey
	if next {
		certPEM, sealed, wrapped = ca.NextCertificate, ca.NextSealedKey, ca.NextWrappedDataKey
	}
	keyDER, err := lifecycle.OpenCAKey(context.Background(), tl.KEK, caProject.Name, sealed, wrapped)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := lifecycle.IssueAgentCertificate(certPEM, keyDER, claimedProject, "agent-1", k.Public(), time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// serverCert is the relay's own certificate for 127.0.0.1.
func serverCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pool
}

type running struct {
	relay   *Relay
	addr    string
	stop    func()
	log     *logLines
	metrics *membership.Metrics
}

func startRelay(t *testing.T, shard string, rc *rest.Config, snapshot string, cert tls.Certificate) *running {
	t.Helper()
	log, lines := captureLog(t)
	metrics := membership.NewMetrics(nil)
	r, err := New(Config{ShardID: shard, RESTConfig: rc, Keys: trusttest.KeySet(signer), SnapshotPath: snapshot,
		ServerCertificate: cert, Log: log, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = r.Run(ctx); done <- struct{}{} }()
	go func() { _ = r.Serve(ctx, l); done <- struct{}{} }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for i := 0; i < 2; i++ {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("relay did not stop within 10s")
				return
			}
		}
	}
	t.Cleanup(stop)
	return &running{relay: r, addr: l.Addr().String(), stop: stop, log: lines, metrics: metrics}
}

// call makes a fresh mTLS connection as agent and returns the identity the
// relay saw, or the handshake/HTTP error.
func call(addr string, roots *x509.CertPool, agent tls.Certificate) (AgentIdentity, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{agent}}}}
	resp, err := hc.Get("https://" + addr + "/v1/agent/identity")
	if err != nil {
		return AgentIdentity{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return AgentIdentity{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var id AgentIdentity
	err = json.NewDecoder(resp.Body).Decode(&id)
	return id, err
}

func accepted(addr string, roots *x509.CertPool, agent tls.Certificate, project string) bool {
	id, err := call(addr, roots, agent)
	return err == nil && id.Project == project
}

// assertNoKeyMaterial reads the snapshot file and checks it holds none of the
// sealed or next* fields of any project.
func assertNoKeyMaterial(t *testing.T, path string, projects ...*infrav1alpha1.Project) Snapshot {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"sealedKey", "wrappedDataKey", "nextCertificate", "nextSealedKey", "nextWrappedDataKey", "PRIVATE KEY"} {
		if bytes.Contains(bytes.ToLower(raw), bytes.ToLower([]byte(word))) {
			t.Fatalf("snapshot file contains %q", word)
		}
	}
	for _, p := range projects {
		ca := p.Spec.AgentCA
		for _, secret := range [][]byte{ca.SealedKey, ca.WrappedDataKey, ca.NextSealedKey, ca.NextWrappedDataKey} {
			if len(secret) == 0 {
				continue
			}
			for _, enc := range [][]byte{secret, []byte(base64.StdEncoding.EncodeToString(secret)), []byte(base64.RawStdEncoding.EncodeToString(secret))} {
				if bytes.Contains(raw, enc) {
					t.Fatalf("snapshot file contains sealed key material of project %s", p.Name)
				}
			}
		}
		if ca.NextCertificate != "" && bytes.Contains(raw, []byte(strings.TrimSpace(ca.NextCertificate))) && !strings.Contains(ca.Certificates, ca.NextCertificate) {
			t.Fatal("snapshot holds a next certificate outside certificates")
		}
	}
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRelay(t *testing.T) {
	ctx := context.Background()
	shard := uuid.NewString()
	tl := tool(t)
	mk := func(endpoint string) *infrav1alpha1.Project {
		in := lifecycle.SetupInput{Name: uuid.NewString(), ShardID: shard, APIServerEndpoint: endpoint}
		if _, err := tl.Setup(ctx, in); err != nil {
			t.Fatal(err)
		}
		return get(t, in.Name)
	}
	a, b := mk("a.svc:6443"), mk("b.svc:6443")
	// A project of another shard, with its own valid CA.
	otherIn := lifecycle.SetupInput{Name: uuid.NewString(), ShardID: uuid.NewString(), APIServerEndpoint: "o.svc:6443"}
	if _, err := tl.Setup(ctx, otherIn); err != nil {
		t.Fatal(err)
	}
	other := get(t, otherIn.Name)

	snapPath := filepath.Join(t.TempDir(), "relay-snapshot.json")
	cert, roots := serverCert(t)
	r := startRelay(t, shard, cfg, snapPath, cert)
	testkit.EventuallyWithin(t, waitFor, "first list", r.relay.Membership.Ready)
	testkit.EventuallyWithin(t, waitFor, "snapshot with both projects", func() bool {
		s, ok, err := LoadSnapshot(snapPath)
		return err == nil && ok && len(s.Projects) == 2
	})

	// The snapshot file: names, endpoints, accepted certificates and
	// signatures, and no key material.
	s := assertNoKeyMaterial(t, snapPath, a, b)
	for _, p := range []*infrav1alpha1.Project{a, b} {
		var sp *SnapshotProject
		for i := range s.Projects {
			if s.Projects[i].Name == p.Name {
				sp = &s.Projects[i]
			}
		}
		if sp == nil || sp.APIServerEndpoint != p.Spec.APIServerEndpoint || sp.AgentCACerts != p.Spec.AgentCA.Certificates ||
			sp.TrustSignature == nil || !bytes.Equal(sp.TrustSignature.Signature, p.Spec.TrustSignature.Signature) {
			t.Fatalf("snapshot entry for %s: %+v", p.Name, sp)
		}
	}
	agentA := agentCert(t, tl, a, false, a.Name)
	if id, err := call(r.addr, roots, agentA); err != nil || id.Project != a.Name || id.Agent != "agent-1" {
		t.Fatalf("valid agent of A refused: %+v %v", id, err)
	}
	// Signed by B's CA but claiming A: refused.
	if _, err := call(r.addr, roots, agentCert(t, tl, b, false, a.Name)); err == nil {
		t.Fatal("agent claiming A with B's CA accepted")
	}
	// A project not in this shard's membership: refused even with its own CA.
	if _, err := call(r.addr, roots, agentCert(t, tl, other, false, other.Name)); err == nil {
		t.Fatal("agent of a project outside membership accepted")
	}
	// A project that does not exist: refused.
	if _, err := call(r.addr, roots, agentCert(t, tl, a, false, uuid.NewString())); err == nil {
		t.Fatal("agent of an unknown project accepted")
	}
	// No client certificate: refused.
	if _, err := call(r.addr, roots, tls.Certificate{}); err == nil {
		t.Fatal("connection without a client certificate accepted")
	}

	// Rotation: both the current and the next CA are accepted.
	if _, err := tl.RotateCAStart(ctx, a.Name); err != nil {
		t.Fatal(err)
	}
	a2 := get(t, a.Name)
	nextAgent := agentCert(t, tl, a2, true, a.Name)
	testkit.EventuallyWithin(t, waitFor, "next CA accepted", func() bool { return accepted(r.addr, roots, nextAgent, a.Name) })
	if !accepted(r.addr, roots, agentA, a.Name) {
		t.Fatal("current CA refused during rotation")
	}
	testkit.EventuallyWithin(t, waitFor, "snapshot with the next CA", func() bool {
		s, _, _ := LoadSnapshot(snapPath)
		for _, p := range s.Projects {
			if p.Name == a.Name {
				return p.AgentCACerts == a2.Spec.AgentCA.Certificates
			}
		}
		return false
	})
	assertNoKeyMaterial(t, snapPath, a2, b)

	// Finish with no grace: the old CA is dropped and refused.
	if _, err := tl.RotateCAFinish(ctx, a.Name, 0); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "old CA refused", func() bool { return !accepted(r.addr, roots, agentA, a.Name) })
	if !accepted(r.addr, roots, nextAgent, a.Name) {
		t.Fatal("promoted CA refused")
	}

	// A forged CA change is refused: the relay keeps the accepted CA.
	forged := get(t, b.Name)
	evilCA, _, err := lifecycle.NewAgentCA(b.Name, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forged.Spec.AgentCA.Certificates = evilCA
	forgedSig, _ := trusttest.Signer("cosmos-test", "mallory").Sign(trustFields(forged), time.Now().Add(time.Hour))
	forged.Spec.TrustSignature = forgedSig
	if err := k8s.Update(ctx, forged); err != nil {
		t.Fatal(err)
	}
	agentB := agentCert(t, tl, b, false, b.Name)
	// Removal of A (teardown) afterwards gives an ordering point: once A is
	// refused, the forged update of B was processed before it.
	if _, err := tl.Teardown(ctx, a.Name, shard); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "removed project refused", func() bool { return !accepted(r.addr, roots, nextAgent, a.Name) })
	if !accepted(r.addr, roots, agentB, b.Name) {
		t.Fatal("forged CA change replaced B's accepted CA")
	}
	if m, _ := r.relay.Membership.Get(b.Name); m.Certificates != b.Spec.AgentCA.Certificates {
		t.Fatal("forged CA in membership")
	}
	testkit.EventuallyWithin(t, waitFor, "snapshot without A", func() bool {
		s, _, _ := LoadSnapshot(snapPath)
		return len(s.Projects) == 1 && s.Projects[0].Name == b.Name
	})
	s = assertNoKeyMaterial(t, snapPath, b)
	if s.Projects[0].AgentCACerts != b.Spec.AgentCA.Certificates {
		t.Fatal("forged CA written to the snapshot")
	}
	r.stop()

	// Restart against an unreachable infra-apiserver: the snapshot is loaded
	// and served before any list; readiness stays false.
	dead := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	r2 := startRelay(t, shard, dead, snapPath, cert)
	if !accepted(r2.addr, roots, agentB, b.Name) {
		t.Fatal("relay did not serve from its snapshot before the first list")
	}
	if r2.relay.Membership.Ready() || r2.relay.Membership.ReadyzCheck(nil) == nil {
		t.Fatal("relay ready without a list")
	}
	if _, err := call(r2.addr, roots, nextAgent); err == nil {
		t.Fatal("project absent from the snapshot accepted")
	}
}

func TestSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if _, ok, err := LoadSnapshot(path); ok || err != nil {
		t.Fatalf("missing file: ok=%v err=%v", ok, err)
	}
	s1 := Snapshot{Version: SnapshotVersion, ShardID: "x", Projects: []SnapshotProject{{Name: "a", APIServerEndpoint: "a:1"}}}
	if err := WriteSnapshot(path, s1); err != nil {
		t.Fatal(err)
	}
	s2 := Snapshot{Version: SnapshotVersion, ShardID: "x", Projects: []SnapshotProject{}}
	if err := WriteSnapshot(path, s2); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadSnapshot(path)
	if err != nil || !ok || len(got.Projects) != 0 {
		t.Fatalf("reload: %+v %v %v", got, ok, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the snapshot", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v", fi.Mode().Perm())
	}
	for name, content := range map[string]string{
		"garbage":       "{",
		"wrong version": `{"version":9,"shardID":"x","projects":[]}`,
		"unknown field": `{"version":1,"shardID":"x","projects":[{"name":"a","sealedKey":"AAAA"}]}`,
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		_ = os.WriteFile(p, []byte(content), 0o600)
		if _, _, err := LoadSnapshot(p); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	// Version 1 files (before removedProjects) still load.
	v1 := filepath.Join(dir, "v1.json")
	_ = os.WriteFile(v1, []byte(`{"version":1,"shardID":"x","projects":[{"name":"a","apiServerEndpoint":"a:1"}]}`), 0o600)
	if got, ok, err := LoadSnapshot(v1); err != nil || !ok || len(got.Projects) != 1 {
		t.Fatalf("version 1 file: %+v %v %v", got, ok, err)
	}
	// Removals round-trip.
	removed := []membership.Removal{{Name: "r", SignedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		RemovedAt: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}}
	if err := WriteSnapshot(path, SnapshotOf("x", nil, removed)); err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadSnapshot(path); err != nil || len(got.RemovedProjects) != 1 || got.RemovedProjects[0].Name != "r" ||
		!got.RemovedProjects[0].SignedAt.Equal(removed[0].SignedAt) || !got.RemovedProjects[0].RemovedAt.Equal(removed[0].RemovedAt) {
		t.Fatalf("removals round trip: %+v %v", got, err)
	}
	_ = os.Remove(v1)

	// A snapshot of another shard is refused on start.
	other := filepath.Join(dir, "other.json")
	if err := WriteSnapshot(other, Snapshot{Version: SnapshotVersion, ShardID: uuid.NewString(), Projects: []SnapshotProject{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{ShardID: uuid.NewString(), RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"},
		Keys: trusttest.KeySet(signer), SnapshotPath: other}); err == nil || !strings.Contains(err.Error(), "belongs to shard") {
		t.Fatalf("foreign snapshot: %v", err)
	}
	// Writing into a missing directory fails cleanly.
	if err := WriteSnapshot(filepath.Join(dir, "nope", "s.json"), s1); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestParseAgentID(t *testing.T) {
	project := uuid.NewString()
	cases := map[string]struct {
		uris []string
		ok   bool
	}{
		"valid":            {[]string{"spiffe://" + project + "/agent/a1"}, true},
		"no SAN":           {nil, false},
		"two SPIFFE IDs":   {[]string{"spiffe://" + project + "/agent/a1", "spiffe://" + project + "/agent/a2"}, false},
		"not a UUID":       {[]string{"spiffe://example.org/agent/a1"}, false},
		"wrong path":       {[]string{"spiffe://" + project + "/relay/a1"}, false},
		"nested agent":     {[]string{"spiffe://" + project + "/agent/a/b"}, false},
		"empty agent":      {[]string{"spiffe://" + project + "/agent/"}, false},
		"uppercase domain": {[]string{"spiffe://" + strings.ToUpper(project) + "/agent/a1"}, false},
	}
	for name, c := range cases {
		cert := &x509.Certificate{}
		for _, s := range c.uris {
			u, err := url.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			cert.URIs = append(cert.URIs, u)
		}
		id, err := ParseAgentID(cert)
		if (err == nil) != c.ok {
			t.Errorf("%s: %+v %v", name, id, err)
		}
		if c.ok && (id.Project != project || id.Agent != "a1") {
			t.Errorf("%s: %+v", name, id)
		}
	}
}

func trustFields(p *infrav1alpha1.Project) trust.Fields { return trust.FieldsOf(p) }
