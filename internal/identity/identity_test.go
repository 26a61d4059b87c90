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

package identity_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const waitFor = 20 * time.Second

var td = spiffeid.RequireTrustDomainFromString("cluster.local")

// The envtest apiserver starts once, on the first test that needs it.
var api testkit.Envtest

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_ = api.Client(t).Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}

func newCA(t *testing.T) (*identity.CA, []byte, []byte) {
	t.Helper()
	certPEM, keyPEM, err := identity.GenerateAuthority(td, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca := identity.NewCA(td)
	if _, err := ca.SetAuthority(certPEM, keyPEM, nil); err != nil {
		t.Fatal(err)
	}
	return ca, certPEM, keyPEM
}

// laggingReader answers NotFound for every Get, as an informer cache does
// until it has seen an object just created.
type laggingReader struct{ client.Client }

func (laggingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
}

// A CA created behind a cache that has not seen it yet is loaded at once,
// and the trust ConfigMap published with it, not a reload later.
func TestCASecretCreatedBehindALaggingCache(t *testing.T) {
	k8s := api.Client(t)
	ns := "ca-lagging"
	ensureNamespace(t, ns)
	ca := identity.NewCA(td)
	src := &identity.SecretSource{Client: laggingReader{k8s}, Namespace: ns, Name: names.CASecretName, Mode: identity.ModeAuto,
		CA: ca, TrustConfigMap: names.TrustBundleConfigMapName, Log: testr.New(t)}
	if err := src.Load(context.Background()); err != nil {
		t.Fatalf("the first Load after creating the CA: %v", err)
	}
	if len(ca.BundlePEM()) == 0 {
		t.Fatal("no CA loaded")
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: names.TrustBundleConfigMapName}, cm); err != nil {
		t.Fatalf("the trust ConfigMap was not published with the CA: %v", err)
	}
	if cm.Data[names.TrustBundleKey] != string(ca.BundlePEM()) {
		t.Fatal("the trust ConfigMap does not hold the CA's bundle")
	}
}

func TestCASecretFirstWriterWins(t *testing.T) {
	k8s := api.Client(t)
	ns := "ca-auto"
	ensureNamespace(t, ns)
	const replicas = 3
	cas := make([]*identity.CA, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		cas[i] = identity.NewCA(td)
		src := &identity.SecretSource{Client: k8s, Namespace: ns, Name: names.CASecretName, Mode: identity.ModeAuto, CA: cas[i], Log: testr.New(t)}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = src.Load(context.Background()) }()
	}
	wg.Wait()
	sec := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: names.CASecretName}, sec); err != nil {
		t.Fatal(err)
	}
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if got := string(cas[i].BundlePEM()); got != string(sec.Data["tls.crt"]) {
			t.Fatalf("replica %d loaded a CA other than the Secret's", i)
		}
	}
	if sec.Type != corev1.SecretTypeTLS {
		t.Fatalf("secret type %q", sec.Type)
	}
}

func TestExternalCAAbsentThenHotReloaded(t *testing.T) {
	k8s := api.Client(t)
	ns := "ca-external"
	ensureNamespace(t, ns)
	ca := identity.NewCA(td)
	src := &identity.SecretSource{Client: k8s, Namespace: ns, Name: names.CASecretName, Mode: identity.ModeExternal, CA: ca,
		TrustConfigMap: names.TrustBundleConfigMapName, Interval: 100 * time.Millisecond, Log: testr.New(t)}
	if err := src.Load(context.Background()); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("external mode with no Secret: expected an 'absent' error, got %v", err)
	}
	if ca.Ready() {
		t.Fatal("no CA may be served without the Secret")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	defer func() { cancel(); <-done }()

	_, cert1, key1 := newCA(t)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CASecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": cert1, "tls.key": key1},
	}
	if err := k8s.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the external CA to load", ca.Ready)
	gen := ca.Generation()
	root1 := ca.Bundle().X509Authorities()[0]

	// Rotate: the new authority signs, the old root stays trusted.
	_, cert2, key2 := newCA(t)
	sec.Data = map[string][]byte{"tls.crt": cert2, "tls.key": key2}
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the rotated CA to load", func() bool { return ca.Generation() > gen })
	roots := ca.Bundle().X509Authorities()
	if len(roots) != 2 || !roots[1].Equal(root1) {
		t.Fatalf("after rotation the bundle must hold the new and the old root, got %d roots", len(roots))
	}
	testkit.EventuallyWithin(t, waitFor, "the trust ConfigMap to carry both roots", func() bool {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.TrustBundleConfigMapName}, cm); err != nil {
			return false
		}
		return cm.Data["ca.crt"] == string(ca.BundlePEM()) && strings.Count(cm.Data["ca.crt"], "BEGIN CERTIFICATE") == 2
	})
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	id, _ := svidID("a", "b")
	certs, err := ca.SignPublicKey(key.Public(), id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(cert2)
	if string(certs[0].RawIssuer) != string(mustParse(t, block.Bytes).RawSubject) || certs[0].CheckSignatureFrom(mustParse(t, block.Bytes)) != nil {
		t.Fatal("SVIDs must be signed by the rotated authority")
	}
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// svidID is the SVID of ServiceAccount ns/sa in the test trust domain
// (the form discovery.ServiceAccountID gives; identity signs any ID of its
// trust domain).
func svidID(ns, sa string) (spiffeid.ID, error) { return svidIDIn(td.Name(), ns, sa) }

func svidIDIn(domain, ns, sa string) (spiffeid.ID, error) {
	return spiffeid.FromSegments(spiffeid.RequireTrustDomainFromString(domain), "ns", ns, "sa", sa)
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
