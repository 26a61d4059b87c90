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

package infra

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The package's envtest control plane, started before the tests: the
// prober reads and writes Projects through it.
var (
	api    testkit.Envtest
	cfg    *rest.Config
	k8s    client.Client
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	os.Exit(api.RunStarted(m, func(c *rest.Config) (err error) {
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := infrav1alpha1.AddToScheme(scheme); err != nil {
			return err
		}
		cfg = c
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
		return err
	}))
}

const shard = "0b6f5c2a-8e4d-4f1a-b3c9-7d2e1a6f4b58"

func newProject(t *testing.T, endpoint string) *infrav1alpha1.Project {
	t.Helper()
	p := &infrav1alpha1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: uuid.NewString(), Labels: map[string]string{infrav1alpha1.ShardIDLabel: shard}},
		Spec:       infrav1alpha1.ProjectSpec{ShardID: shard, APIServerEndpoint: endpoint},
	}
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	return p
}

// readyzServer is a real TLS /readyz endpoint whose answer a test controls.
func readyzServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	code := &atomic.Int32{}
	code.Store(http.StatusOK)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(code.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv, code
}

func checkerFor(srvs ...*httptest.Server) *HTTPChecker {
	pool := x509.NewCertPool()
	for _, s := range srvs {
		pool.AddCert(s.Certificate())
	}
	return NewHTTPChecker(&tls.Config{RootCAs: pool})
}

func get(t *testing.T, c client.Client, name string) *infrav1alpha1.Project {
	t.Helper()
	p := &infrav1alpha1.Project{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func readyOf(p *infrav1alpha1.Project) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(p.Status.Conditions, infrav1alpha1.ConditionReady); c != nil {
		return c.Status
	}
	return ""
}

// onlyProject restricts a prober round to one Project by wrapping the client
// list: tests in this package share one apiserver.
type onlyProject struct {
	client.Client
	name string
}

func (o onlyProject) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := o.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	pl := list.(*infrav1alpha1.ProjectList)
	var keep []infrav1alpha1.Project
	for _, p := range pl.Items {
		if p.Name == o.name {
			keep = append(keep, p)
		}
	}
	pl.Items = keep
	return nil
}

func TestProberAgainstEnvtest(t *testing.T) {
	ctx := context.Background()
	srv, code := readyzServer(t)
	srv2, _ := readyzServer(t)
	p := newProject(t, srv.Listener.Addr().String())
	spec0, gen0 := p.Spec.DeepCopy(), p.Generation

	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	pr := &Prober{Client: onlyProject{k8s, p.Name}, Checker: checkerFor(srv, srv2), Clock: clk, Timeout: 5 * time.Second, Concurrency: 2}

	round := func(advance time.Duration) int {
		t.Helper()
		clk.SetTime(clk.Now().Add(advance))
		n, err := pr.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if n := round(0); n != 1 {
		t.Fatalf("first success: %d patches, want 1", n)
	}
	got := get(t, k8s, p.Name)
	if readyOf(got) != metav1.ConditionTrue || got.Status.ObservedEndpoint != p.Spec.APIServerEndpoint ||
		got.Status.ObservedGeneration != p.Generation || got.Status.LastHealthyProbeTime == nil {
		t.Fatalf("after first success: %+v", got.Status)
	}
	rv := got.ResourceVersion

	// Healthy and under a minute since the last timestamp: no write at all.
	if n := round(20 * time.Second); n != 0 {
		t.Fatalf("unchanged health patched %d times", n)
	}
	if got := get(t, k8s, p.Name); got.ResourceVersion != rv {
		t.Fatalf("resourceVersion moved %s → %s without a change", rv, got.ResourceVersion)
	}
	// A minute later the timestamp is refreshed.
	if n := round(45 * time.Second); n != 1 {
		t.Fatalf("timestamp refresh: %d patches, want 1", n)
	}

	code.Store(http.StatusServiceUnavailable)
	// The first failure starts a streak (written); the second only counts
	// up, ten seconds after the last write (not written).
	for i, want := range []int32{1, 1} {
		round(10 * time.Second)
		if got := get(t, k8s, p.Name); readyOf(got) != metav1.ConditionTrue || got.Status.ConsecutiveFailures != want {
			t.Fatalf("failure %d: %+v", i+1, got.Status)
		}
	}
	round(10 * time.Second)
	got = get(t, k8s, p.Name)
	c := meta.FindStatusCondition(got.Status.Conditions, infrav1alpha1.ConditionReady)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonProbeFailed || !strings.Contains(c.Message, "HTTP 503") ||
		got.Status.ConsecutiveFailures != 3 {
		t.Fatalf("after 3 failures: %+v, %d failures", c, got.Status.ConsecutiveFailures)
	}

	code.Store(http.StatusOK)
	round(10 * time.Second)
	if got := get(t, k8s, p.Name); readyOf(got) != metav1.ConditionTrue || got.Status.ConsecutiveFailures != 0 {
		t.Fatalf("no immediate recovery: %+v", got.Status)
	}

	// Health never changed spec or generation.
	got = get(t, k8s, p.Name)
	if !equality.Semantic.DeepEqual(*spec0, got.Spec) || got.Generation != gen0 {
		t.Fatalf("prober changed spec: %+v → %+v", spec0, got.Spec)
	}

	// Endpoint change to a closed port: Unknown (not False, not True).
	dead := httptest.NewUnstartedServer(http.NotFoundHandler())
	deadAddr := dead.Listener.Addr().String()
	dead.Listener.Close()
	got.Spec.APIServerEndpoint = deadAddr
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	round(10 * time.Second)
	got = get(t, k8s, p.Name)
	if readyOf(got) != metav1.ConditionUnknown || got.Status.ObservedEndpoint != deadAddr || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("after endpoint change: %+v", got.Status)
	}
	// The new endpoint answers: Ready=True for the new generation.
	got.Spec.APIServerEndpoint = srv2.Listener.Addr().String()
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	round(10 * time.Second)
	got = get(t, k8s, p.Name)
	if readyOf(got) != metav1.ConditionTrue || got.Status.ObservedEndpoint != srv2.Listener.Addr().String() || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("new endpoint answered: %+v", got.Status)
	}
}

// countingChecker records the peak number of concurrent checks.
type countingChecker struct {
	mu        sync.Mutex
	cur, peak int
}

func (c *countingChecker) Check(ctx context.Context, _ string) error {
	c.mu.Lock()
	c.cur++
	if c.cur > c.peak {
		c.peak = c.cur
	}
	c.mu.Unlock()
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
	}
	c.mu.Lock()
	c.cur--
	c.mu.Unlock()
	return nil
}

func TestProberBoundsConcurrency(t *testing.T) {
	for i := 0; i < 6; i++ {
		newProject(t, fmt.Sprintf("p%d.concurrency.svc:443", i))
	}
	cc := &countingChecker{}
	pr := &Prober{Client: k8s, Checker: cc, Concurrency: 2, Timeout: time.Second}
	if _, err := pr.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cc.peak > 2 || cc.peak == 0 {
		t.Fatalf("peak concurrency %d, want 1..2", cc.peak)
	}
}

// TestProberIdentityRBAC runs the prober as a user bound only to the shipped
// coxswain-infra-project-status ClusterRole: it can patch status, and it
// cannot change spec or delete.
func TestProberIdentityRBAC(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "config", "rbac", "infra_project_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testkit.DecodeObjects(raw)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		found = found || o.GetName() == "coxswain-infra-project-status"
	}
	if !found {
		t.Fatal("config/rbac/infra_project_roles.yaml lacks coxswain-infra-project-status")
	}
	const user = "infra-apiserver-loopback-test"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-prober-status"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "coxswain-infra-project-status"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := k8s.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ucfg := rest.CopyConfig(cfg)
	ucfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	uc, err := client.New(ucfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyExplained(t, 10*time.Second, func() string {
		if err := uc.List(ctx, &infrav1alpha1.ProjectList{}); err != nil {
			return "status identity cannot list: " + err.Error()
		}
		return ""
	})

	srv, _ := readyzServer(t)
	p := newProject(t, srv.Listener.Addr().String())
	pr := &Prober{Client: onlyProject{uc, p.Name}, Checker: checkerFor(srv), Clock: clocktesting.NewFakePassiveClock(time.Now())}
	if n, err := pr.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("prober as status identity: %d patches, %v", n, err)
	}
	if readyOf(get(t, k8s, p.Name)) != metav1.ConditionTrue {
		t.Fatal("status identity's patch did not land")
	}

	specPatch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"apiServerEndpoint":"evil.svc:443"}}`))
	if err := uc.Patch(ctx, get(t, k8s, p.Name), specPatch); !apierrors.IsForbidden(err) {
		t.Fatalf("spec patch by status identity: want Forbidden, got %v", err)
	}
	// Spec fields sent to the status subresource are dropped by the API server.
	if err := uc.Status().Patch(ctx, get(t, k8s, p.Name), specPatch); err != nil {
		t.Fatalf("status patch carrying spec: %v", err)
	}
	if got := get(t, k8s, p.Name); got.Spec.APIServerEndpoint != p.Spec.APIServerEndpoint {
		t.Fatalf("status identity changed spec to %s", got.Spec.APIServerEndpoint)
	}
	if err := uc.Delete(ctx, get(t, k8s, p.Name)); !apierrors.IsForbidden(err) {
		t.Fatalf("delete by status identity: want Forbidden, got %v", err)
	}
}
