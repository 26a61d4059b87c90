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

package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// impersonating binds user to the ClusterRole of the rendered install and
// returns a client that acts as that user.
func impersonating(user, clusterRole string) client.WithWatch {
	Expect(installObjectsOfKind("ClusterRole")).To(ContainElement(
		WithTransform(func(u *unstructured.Unstructured) string { return u.GetName() }, Equal(clusterRole))),
		"the install must ship ClusterRole %s", clusterRole)

	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, binding))).To(Succeed())

	userCfg := rest.CopyConfig(cfg)
	userCfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.NewWithWatch(userCfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// RBAC caches take a moment to see a new binding.
	Eventually(func() error {
		return c.List(ctx, &infrav1alpha1.ProjectList{})
	}).WithTimeout(10 * time.Second).Should(Succeed())
	return c
}

func typedProject() *infrav1alpha1.Project {
	p := &infrav1alpha1.Project{}
	Expect(runtimeFromUnstructured(validProject(), p)).To(Succeed())
	return p
}

func expectForbidden(err error) {
	GinkgoHelper()
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
}

func readyStatusPatch() client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedEndpoint":"p-1.shard-a.svc:6443","consecutiveFailures":1}}`))
}

var _ = Describe("Project RBAC split by subresource", Ordered, func() {
	var lifecycle, status, reader client.WithWatch

	BeforeAll(func() {
		lifecycle = impersonating("project-lifecycle", "coxswain-infra-project-lifecycle")
		status = impersonating("infra-apiserver-loopback", "coxswain-infra-project-status")
		reader = impersonating("shard-service", "coxswain-infra-project-reader")
	})

	It("lets the lifecycle identity create, update and delete Projects but not write status", func() {
		p := typedProject()
		Expect(lifecycle.Create(ctx, p)).To(Succeed())

		p.Spec.APIServerEndpoint = "p-1.shard-b.svc:6443"
		Expect(lifecycle.Update(ctx, p)).To(Succeed())
		Expect(lifecycle.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"relayRoots":""}}`)))).To(Succeed())

		expectForbidden(lifecycle.Status().Patch(ctx, p, readyStatusPatch()))
		p.Status.ObservedEndpoint = "p-1.shard-b.svc:6443"
		expectForbidden(lifecycle.Status().Update(ctx, p))

		Expect(lifecycle.Delete(ctx, p)).To(Succeed())
	})

	It("lets the status identity write status only", func() {
		p := typedProject()
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, p)).To(Succeed()) })

		Expect(status.Status().Patch(ctx, p, readyStatusPatch())).To(Succeed())
		got := &infrav1alpha1.Project{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Status.ConsecutiveFailures).To(Equal(int32(1)))

		got.Spec.APIServerEndpoint = "p-1.shard-c.svc:6443"
		expectForbidden(status.Update(ctx, got))
		expectForbidden(status.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"apiServerEndpoint":"x.svc:1"}}`))))
		expectForbidden(status.Create(ctx, typedProject()))
		expectForbidden(status.Delete(ctx, got))
	})

	It("lets the reader get, list and watch only", func() {
		p := typedProject()
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, p)).To(Succeed()) })

		Expect(reader.Get(ctx, client.ObjectKeyFromObject(p), &infrav1alpha1.Project{})).To(Succeed())
		list := &infrav1alpha1.ProjectList{}
		Expect(reader.List(ctx, list)).To(Succeed())
		Expect(list.Items).NotTo(BeEmpty())

		w, err := reader.Watch(ctx, &infrav1alpha1.ProjectList{})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		Eventually(w.ResultChan()).WithTimeout(10 * time.Second).Should(Receive(
			WithTransform(func(e watch.Event) watch.EventType { return e.Type }, Equal(watch.Added))))

		expectForbidden(reader.Create(ctx, typedProject()))
		p.Spec.APIServerEndpoint = "p-1.shard-d.svc:6443"
		expectForbidden(reader.Update(ctx, p))
		expectForbidden(reader.Status().Patch(ctx, p, readyStatusPatch()))
		expectForbidden(reader.Delete(ctx, p))
	})
})
