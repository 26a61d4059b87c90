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

package admin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// TestAdminAPIAuthorizedByTokenReviewAndSubjectAccessReview serves the
// admin API over real TLS on loopback, authorized against a real
// kube-apiserver (envtest): no token and a forged token get 401, a
// ServiceAccount without RBAC gets 403, one allowed to get Gateways reads
// every view; the dashboard's static files need no token and carry a CSP.
func TestAdminAPIAuthorizedByTokenReviewAndSubjectAccessReview(t *testing.T) {
	env := testkit.StartEnvtest(t)
	cs := env.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "default"
	reader := serviceAccountToken(ctx, t, cs, ns, "reader")
	nobody := serviceAccountToken(ctx, t, cs, ns, "nobody")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gateway-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"gateways"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gateway-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "gateway-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "reader"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	model := &Model{}
	model.Accept(ctx, viewsFixture(t).Result)
	srv, err := NewServer(Options{Addr: "127.0.0.1:0", Auth: &ReviewAuthorizer{Client: cs, TTL: time.Millisecond}, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.opts.Addr = lis.Addr().String()
	_ = lis.Close()
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(sctx) }()
	t.Cleanup(func() { stop(); <-done })
	base := "https://" + srv.opts.Addr
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	testkit.EventuallyWithin(t, 10*time.Second, "the admin port answers", func() bool {
		r, err := hc.Get(base + "/")
		if err == nil {
			_ = r.Body.Close()
		}
		return err == nil
	})

	get := func(path, token string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		r, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = r.Body.Close() }()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, path, token string
		want              int
	}{
		{"no token", "/api/v1/fleet", "", http.StatusUnauthorized},
		{"forged token", "/api/v1/fleet", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln", http.StatusUnauthorized},
		{"no RBAC", "/api/v1/problems", nobody, http.StatusForbidden},
		{"reader fleet", "/api/v1/fleet", reader, http.StatusOK},
		{"reader routing", "/api/v1/routing?gateway=apps/web", reader, http.StatusOK},
		{"reader problems", "/api/v1/problems", reader, http.StatusOK},
		{"reader topology", "/api/v1/topology", reader, http.StatusOK},
		{"unknown path", "/api/v1/secrets", reader, http.StatusNotFound},
	} {
		if got, body := get(c.path, c.token); got != c.want {
			t.Errorf("%s: GET %s = %d, want %d (%s)", c.name, c.path, got, c.want, body)
		}
	}
	_, body := get("/api/v1/whoami", reader)
	if !strings.Contains(body, "system:serviceaccount:default:reader") {
		t.Errorf("whoami: %s", body)
	}
	_, body = get("/api/v1/problems", reader)
	var pv ProblemsView
	if err := json.Unmarshal([]byte(body), &pv); err != nil || len(pv.Problems) == 0 {
		t.Errorf("problems: %v %s", err, body)
	}

	r, err := hc.Get(base + "/app.js")
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("app.js: %d, CSP %q", r.StatusCode, r.Header.Get("Content-Security-Policy"))
	}
}

func serviceAccountToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err))
	}
	return tr.Status.Token
}
