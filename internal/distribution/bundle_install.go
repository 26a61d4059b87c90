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

package distribution

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// InstallObjects converts a bundle into the objects OLM creates for it in
// namespace: the CRDs, a ServiceAccount per install-strategy identity, a
// Role/RoleBinding and ClusterRole/ClusterRoleBinding per permission entry,
// the Deployments, and the other manifests (namespaced ones moved into
// namespace). Names of generated RBAC follow "<csv>-<sa>".
func (b *Bundle) InstallObjects(namespace string) ([]*unstructured.Unstructured, error) {
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	var typed []any
	for _, sa := range strategyServiceAccounts(spec) {
		typed = append(typed, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: namespace},
		})
	}
	for _, p := range spec.Permissions {
		typed = append(typed, b.permissionRBAC(p, namespace, false)...)
	}
	for _, p := range spec.ClusterPermissions {
		typed = append(typed, b.permissionRBAC(p, namespace, true)...)
	}
	for _, d := range spec.DeploymentSpecs {
		typed = append(typed, &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: namespace, Labels: d.Label},
			Spec:       d.Spec,
		})
	}

	var out []*unstructured.Unstructured
	for _, c := range b.CRDs {
		out = append(out, c.DeepCopy())
	}
	for _, obj := range typed {
		m, err := toMap(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	for _, o := range b.Others {
		out = append(out, installedManifest(o, namespace))
	}
	return out, nil
}

// strategyServiceAccounts are the ServiceAccounts the install strategy
// names, sorted: those its Deployments run as and those it grants to.
func strategyServiceAccounts(spec v1alpha1.StrategyDetailsDeployment) []string {
	sas := map[string]bool{}
	for _, d := range spec.DeploymentSpecs {
		sas[d.Spec.Template.Spec.ServiceAccountName] = true
	}
	for _, p := range append(append([]v1alpha1.StrategyDeploymentPermissions{}, spec.Permissions...), spec.ClusterPermissions...) {
		sas[p.ServiceAccountName] = true
	}
	return sortedKeys(sas)
}

// permissionRBAC is the role and binding OLM creates for one permission
// entry: a Role and RoleBinding in namespace, or for cluster permissions a
// ClusterRole and ClusterRoleBinding.
func (b *Bundle) permissionRBAC(p v1alpha1.StrategyDeploymentPermissions, namespace string, cluster bool) []any {
	name := b.CSV.Name + "-" + p.ServiceAccountName
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: namespace}}
	if cluster {
		return []any{
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Rules:      p.Rules,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subjects,
			},
		}
	}
	return []any{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Rules:      p.Rules,
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subjects,
		},
	}
}

// installedManifest is a manifest shipped beside the CSV as OLM installs
// it: namespaced kinds moved into namespace, and the ServiceAccount
// subjects of bindings too (OLM only learns the namespace at install time).
func installedManifest(o *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	c := o.DeepCopy()
	if c.GetNamespace() != "" || namespacedBundleKind(c.GetKind()) {
		c.SetNamespace(namespace)
	}
	if subjects, ok, _ := unstructured.NestedSlice(c.Object, "subjects"); ok {
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == rbacv1.ServiceAccountKind {
				m["namespace"] = namespace
			}
		}
		_ = unstructured.SetNestedSlice(c.Object, subjects, "subjects")
	}
	return c
}

func namespacedBundleKind(kind string) bool {
	switch kind {
	case "ClusterRole", "ClusterRoleBinding", "PriorityClass", "ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink", "CustomResourceDefinition":
		return false
	}
	return true
}
