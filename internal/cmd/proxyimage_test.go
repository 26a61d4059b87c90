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
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/coxswain-go/coxswain/internal/distribution"
	"github.com/coxswain-go/coxswain/internal/names"
)

// The install paths set the variable internal/distribution names.
func TestProxyImageEnvMatchesTheInstall(t *testing.T) {
	if names.ProxyImageEnv != distribution.ProxyImageEnv || names.ControllerContainerName != distribution.ControllerContainer {
		t.Fatalf("cmd reads $%s of container %s; the install sets $%s on container %s",
			names.ProxyImageEnv, names.ControllerContainerName, distribution.ProxyImageEnv, distribution.ControllerContainer)
	}
}

func TestProxyImageFlagDefaultsFromEnvironment(t *testing.T) {
	t.Setenv(names.ProxyImageEnv, "registry.example.test/platform/coxswain:e2e")
	f := newControllerCommand().Flags()
	if got := f.Lookup("proxy-image").Value.String(); got != "registry.example.test/platform/coxswain:e2e" {
		t.Errorf("--proxy-image = %q, want $%s", got, names.ProxyImageEnv)
	}
	if err := f.Parse([]string{"--proxy-image=other:1"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Lookup("proxy-image").Value.String(); got != "other:1" {
		t.Errorf("--proxy-image = %q, want the flag's other:1", got)
	}

	t.Setenv(names.ProxyImageEnv, "")
	if got := newControllerCommand().Flags().Lookup("proxy-image").Value.String(); got != "" {
		t.Errorf("--proxy-image = %q without $%s; want empty (own Pod, then %s)", got, names.ProxyImageEnv, builtinProxyImage)
	}
}

// TestResolveProxyImage runs the resolution against a real apiserver
// holding the controller's Pod.
func TestResolveProxyImage(t *testing.T) {
	c := api.Client(t)
	ctx := context.Background()
	const ns = "coxswain-system"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, containers ...corev1.Container) ownPod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.PodSpec{Containers: containers, AutomountServiceAccountToken: ptr.To(false)},
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("creating Pod %s: %v", name, err)
		}
		return ownPod{Namespace: ns, Name: name}
	}
	const installed = "registry.example.test/platform/coxswain:e2e"
	controllerPod := pod("coxswain-controller-abc",
		corev1.Container{Name: "sidecar", Image: "registry.example.test/sidecar:1"},
		corev1.Container{Name: "coxswain", Image: installed})
	onlyContainer := pod("renamed", corev1.Container{Name: "manager", Image: installed})
	noCoxswain := pod("two-others",
		corev1.Container{Name: "a", Image: "a:1"},
		corev1.Container{Name: "b", Image: "b:1"})

	for _, tc := range []struct {
		name    string
		flag    string
		pod     ownPod
		want    string
		from    proxyImageSource
		wantErr string
	}{
		{name: "the flag (or $COXSWAIN_PROXY_IMAGE) wins over the Pod", flag: "explicit:1", pod: controllerPod, want: "explicit:1", from: proxyImageFromFlag},
		{name: "else the coxswain container of the own Pod", pod: controllerPod, want: installed, from: proxyImageFromOwnPod},
		{name: "else the only container of the own Pod", pod: onlyContainer, want: installed, from: proxyImageFromOwnPod},
		{name: "outside a Pod: the built-in default", want: builtinProxyImage, from: proxyImageFromBuiltin},
		{name: "only POD_NAME known: the built-in default", pod: ownPod{Name: "x"}, want: builtinProxyImage, from: proxyImageFromBuiltin},
		{name: "a Pod without a coxswain container is an error", pod: noCoxswain, wantErr: `no container "coxswain"`},
		{name: "a Pod that cannot be read is an error", pod: ownPod{Namespace: ns, Name: "missing"}, wantErr: "reading the controller's own Pod " + ns + "/missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			got, from, err := resolveProxyImage(ctx, tc.flag, tc.pod, c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || from != tc.from {
				t.Errorf("got %q from %s, want %q from %s", got, from, tc.want, tc.from)
			}
		})
	}
}
