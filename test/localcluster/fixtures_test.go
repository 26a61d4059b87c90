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

package localcluster_test

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

const (
	testNS     = "lc-test"
	tlsMount   = "/etc/coxswain-localcluster-test-tls" // absent on the host
	echoImage  = "registry.k8s.io/gateway-api/echo-basic:v1.5.1"
	podNetwork = "10.244.0.0/16"
)

// echoBasic returns the echo-basic binary: $LOCALCLUSTER_ECHO_BASIC, else
// built from the pinned conformance module (test/localcluster/echobasic).
func echoBasic(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOCALCLUSTER_ECHO_BASIC"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "echo-basic")
	cmd := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/gateway-api/conformance/echo-basic")
	cmd.Dir = filepath.Join(testkit.RepoRoot(), "test", "localcluster", "echobasic")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building echo-basic: %v\n%s", err, out)
	}
	return bin
}

// localClusterAssets skips the test unless it can run a local cluster
// (root, iproute2) and returns the asset directory.
func localClusterAssets(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: the local cluster needs root (network namespaces, a bridge, bind mounts); CI runs as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: iproute2's `ip` is missing (apt-get install -y iproute2, or `make localcluster-deps`)")
	}
	assets, err := testkit.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.Preflight(assets); err != nil {
		t.Fatal(err)
	}
	return assets
}

// coreDNS returns the CoreDNS binary behind coredns images:
// $LOCALCLUSTER_COREDNS (make coredns builds bin/coredns), else built from
// its own module (test/localcluster/coredns).
func coreDNS(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOCALCLUSTER_COREDNS"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "coredns")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(testkit.RepoRoot(), "test", "localcluster", "coredns")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building coredns: %v\n%s", err, out)
	}
	return bin
}

func echoDeployment() (*appsv1.Deployment, *corev1.Service) {
	labels := map[string]string{"app": "echo"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: testNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "echo", Image: echoImage,
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							// echo-basic serves TLS on 8443 from files at these
							// paths, and panics if they are missing: the Secret
							// volume must be mounted at tlsMount for the process.
							{Name: "TLS_SERVER_CERT", Value: tlsMount + "/crt"},
							{Name: "TLS_SERVER_PRIVKEY", Value: tlsMount + "/key"},
							{Name: "SERVICE_NAME", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "echo-config"}, Key: "service"}}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: tlsMount, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "echo-tls",
						Items:      []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "key"}},
					}}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: testNS},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(3000)}},
		},
	}
	return dep, svc
}

type echoReply struct {
	Namespace string `json:"namespace"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
	Path      string `json:"path"`
}

func getEcho(client *http.Client, url string) (echoReply, error) {
	var r echoReply
	resp, err := client.Get(url)
	if err != nil {
		return r, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return r, err
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode, b)
	}
	return r, json.Unmarshal(b, &r)
}

func poolOf(cert *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(cert)
	return p
}

// dumpLogs prints the tail of every log the cluster wrote.
func dumpLogs(t *testing.T, dir string) {
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("==== %s ====\n%s", path, b)
		return nil
	})
}
