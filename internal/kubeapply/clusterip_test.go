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

package kubeapply

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

var api testkit.Envtest

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

func service(name, ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip,
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
		},
	}
}

// TestPrepareClusterIP against a real apiserver (envtest's Service range
// is testkit.ServiceCIDR, 10.0.0.0/16): a Service is recreated for a
// usable pinned address and left alone, with the refusal returned, for an unusable one.
func TestPrepareClusterIP(t *testing.T) {
	ctx := t.Context()
	c := api.Client(t)
	existing := service("vip", "")
	if err := c.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}
	if existing.Spec.ClusterIP == "" || existing.Spec.ClusterIP == "10.0.0.200" {
		t.Fatalf("the apiserver assigned %q", existing.Spec.ClusterIP)
	}

	// Outside the range: refused, the Service keeps its address.
	if err := PrepareClusterIP(ctx, c, service("vip", "192.0.2.1")); err == nil {
		t.Fatal("an address outside the Service range was not refused")
	}
	var got corev1.Service
	if err := c.Get(ctx, client.ObjectKeyFromObject(existing), &got); err != nil || got.UID != existing.UID {
		t.Fatalf("after a refused address the Service is %v (uid %s, was %s)", err, got.UID, existing.UID)
	}

	// Inside the range: the Service is recreated with it.
	if err := PrepareClusterIP(ctx, c, service("vip", "10.0.0.200")); err != nil {
		t.Fatal(err)
	}
	pinned := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(existing), pinned); err != nil || pinned.UID == existing.UID || pinned.Spec.ClusterIP != "10.0.0.200" {
		t.Fatalf("after a usable address: %v, ClusterIP %s, replaced %v", err, pinned.Spec.ClusterIP, pinned.UID != existing.UID)
	}

	// Already pinned, or not pinned at all: nothing happens.
	for _, d := range []*corev1.Service{service("vip", "10.0.0.200"), service("vip", "")} {
		if err := PrepareClusterIP(ctx, c, d); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pinned), &got); err != nil || got.UID != pinned.UID {
			t.Fatalf("a Service that needs no change was replaced: %v", err)
		}
	}
	// Taken by another Service: refused, and the Service is still there
	// (with an address the cluster picked).
	other := service("other", "")
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := PrepareClusterIP(ctx, c, service("other", "10.0.0.200")); err == nil {
		t.Fatal("an address another Service holds was not refused")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), &got); err != nil || got.Spec.ClusterIP == "" || got.Spec.ClusterIP == "10.0.0.200" {
		t.Fatalf("after a taken address the Service is %v with ClusterIP %q", err, got.Spec.ClusterIP)
	}
}
