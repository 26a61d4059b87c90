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

package localcluster

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestPlanLaunch(t *testing.T) {
	b := Binaries{EchoBasic: "/bin/echo-basic", Coxswain: "/bin/coxswain"}
	tests := []struct {
		image         string
		command, args []string
		want          launchPlan
		wantErr       string
	}{
		{image: "registry.k8s.io/gateway-api/echo-basic:v1.5.1", want: launchPlan{kind: launchBinary, path: "/bin/echo-basic", args: []string{}, defaultPort: 3000}},
		{image: "gcr.io/k8s-staging-gateway-api/echo-basic@sha256:abcd", args: []string{"-x"}, want: launchPlan{kind: launchBinary, path: "/bin/echo-basic", args: []string{"-x"}, defaultPort: 3000}},
		{image: "coxswain:dev", args: []string{"proxy", "--a=b"}, want: launchPlan{kind: launchBinary, path: "/bin/coxswain", args: []string{"proxy", "--a=b"}}},
		{image: "ghcr.io/coxswain-go/coxswain:v1.0.0", command: []string{"/coxswain", "controller"}, args: []string{"--v=2"},
			want: launchPlan{kind: launchBinary, path: "/bin/coxswain", args: []string{"controller", "--v=2"}}},
		{image: "localhost:5000/coxswain", want: launchPlan{kind: launchBinary, path: "/bin/coxswain", args: []string{}}},
		{image: "registry.k8s.io/coredns/coredns:v1.12.2", args: []string{"-conf", "/root/Corefile"}, want: launchPlan{kind: launchPlaceholder}},
		{image: "nginx:1.27", wantErr: `image "nginx:1.27" has no local binary`},
		{image: "example.com/coxswain-operator:v1", wantErr: "has no local binary"},
	}
	for _, tt := range tests {
		got, err := b.planLaunch(tt.image, tt.command, tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.image, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.image, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.image, got, tt.want)
		}
	}
	if _, err := (Binaries{}).planLaunch("coxswain:dev", nil, nil); err == nil || !strings.Contains(err.Error(), "LOCALCLUSTER_COXSWAIN") {
		t.Errorf("unconfigured coxswain binary: %v", err)
	}
}

func TestExpandVars(t *testing.T) {
	vals := map[string]string{"A": "1", "POD_NAME": "p"}
	for in, want := range map[string]string{
		"plain":           "plain",
		"$(A)":            "1",
		"x-$(POD_NAME)-y": "x-p-y",
		"$(MISSING)":      "$(MISSING)",
		"$$(A)":           "$(A)",
		"cost $5":         "cost $5",
		"$(A":             "$(A",
		"trailing $":      "trailing $",
	} {
		if got := expandVars(in, vals); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeObjects is an in-memory objectSource for pure helper tests.
type fakeObjects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (f fakeObjects) Secret(_, name string) (*corev1.Secret, bool, error) {
	s, ok := f.secrets[name]
	return s, ok, nil
}

func (f fakeObjects) ConfigMap(_, name string) (*corev1.ConfigMap, bool, error) {
	cm, ok := f.configMaps[name]
	return cm, ok, nil
}

func TestResolveEnv(t *testing.T) {
	src := fakeObjects{
		secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"token": []byte("t0k"), "B": []byte("b")}}},
		configMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"mode": "fast", "A": "a"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-abc-12345", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"}}
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}, Prefix: "CM_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "token"}}},
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "mode"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "nope", Optional: ptr.To(true)}}},
			{Name: "ADDR", Value: "$(POD_IP):8080"},
			{Name: "HOME", Value: "/override"},
		},
	}
	base := []corev1.EnvVar{{Name: "HOME", Value: "/root"}, {Name: "PATH", Value: "/bin"}}
	got, err := resolveEnv(pod, c, podFacts{podIP: "10.244.1.5", hostIP: "10.244.0.1"}, src, base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"HOME=/override", "PATH=/bin", "CM_A=a", "CM_mode=fast", "POD_NAME=web-abc-12345", "POD_NAMESPACE=ns",
		"POD_IP=10.244.1.5", "HOST_IP=10.244.0.1", "APP=web", "TOKEN=t0k", "MODE=fast", "ADDR=10.244.1.5:8080"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env\n got %q\nwant %q", got, want)
	}

	// Missing required references are errors the caller retries.
	for name, env := range map[string]corev1.EnvVar{
		"secret":     {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}},
		"secret key": {Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "absent"}}},
		"configmap":  {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}},
		"field":      {Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.bogus"}}},
	} {
		if _, err := resolveEnv(pod, &corev1.Container{Env: []corev1.EnvVar{env}}, podFacts{}, src, nil); err == nil {
			t.Errorf("%s: missing reference resolved without error", name)
		}
	}
}

func TestContainerResource(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	for _, tt := range []struct {
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "2"},
		{corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "1500"},
		{corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}, "250"},
		{corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, "64"},
		{corev1.ResourceFieldSelector{Resource: "requests.memory"}, "0"},
	} {
		got, err := containerResource(c, &tt.ref)
		if err != nil || got != tt.want {
			t.Errorf("%s/%s: %q, %v; want %q", tt.ref.Resource, tt.ref.Divisor.String(), got, err, tt.want)
		}
	}
}

func TestReadinessTarget(t *testing.T) {
	echo := launchPlan{kind: launchBinary, defaultPort: 3000}
	tests := []struct {
		name string
		c    corev1.Container
		plan launchPlan
		env  map[string]string
		want probeTarget
	}{
		{"image default", corev1.Container{}, echo, nil, probeTarget{port: 3000}},
		{"HTTP_PORT overrides the default", corev1.Container{}, echo, map[string]string{"HTTP_PORT": "8080"}, probeTarget{port: 8080}},
		{"first TCP container port", corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 9000}}}, echo, nil, probeTarget{port: 9000}},
		{"nothing to wait for", corev1.Container{}, launchPlan{}, nil, probeTarget{}},
		{"readiness httpGet by port name", corev1.Container{
			Ports:          []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 2, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("admin")}}},
		}, echo, nil, probeTarget{port: 9901, path: "/readyz", period: 2e9, explicit: true}},
		{"readiness tcpSocket", corev1.Container{
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(81)}}},
		}, echo, nil, probeTarget{port: 81, period: 10e9, explicit: true}},
	}
	for _, tt := range tests {
		if got := readinessTarget(&tt.c, tt.plan, tt.env); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestPlaceholderPorts(t *testing.T) {
	c := &corev1.Container{
		Ports:          []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 53, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9153}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8181)}}},
		LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("metrics")}}},
	}
	if got, want := placeholderPorts(c), []int32{53, 9153, 8181}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestVolumeWriter(t *testing.T) {
	dir := t.TempDir()
	src := fakeObjects{
		secrets:    map[string]*corev1.Secret{"tls": {Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")}}},
		configMaps: map[string]*corev1.ConfigMap{"kube-root-ca.crt": {Data: map[string]string{"ca.crt": "CA"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"b": "2", "a": "1"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
				Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "crt"}, {Key: "tls.key", Path: "sub/key", Mode: ptr.To[int32](0o600)}}}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
			{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/x"}}},
		}}}
	w := volumeWriter{dir: dir, src: src, token: func(_ *corev1.Pod, _ string, _ int64) (string, error) { return "TOKEN", nil }}
	paths, err := w.write(pod)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"tls/crt": "CERT", "tls/sub/key": "KEY",
		"kube-api-access/token": "TOKEN", "kube-api-access/ca.crt": "CA", "kube-api-access/namespace": "ns",
		"labels/labels": "a=\"1\"\nb=\"2\"",
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", file, b, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tls/sub/key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v %v", st, err)
	}
	if paths["host"] != "/var/lib/x" || paths["scratch"] != filepath.Join(dir, "scratch") {
		t.Errorf("paths: %v", paths)
	}

	// A missing Secret is an error (retried by the caller); an optional one is not.
	pod.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), `secret "absent" not found`) {
		t.Errorf("missing secret: %v", err)
	}
	pod.Spec.Volumes[0].Secret.Optional = ptr.To(true)
	if _, err := w.write(pod); err != nil {
		t.Errorf("optional secret: %v", err)
	}
	// Paths cannot escape the volume directory.
	pod.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
		Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "../../etc/passwd"}}}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("escaping path: %v", err)
	}
	// Unsupported volume types are named.
	pod.Spec.Volumes = []corev1.Volume{{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
	if _, err := w.write(pod); err == nil || !strings.Contains(err.Error(), "unsupported volume type") {
		t.Errorf("pvc: %v", err)
	}
}

func TestMountTargets(t *testing.T) {
	root := t.TempDir()
	m := &mountTargets{refs: map[string]int{}}
	target := filepath.Join(root, "a", "b", "c")
	h1, err := m.ensure(target, true)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := m.ensure(target, true) // a second pod with the same mountPath
	if err != nil {
		t.Fatal(err)
	}
	if len(h1) != 3 || len(h2) != 3 {
		t.Fatalf("held %v and %v, want the 3 created directories each", h1, h2)
	}
	m.release(h1)
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("target removed while another pod uses it: %v", err)
	}
	m.release(h2)
	if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
		t.Fatalf("created directories not removed: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("pre-existing directory removed: %v", err)
	}
	fileTarget := filepath.Join(root, "f")
	h, err := m.ensure(fileTarget, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fileTarget); err != nil || st.IsDir() {
		t.Fatalf("file target: %v %v", st, err)
	}
	m.release(h)
	for _, bad := range []string{"/", "/proc/x", "/sys", "/dev/shm", "relative/path"} {
		if _, err := m.ensure(bad, true); err == nil {
			t.Errorf("mount target %q accepted", bad)
		}
	}
}

func TestNetworkAllocate(t *testing.T) {
	n, err := newNetwork("cxbr0", "10.244.0.1/16")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 600; i++ {
		ip, err := n.allocate()
		if err != nil {
			t.Fatal(err)
		}
		if !n.subnet.Contains(ip) || ip.Equal(n.gateway) || ip[2] == 0 || ip[3] == 0 || ip[3] == 255 || seen[ip.String()] {
			t.Fatalf("bad or duplicate pod address %s", ip)
		}
		seen[ip.String()] = true
	}
	for _, bad := range []string{"127.0.0.1/16", "10.244.0.1/24", "not-a-cidr", "fd00::1/64"} {
		if _, err := newNetwork("cxbr0", bad); err == nil {
			t.Errorf("bridge CIDR %q accepted", bad)
		}
	}
	if a, b := podNetNames("0a1b2c3d-4e5f-6789-abcd-ef0123456789"); a != "cxp-0a1b2c3d4e5" || b != "cxv0a1b2c3d4e5" || len(b) > 15 {
		t.Errorf("podNetNames: %s %s", a, b)
	}
}

func TestStatusFailedPod(t *testing.T) {
	n, _ := newNetwork("cxbr0", "10.244.0.1/16")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	r := newPodRunner(&kubelet{net: n}, pod)
	r.failPhase, r.reason, r.message = corev1.PodFailed, ReasonUnsupportedImage, "no binary"
	st := r.buildStatus(corev1.PodStatus{})
	if st.Phase != corev1.PodFailed || st.Reason != ReasonUnsupportedImage || st.Message != "no binary" ||
		st.ContainerStatuses[0].State.Waiting == nil || st.ContainerStatuses[0].State.Waiting.Reason != ReasonUnsupportedImage {
		t.Errorf("status: %+v", st)
	}
}

func TestHostsFile(t *testing.T) {
	ready, notReady := true, false
	svc := func(ns, name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
	}
	slice := func(ns, svc string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svc + "-x", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps,
		}
	}
	ep := func(ip string, r *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: r}}
	}
	withIP := svc("app", "cip", corev1.ServiceTypeClusterIP)
	withIP.Spec.ClusterIP = "10.96.0.20"
	headless := svc("app", "headless", corev1.ServiceTypeClusterIP)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	addrs := serviceAddresses(
		[]*corev1.Service{
			withIP, headless,
			svc("default", "kubernetes", corev1.ServiceTypeClusterIP),
			svc("app", "web", corev1.ServiceTypeClusterIP),
			svc("app", "down", corev1.ServiceTypeClusterIP),
			svc("app", "ext", corev1.ServiceTypeExternalName),
			svc("app", "empty", corev1.ServiceTypeClusterIP),
		},
		[]*discoveryv1.EndpointSlice{
			slice("default", "kubernetes", ep("10.244.0.1", nil)),
			slice("app", "web", ep("10.244.1.9", &ready), ep("10.244.1.3", &ready), ep("10.244.1.1", &notReady)),
			slice("app", "down", ep("10.244.1.4", &notReady)),
			slice("app", "ext", ep("10.244.1.5", &ready)),
			slice("app", "cip", ep("10.244.1.6", &ready)),
			slice("app", "headless", ep("10.244.1.8", &ready)),
		})
	want := map[string]string{"default/kubernetes": "10.244.0.1", "app/web": "10.244.1.3", "app/cip": "10.96.0.20", "app/headless": "10.244.1.8"}
	if !reflect.DeepEqual(addrs, want) {
		t.Fatalf("addresses %v, want %v", addrs, want)
	}
	got := hostsFile("app", "client-1", "10.244.1.7", addrs)
	for _, line := range []string{
		"127.0.0.1\tlocalhost\n",
		"10.244.1.7\tclient-1\n",
		"10.244.1.3\tweb.app.svc.cluster.local web.app.svc web.app web\n",
		"10.244.0.1\tkubernetes.default.svc.cluster.local kubernetes.default.svc kubernetes.default\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
}

func TestServiceBackends(t *testing.T) {
	ready, notReady := true, false
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	name := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	got := serviceBackends([]*discoveryv1.EndpointSlice{{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{
			{Name: name("http"), Port: port(3000), Protocol: &tcp},
			{Name: name("dns"), Port: port(53), Protocol: &udp},
		},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.9"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"10.244.1.2"}},
			{Addresses: []string{"10.244.1.3"}, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
		},
	}})
	want := map[string][]string{"ns/web/http": {"10.244.1.2:3000", "10.244.1.9:3000"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// A terminating endpoint gets no new connections while a ready one
	// exists; when none is ready, those still serving do (kube-proxy's
	// terminating-endpoint fallback), never one that stopped serving.
	terminating := func(serving bool) discoveryv1.EndpointConditions {
		return discoveryv1.EndpointConditions{Ready: &notReady, Serving: &serving, Terminating: &ready}
	}
	slice := func(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "t-" + fmt.Sprint(len(eps)), Labels: map[string]string{discoveryv1.LabelServiceName: "t"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: name("http"), Port: port(80), Protocol: &tcp}},
			Endpoints:   eps,
		}
	}
	for _, tc := range []struct {
		name string
		eps  []discoveryv1.Endpoint
		want []string
	}{
		{"ready beats terminating", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: terminating(true)},
			{Addresses: []string{"10.244.1.6"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
		}, []string{"10.244.1.6:80"}},
		{"only terminating: the serving ones", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: terminating(true)},
			{Addresses: []string{"10.244.1.7"}, Conditions: terminating(false)},
		}, []string{"10.244.1.5:80"}},
		{"none serving", []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.7"}, Conditions: terminating(false)},
		}, nil},
	} {
		if got := serviceBackends([]*discoveryv1.EndpointSlice{slice(tc.eps...)})["ns/t/http"]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	lb := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5", "fd00::5"}}}
	if got := frontendAddresses(lb, "10.244.0.2"); !reflect.DeepEqual(got, []string{"10.96.0.5", "10.244.0.2"}) {
		t.Errorf("frontend addresses %v", got)
	}
	if got := frontendAddresses(&corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}, ""); len(got) != 0 {
		t.Errorf("headless frontend addresses %v", got)
	}
}

func TestRenderLog(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	w := &timestampWriter{stream: "stdout", w: &buf, mu: &mu}
	for _, chunk := range []string{"first line\nsec", "ond line\n", "third\n", "partial"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	lines := splitLines([]byte(buf.String()))
	if len(lines) != 3 {
		t.Fatalf("stored %q: want 3 complete lines", buf.String())
	}
	stored := []string{
		"2026-11-29T10:00:00.5Z stdout one",
		"2026-11-29T10:00:01Z stderr two",
		"not a stored line",
		"2026-11-29T10:00:02.25Z stdout three",
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tt := range []struct {
		name string
		q    logQuery
		want string
	}{
		{"all", logQuery{tailLines: -1}, "one\ntwo\nnot a stored line\nthree\n"},
		{"since", logQuery{tailLines: -1, since: at("2026-11-29T10:00:01Z")}, "two\nnot a stored line\nthree\n"},
		{"tail", logQuery{tailLines: 1}, "three\n"},
		{"timestamps", logQuery{tailLines: 2, timestamps: true}, "not a stored line\n2026-11-29T10:00:02.25Z three\n"},
		{"limit", logQuery{tailLines: -1, limitBytes: 5}, "one\nt"},
	} {
		if got := string(renderLog(stored, tt.q)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	now := at("2026-11-29T10:00:10Z")
	q, err := parseLogQuery(url.Values{"sinceSeconds": {"5"}, "tailLines": {"3"}, "timestamps": {"true"}, "follow": {"true"}}, now)
	if err != nil || !q.since.Equal(now.Add(-5*time.Second)) || q.tailLines != 3 || !q.timestamps || !q.follow {
		t.Errorf("parseLogQuery: %+v, %v", q, err)
	}
	for _, bad := range []url.Values{{"sinceTime": {"yesterday"}}, {"tailLines": {"-1"}}, {"limitBytes": {"0"}}} {
		if _, err := parseLogQuery(bad, now); err == nil {
			t.Errorf("parseLogQuery(%v) accepted", bad)
		}
	}
}

func TestRemoveRecordedMountTargets(t *testing.T) {
	root := t.TempDir()
	emptyDir := filepath.Join(root, "a", "empty")
	fullDir := filepath.Join(root, "full")
	emptyFile := filepath.Join(root, "f")
	fullFile := filepath.Join(root, "g")
	for _, d := range []string{emptyDir, fullDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, data := range map[string]string{emptyFile: "", fullFile: "data", filepath.Join(fullDir, "x"): "x"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	record := filepath.Join(root, "mounts")
	list := strings.Join([]string{filepath.Join(root, "a"), emptyDir, fullDir, emptyFile, fullFile, "/proc", "relative"}, "\n")
	if err := os.WriteFile(record, []byte(list+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed := removeRecordedMountTargets(record)
	if len(removed) != 3 {
		t.Errorf("removed %v, want the empty directory, its (then empty) parent and the empty file", removed)
	}
	for _, p := range []string{filepath.Join(root, "a"), emptyFile, record} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s not removed", p)
		}
	}
	for _, p := range []string{fullDir, fullFile} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
