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
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

var (
	ctx       context.Context
	cancel    context.CancelFunc
	api       testkit.Envtest
	cfg       *rest.Config
	scheme    *runtime.Scheme
	k8sClient client.Client

	// installObjects is `kustomize build config/default`: the install as users get it.
	installObjects []*unstructured.Unstructured
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite (envtest)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	scheme = NewScheme()
	var err error
	cfg, err = api.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	rendered, err := testkit.Kustomize("config/default")
	Expect(err).NotTo(HaveOccurred())
	installObjects, err = testkit.DecodeObjects(rendered)
	Expect(err).NotTo(HaveOccurred())
	Expect(installObjects).NotTo(BeEmpty())

	// The admission policy and the Project ClusterRoles are part of what the
	// validation and RBAC specs prove, so they come from the rendered install.
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ClusterRole"} {
		for _, obj := range installObjectsOfKind(kind) {
			Expect(testkit.ServerSideApply(ctx, k8sClient, obj)).To(Succeed(), "applying %s %s", kind, obj.GetName())
		}
	}
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	Expect(api.Stop()).To(Succeed())
})

func installObjectsOfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range installObjects {
		if o.GetKind() == kind {
			out = append(out, o.DeepCopy())
		}
	}
	return out
}

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
