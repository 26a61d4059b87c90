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

package controlplane

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPKI: every certificate chains to the run's CA with the usage its
// component needs, the serving certificates cover the node IP and the
// kubernetes Service names, clients are system:masters, the
// service-account keys are a pair, and the kubeconfig authenticates with
// the admin certificate against the CA.
func TestPKI(t *testing.T) {
	dir := t.TempDir()
	nodeIP := net.ParseIP("10.244.0.1")
	p, err := newPKI(dir, []net.IP{nodeIP, net.ParseIP("10.96.0.1")}, []string{"kubernetes.default.svc"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CACertPEM) {
		t.Fatal("CACertPEM holds no certificate")
	}
	for _, tc := range []struct {
		file    string
		usage   x509.ExtKeyUsage
		masters bool
	}{
		{p.serverCertFile, x509.ExtKeyUsageServerAuth, false},
		{p.KubeletCertFile, x509.ExtKeyUsageServerAuth, false},
		{p.adminCertFile, x509.ExtKeyUsageClientAuth, true},
		{p.kubeletClientCertFile, x509.ExtKeyUsageClientAuth, true},
	} {
		c := readCert(t, tc.file)
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s: %v", filepath.Base(tc.file), err)
		}
		if got := slices.Contains(c.Subject.Organization, "system:masters"); got != tc.masters {
			t.Errorf("%s: system:masters %t, want %t", filepath.Base(tc.file), got, tc.masters)
		}
		if tc.usage == x509.ExtKeyUsageServerAuth {
			for _, host := range []string{"10.244.0.1", "10.96.0.1", "kubernetes.default.svc"} {
				if err := c.VerifyHostname(host); err != nil {
					t.Errorf("%s: %v", filepath.Base(tc.file), err)
				}
			}
		}
	}
	keyPEM, _ := os.ReadFile(p.saKeyFile)
	pubPEM, _ := os.ReadFile(p.saPubFile)
	kb, pb := decodePEM(t, keyPEM), decodePEM(t, pubPEM)
	key, err := x509.ParsePKCS8PrivateKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(pb)
	if err != nil {
		t.Fatal(err)
	}
	if rk, ok := key.(*rsa.PrivateKey); !ok || !rk.PublicKey.Equal(pub) {
		t.Error("sa.key and sa.pub are not an RSA key pair")
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := p.writeKubeconfig(kubeconfig, "https://10.244.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://10.244.0.1:6443" || string(rc.CAData) != string(p.CACertPEM) || string(rc.CertData) != string(p.adminCertPEM) {
		t.Errorf("kubeconfig: host %s, CA and admin certificate embedded: %t %t", rc.Host,
			string(rc.CAData) == string(p.CACertPEM), string(rc.CertData) == string(p.adminCertPEM))
	}
}

func decodePEM(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}

func TestFirstServiceIP(t *testing.T) {
	for cidr, want := range map[string]string{"10.96.0.0/16": "10.96.0.1", "10.96.5.7/16": "10.96.0.1", "172.20.0.0/24": "172.20.0.1"} {
		if ip, err := firstServiceIP(cidr); err != nil || ip.String() != want {
			t.Errorf("firstServiceIP(%q) = %v, %v; want %s", cidr, ip, err, want)
		}
	}
	for _, bad := range []string{"fd00::/64", "10.96.0.0", "bogus"} {
		if _, err := firstServiceIP(bad); err == nil {
			t.Errorf("firstServiceIP(%q) accepted", bad)
		}
	}
}

// TestWaitFor: a component that exits during startup, or never gets
// ready, fails with the tail of its log; one that gets ready does not.
func TestWaitFor(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "c.log")
	var script strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&script, "echo line%d; ", i)
	}
	p, err := process.Start(process.Spec{Name: "c", Path: "/bin/sh", Args: []string{"-c", script.String() + "exit 3"}, LogPath: logPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = waitFor(t.Context(), p, "c", 10*time.Second, logPath, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "c exited during startup (exit status 3)") ||
		!strings.HasSuffix(err.Error(), "\nline11\n"+strings.Join(lines(12, 30), "\n")) || strings.Contains(err.Error(), "line10\n") {
		t.Errorf("exited: %v; want the exit and the last 20 log lines", err)
	}

	sleeper, err := process.Start(process.Spec{Name: "s", Path: "/bin/sleep", Args: []string{"30"}, LogPath: logPath}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Stop(0) }()
	if err := waitFor(t.Context(), sleeper, "s", 300*time.Millisecond, logPath, func() bool { return false }); err == nil ||
		!strings.Contains(err.Error(), "s not ready within 300ms") {
		t.Errorf("never ready: %v", err)
	}
	if err := waitFor(t.Context(), sleeper, "s", time.Second, logPath, func() bool { return true }); err != nil {
		t.Errorf("ready: %v", err)
	}
	if got := tail(filepath.Join(dir, "absent.log"), 20); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("tail of a missing log: %q", got)
	}
}

func lines(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("line%d", i))
	}
	return out
}
