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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

const installNamespace = "coxswain-system"

// policyResources are the resources of our policy CRDs
// (gateway.coxswain-labs.dev).
var policyResources = []string{
	"ipaccesscontrols", "ratelimits", "basicauths", "jwtauths", "coxswainexternalauths", "compressions",
	"requestsizelimits", "pathrewriteregexes", "retrypolicies", "coxswainbackendpolicies", "clienttrafficpolicies",
}

func objectNames(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	return names
}

// serviceAccountCan asks the apiserver whether a ServiceAccount of the
// install may perform verb on resource.
func serviceAccountCan(sa string, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + installNamespace + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + installNamespace, "system:authenticated"},
		ResourceAttributes: &attrs,
	}}
	Expect(k8sClient.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

var _ = Describe("install manifests (kustomize build config/default)", Ordered, func() {
	It("renders the namespace, CRDs, admission policy, RBAC and controller", func() {
		Expect(objectNames(installObjectsOfKind("Namespace"))).To(ConsistOf(installNamespace))
		crds := []string{
			"coxswaingatewayparameters.gateway.coxswain-labs.dev",
			"coxswainingressclassparameters.ingress.coxswain-labs.dev",
			"projects.infra.apoxy.dev",
		}
		for _, plural := range policyResources {
			crds = append(crds, plural+".gateway.coxswain-labs.dev")
		}
		Expect(objectNames(installObjectsOfKind("CustomResourceDefinition"))).To(ConsistOf(crds))
		Expect(objectNames(installObjectsOfKind("ClusterRole"))).To(ConsistOf(
			"coxswain-manager-role",
			"coxswain-infra-project-lifecycle", "coxswain-infra-project-status", "coxswain-infra-project-reader"))
		Expect(objectNames(installObjectsOfKind("ValidatingAdmissionPolicy"))).To(ConsistOf("coxswain-infra-project-shard-label"))
		Expect(objectNames(installObjectsOfKind("ServiceAccount"))).To(ConsistOf("coxswain-controller", "coxswain-shared-proxy"))
		Expect(objectNames(installObjectsOfKind("Deployment"))).To(ConsistOf("coxswain-controller"))
		for _, o := range installObjects {
			if o.GetKind() != "Namespace" && o.GetNamespace() != "" {
				Expect(o.GetNamespace()).To(Equal(installNamespace), "%s %s", o.GetKind(), o.GetName())
			}
		}
	})

	It("binds no Role or ClusterRole to the proxy ServiceAccount", func() {
		for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
			for _, b := range installObjectsOfKind(kind) {
				subjects, _, err := unstructured.NestedSlice(b.Object, "subjects")
				Expect(err).NotTo(HaveOccurred())
				for _, s := range subjects {
					Expect(s).NotTo(HaveKeyWithValue("name", "coxswain-shared-proxy"), "%s %s", kind, b.GetName())
				}
			}
		}
	})

	It("passes a server-side dry run against the apiserver, persisting nothing", func() {
		// Namespaced objects can only be admitted into an existing namespace.
		for _, ns := range installObjectsOfKind("Namespace") {
			Expect(testkit.ServerSideApply(ctx, k8sClient, ns)).To(Succeed())
		}
		for _, obj := range installObjects {
			Expect(testkit.ServerSideApply(ctx, k8sClient, obj, client.DryRunAll)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
		}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: installNamespace, Name: "coxswain-controller"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run must not create the Deployment, got %v", err)
	})

	It("grants the controller what it needs and the proxy nothing, once applied", func() {
		for _, obj := range installObjects {
			Expect(testkit.ServerSideApply(ctx, k8sClient, obj)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
		}
		gw := func(verb, resource, sub string) authorizationv1.ResourceAttributes {
			return authorizationv1.ResourceAttributes{Group: "gateway.networking.k8s.io", Resource: resource, Subresource: sub, Verb: verb}
		}
		lease := authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Namespace: installNamespace, Verb: "update", Name: "coxswain-leader-lock"}
		tokenReview := authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}
		secrets := authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list"}
		projects := authorizationv1.ResourceAttributes{Group: "infra.apoxy.dev", Resource: "projects", Verb: "list"}

		Expect(serviceAccountCan("coxswain-controller", gw("watch", "httproutes", ""))).To(BeTrue())
		Expect(serviceAccountCan("coxswain-controller", gw("patch", "gateways", "status"))).To(BeTrue())
		Expect(serviceAccountCan("coxswain-controller", lease)).To(BeTrue())
		Expect(serviceAccountCan("coxswain-controller", tokenReview)).To(BeTrue())
		Expect(serviceAccountCan("coxswain-controller", gw("update", "httproutes", ""))).To(BeFalse(), "the controller never writes route specs")
		for _, plural := range policyResources {
			policy := func(verb, sub string) authorizationv1.ResourceAttributes {
				return authorizationv1.ResourceAttributes{Group: "gateway.coxswain-labs.dev", Resource: plural, Subresource: sub, Verb: verb}
			}
			Expect(serviceAccountCan("coxswain-controller", policy("watch", ""))).To(BeTrue(), "watch %s", plural)
			Expect(serviceAccountCan("coxswain-controller", policy("patch", "status"))).To(BeTrue(), "patch %s/status", plural)
			Expect(serviceAccountCan("coxswain-controller", policy("update", ""))).To(BeFalse(), "the controller never writes %s specs", plural)
			Expect(serviceAccountCan("coxswain-shared-proxy", policy("list", ""))).To(BeFalse(), "proxy must not list %s", plural)
		}

		for _, attrs := range []authorizationv1.ResourceAttributes{gw("watch", "httproutes", ""), gw("patch", "gateways", "status"), lease, tokenReview, secrets, projects} {
			Expect(serviceAccountCan("coxswain-shared-proxy", attrs)).To(BeFalse(), "proxy must not %s %s", attrs.Verb, attrs.Resource)
		}
	})
})
