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

package cmd

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/relay"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
	"github.com/coxswain-go/coxswain/internal/infra/trust/trusttest"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

func writeKubeconfig(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

func runInfra(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

func writeServerCert(t *testing.T, dir string) (certFile, keyFile string) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "relay"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(k)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestInfraCommands drives the infra commands end to end against envtest:
// project setup / rotate-ca / teardown, serve infra-prober and serve relay.
func TestInfraCommands(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, api.Config(t), kubeconfig)
	s := trusttest.Signer("cosmos-cli", "cmd")
	keyPEM, _ := trust.MarshalSigner(s)
	keyFile, kekFile, keysFile := filepath.Join(dir, "sign.key"), filepath.Join(dir, "kek"), filepath.Join(dir, "keys.yaml")
	_ = os.WriteFile(keyFile, keyPEM, 0o600)
	_ = os.WriteFile(kekFile, trusttest.SampleKEK(), 0o600)
	ks, _ := trust.MarshalKeySet(trusttest.KeySet(s))
	_ = os.WriteFile(keysFile, ks, 0o600)

	readyz := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(readyz.Close)
	caFile := filepath.Join(dir, "probe-ca.pem")
	_ = os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: readyz.Certificate().Raw}), 0o600)

	ctx := context.Background()
	name, shard := uuid.NewString(), uuid.NewString()
	common := []string{"--kubeconfig", kubeconfig, "--signing-key-file", keyFile, "--signing-key-id", s.KeyID}
	setup := append([]string{"infra", "project", "setup", "--name", name, "--shard-id", shard,
		"--endpoint", readyz.Listener.Addr().String(), "--kek-file", kekFile}, common...)

	out, err := runInfra(ctx, setup...)
	if err != nil || !strings.Contains(out, "created (new agent CA)") {
		t.Fatalf("setup: %q %v", out, err)
	}
	if out, err = runInfra(ctx, setup...); err != nil || !strings.Contains(out, "unchanged") {
		t.Fatalf("setup rerun: %q %v", out, err)
	}
	moved := append([]string{}, setup...)
	moved[6] = uuid.NewString()
	if _, err := runInfra(ctx, moved...); err == nil || !strings.Contains(err.Error(), "shard migration") {
		t.Fatalf("shard move: %v", err)
	}

	// serve infra-prober marks the project Ready.
	kc, err := infraClient(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(ctx)
	perr := make(chan error, 1)
	go func() {
		_, err := runInfra(pctx, "serve", "infra-prober", "--kubeconfig", kubeconfig, "--interval", "100ms",
			"--probe-ca-file", caFile, "--metrics-bind-address", "0")
		perr <- err
	}()
	testkit.EventuallyExplained(t, 20*time.Second, func() string {
		p := &infrav1alpha1.Project{}
		if err := kc.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, infrav1alpha1.ConditionReady) {
			return fmt.Sprintf("prober did not mark the project Ready: %+v", p.Status)
		}
		return ""
	})
	pcancel()
	select {
	case err := <-perr:
		if err != nil {
			t.Fatalf("infra-prober: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("infra-prober did not stop")
	}

	// serve relay writes a snapshot with the project.
	certFile, tlsKeyFile := writeServerCert(t, dir)
	snap := filepath.Join(dir, "snapshot.json")
	rctx, rcancel := context.WithCancel(ctx)
	rerr := make(chan error, 1)
	go func() {
		_, err := runInfra(rctx, "serve", "relay", "--shard_id", shard, "--kubeconfig", kubeconfig,
			"--trust-keys-file", keysFile, "--snapshot-file", snap, "--tls-cert-file", certFile, "--tls-key-file", tlsKeyFile,
			"--listen-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0")
		rerr <- err
	}()
	testkit.EventuallyWithin(t, 20*time.Second, "the relay to write its snapshot", func() bool {
		s, ok, _ := relay.LoadSnapshot(snap)
		return ok && len(s.Projects) == 1 && s.Projects[0].Name == name
	})
	rcancel()
	select {
	case err := <-rerr:
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("relay did not stop")
	}

	if out, err = runInfra(ctx, append([]string{"infra", "project", "rotate-ca", "start", "--name", name, "--kek-file", kekFile}, common...)...); err != nil || !strings.Contains(out, "updated") {
		t.Fatalf("rotate-ca start: %q %v", out, err)
	}
	if out, err = runInfra(ctx, append([]string{"infra", "project", "rotate-ca", "finish", "--name", name, "--grace-period", "1h"}, common...)...); err != nil || !strings.Contains(out, "kept until") {
		t.Fatalf("rotate-ca finish: %q %v", out, err)
	}
	if out, err = runInfra(ctx, "infra", "project", "teardown", "--kubeconfig", kubeconfig, "--name", name, "--shard-id", shard); err != nil || !strings.Contains(out, "deleted") {
		t.Fatalf("teardown: %q %v", out, err)
	}
	if err := kc.Get(ctx, types.NamespacedName{Name: name}, &infrav1alpha1.Project{}); err == nil {
		t.Fatal("project still present after teardown")
	}
}
