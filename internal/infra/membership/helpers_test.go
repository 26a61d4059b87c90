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
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The package's envtest control plane, started before the tests: every
// membership test watches Projects through it.
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

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// logLines is a logger that keeps its lines (and passes them to t.Log).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func captureLog(t *testing.T) (logr.Logger, *logLines) {
	ll := &logLines{}
	return funcr.New(func(prefix, args string) {
		ll.mu.Lock()
		ll.lines = append(ll.lines, prefix+" "+args)
		ll.mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{}), ll
}

// has reports whether one line holds every word.
func (l *logLines) has(words ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

func deleteProject(t *testing.T, name string) {
	t.Helper()
	if err := k8s.Delete(context.Background(), &infrav1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}
