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

package bootstrap_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/discovery/bootstrap"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	installNS = "coxswain-system"
	waitFor   = 20 * time.Second
)

var td = spiffeid.RequireTrustDomainFromString(discovery.DefaultTrustDomain)

// The envtest apiserver (real TokenRequest, TokenReview and Events) starts
// once, on the first test that needs it.
var api testkit.Envtest

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_ = api.Client(t).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

// token creates ns/sa (if absent) and returns a real token for it with the
// given audience, via the TokenRequest API.
func token(t *testing.T, ns, sa, audience string) string {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, ns)
	_ = api.Client(t).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	tr, err := api.Clientset(t).CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	return tr.Status.Token
}

// newCA is a discovery CA with a freshly generated authority.
func newCA(t *testing.T) *identity.CA {
	t.Helper()
	certPEM, keyPEM, err := identity.GenerateAuthority(td, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca := identity.NewCA(td)
	if _, err := ca.SetAuthority(certPEM, keyPEM, nil); err != nil {
		t.Fatal(err)
	}
	return ca
}

// bootstrapFixture is a bootstrap server on 127.0.0.1 that records Events
// into the envtest apiserver.
type bootstrapFixture struct {
	addr     string
	ca       *identity.CA
	serverID spiffeid.ID
	reg      *prometheus.Registry
}

func startBootstrap(t *testing.T) *bootstrapFixture {
	t.Helper()
	ca := newCA(t)
	serverID, _ := discovery.ServiceAccountID(td, installNS, names.ControllerServiceAccount)
	serving, err := identity.NewServingSVID(ca, serverID, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: api.Clientset(t).EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, installNS)
	reg := prometheus.NewRegistry()
	b, err := bootstrap.NewServer(bootstrap.Options{
		CA:       ca,
		SVID:     serving,
		Reviewer: &identity.TokenReviewer{Client: api.Client(t), Audience: names.TokenAudience},
		Authorizer: &discovery.Authorizer{
			SharedPool: discovery.ServiceAccounts(installNS + "/" + names.SharedProxyServiceAccount),
			GatewayServiceAccount: func(ns, name string) (string, bool) {
				if ns == "apps" && name == "web" {
					return "web-coxswain", true
				}
				return "", false
			},
		},
		TTL:                  2 * time.Hour,
		UpstreamEndpoint:     "https://coxswain-controller-discovery.coxswain-system.svc:50051",
		ServerServiceAccount: names.ControllerServiceAccount,
		Recorder:             broadcaster.NewRecorder(scheme.Scheme, "coxswain-controller"),
		Regarding:            &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: installNS, Name: names.CASecretName},
		Registerer:           reg,
		Log:                  testr.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); <-done; broadcaster.Shutdown() })
	return &bootstrapFixture{addr: lis.Addr().String(), ca: ca, serverID: serverID, reg: reg}
}

// call sends a BootstrapRequest over server-auth TLS, verifying the server
// as the controller's SVID.
func (f *bootstrapFixture) call(t *testing.T, req *discoveryv1.BootstrapRequest) (*discoveryv1.BootstrapResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(credentials.NewTLS(
		tlsconfig.TLSClientConfig(f.ca.Bundle(), tlsconfig.AuthorizeID(f.serverID)))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return discoveryv1.NewDiscoveryClient(cc).Bootstrap(ctx, req)
}

// csr asks for names the CA must ignore.
func csr(t *testing.T) (string, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	evil, _ := url.Parse("spiffe://cluster.local/ns/kube-system/sa/admin")
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "admin"},
		DNSNames: []string{"kubernetes.default.svc"},
		URIs:     []*url.URL{evil},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})), key
}

func request(tok, csrPEM string, scope snapshot.Scope) *discoveryv1.BootstrapRequest {
	return &discoveryv1.BootstrapRequest{SaToken: tok, CsrPem: csrPEM, WireVersion: discovery.WireVersion, Scope: discovery.ScopeToProto(scope)}
}

func TestBootstrapIssuesExactlyTheServiceAccountSVID(t *testing.T) {
	api.Config(t)
	f := startBootstrap(t)
	csrPEM, key := csr(t)
	tok := token(t, installNS, names.SharedProxyServiceAccount, names.TokenAudience)
	resp, err := f.call(t, request(tok, csrPEM, snapshot.SharedPool()))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	svid, err := x509svid.Parse([]byte(resp.GetSvidCertPem()), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatalf("the response is not a valid SVID for the CSR's key: %v", err)
	}
	leaf := svid.Certificates[0]
	if want := "spiffe://cluster.local/ns/coxswain-system/sa/coxswain-shared-proxy"; svid.ID.String() != want || len(leaf.URIs) != 1 {
		t.Fatalf("SVID ID %s (URIs %v), want exactly %s", svid.ID, leaf.URIs, want)
	}
	if len(leaf.DNSNames) != 0 || leaf.Subject.CommonName != "" {
		t.Fatalf("the CSR's names leaked into the SVID: DNS %v CN %q", leaf.DNSNames, leaf.Subject.CommonName)
	}
	if life := time.Until(leaf.NotAfter); life < 119*time.Minute || life > 121*time.Minute {
		t.Fatalf("SVID lifetime %v, want the configured 2h", life)
	}
	if resp.GetNotAfterUnix() != leaf.NotAfter.Unix() || resp.GetExpectedServerSa() != names.ControllerServiceAccount {
		t.Fatal("response metadata does not match the SVID")
	}
	bundle, err := x509svidBundle(resp.GetTrustBundlePem())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := x509svid.Verify(svid.Certificates, bundle); err != nil {
		t.Fatalf("the SVID does not chain to the returned bundle: %v", err)
	}

	// The dedicated Gateway's SA gets its SVID for its own scope.
	tok = token(t, "apps", "web-coxswain", names.TokenAudience)
	if _, err := f.call(t, request(tok, csrPEM, snapshot.GatewayScope("apps", "web"))); err != nil {
		t.Fatalf("dedicated SA: %v", err)
	}
}

func TestBootstrapRefusals(t *testing.T) {
	api.Config(t)
	f := startBootstrap(t)
	csrPEM, _ := csr(t)
	cases := []struct {
		name   string
		req    *discoveryv1.BootstrapRequest
		code   codes.Code
		reason string // the Event's regarding object, "" for none
	}{
		{"wrong audience", request(token(t, installNS, names.SharedProxyServiceAccount, "https://kubernetes.default.svc"), csrPEM, snapshot.SharedPool()),
			codes.Unauthenticated, "Secret/" + names.CASecretName},
		{"garbage token", request("not-a-token", csrPEM, snapshot.SharedPool()), codes.Unauthenticated, "Secret/" + names.CASecretName},
		{"non-managed SA", request(token(t, "apps", "default", names.TokenAudience), csrPEM, snapshot.SharedPool()),
			codes.PermissionDenied, "ServiceAccount/default"},
		{"dedicated scope, wrong SA", request(token(t, "apps", "other-coxswain", names.TokenAudience), csrPEM, snapshot.GatewayScope("apps", "web")),
			codes.PermissionDenied, "ServiceAccount/other-coxswain"},
		{"wire mismatch", &discoveryv1.BootstrapRequest{SaToken: "x", CsrPem: csrPEM, WireVersion: 1}, codes.FailedPrecondition, ""},
		{"bad CSR", request(token(t, installNS, names.SharedProxyServiceAccount, names.TokenAudience), "junk", snapshot.SharedPool()), codes.InvalidArgument, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := f.call(t, c.req)
			if status.Code(err) != c.code {
				t.Fatalf("got %v (resp %v), want %s", err, resp, c.code)
			}
		})
	}
	// Every authentication or authorization refusal left a BootstrapRejected Event.
	want := map[string]int{}
	for _, c := range cases {
		if c.reason != "" {
			want[c.reason]++
		}
	}
	testkit.EventuallyWithin(t, waitFor, "BootstrapRejected Events", func() bool {
		got := map[string]int{}
		for _, ns := range []string{installNS, "apps"} {
			list := &eventsv1.EventList{}
			if err := api.Client(t).List(context.Background(), list, client.InNamespace(ns)); err != nil {
				return false
			}
			for _, e := range list.Items {
				if e.Reason == bootstrap.ReasonRejected && e.Type == corev1.EventTypeWarning {
					n := 1
					if e.Series != nil {
						n = int(e.Series.Count)
					}
					got[e.Regarding.Kind+"/"+e.Regarding.Name] += n
				}
			}
		}
		for k, v := range want {
			if got[k] < v {
				return false
			}
		}
		return true
	})
}

func TestBootstrapRefusesPlaintext(t *testing.T) {
	api.Config(t)
	f := startBootstrap(t)
	cc, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err = discoveryv1.NewDiscoveryClient(cc).Bootstrap(ctx, &discoveryv1.BootstrapRequest{WireVersion: discovery.WireVersion})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext bootstrap: got %v, want Unavailable", err)
	}
}

func x509svidBundle(pemText string) (*x509bundle.Bundle, error) {
	return x509bundle.Parse(td, []byte(pemText))
}
