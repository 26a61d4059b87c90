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
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// installRoles are the rules of the install's ClusterRoles and Roles, by
// name.
type installRoles struct {
	cluster, namespaced map[string][]rbacv1.PolicyRule
}

// rbacPermissions turns the bindings of the operator's own ServiceAccounts
// (deploymentSAs) into the install strategy's permissions (a RoleBinding's
// rules) and cluster permissions (a ClusterRoleBinding's), and marks the
// bindings, and the roles only they use, consumed. Bindings of other
// subjects travel beside the CSV as they are.
func rbacPermissions(install []*unstructured.Unstructured, deploymentSAs map[string]bool, consumed keySet) (v1alpha1.StrategyDetailsDeployment, error) {
	var strategy v1alpha1.StrategyDetailsDeployment
	roles, err := loadInstallRoles(install)
	if err != nil {
		return strategy, err
	}
	perms := map[string][]rbacv1.PolicyRule{}
	clusterPerms := map[string][]rbacv1.PolicyRule{}
	for _, o := range install {
		kind := o.GetKind()
		if kind != "ClusterRoleBinding" && kind != "RoleBinding" {
			continue
		}
		subjects, ref, err := bindingOf(o)
		if err != nil {
			return strategy, err
		}
		if len(subjects) != 1 || subjects[0].Kind != rbacv1.ServiceAccountKind || !deploymentSAs[subjects[0].Name] {
			continue // not the operator's own identity: travels as is
		}
		sa := subjects[0].Name
		g, err := roles.grantOf(o, ref)
		if err != nil {
			return strategy, err
		}
		if g.cluster {
			clusterPerms[sa] = append(clusterPerms[sa], g.rules...)
		} else {
			perms[sa] = append(perms[sa], g.rules...)
		}
		if g.role != nil {
			consumed[*g.role] = true
		}
		consumed[KeyOf(o)] = true
	}
	for _, sa := range sortedKeys(clusterPerms) {
		strategy.ClusterPermissions = append(strategy.ClusterPermissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: clusterPerms[sa]})
	}
	for _, sa := range sortedKeys(perms) {
		strategy.Permissions = append(strategy.Permissions, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: perms[sa]})
	}
	return strategy, nil
}

func loadInstallRoles(install []*unstructured.Unstructured) (installRoles, error) {
	roles := installRoles{cluster: map[string][]rbacv1.PolicyRule{}, namespaced: map[string][]rbacv1.PolicyRule{}}
	for _, o := range FilterKind(install, "ClusterRole") {
		var cr rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr); err != nil {
			return roles, fmt.Errorf("ClusterRole %s: %w", o.GetName(), err)
		}
		if cr.AggregationRule != nil {
			return roles, fmt.Errorf("ClusterRole %s aggregates; a CSV cannot express it", cr.Name)
		}
		roles.cluster[cr.Name] = cr.Rules
	}
	for _, o := range FilterKind(install, "Role") {
		var r rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &r); err != nil {
			return roles, fmt.Errorf("role %s: %w", o.GetName(), err)
		}
		roles.namespaced[r.Name] = r.Rules
	}
	return roles, nil
}

// grant is what one binding of the operator's ServiceAccount gives it.
type grant struct {
	rules []rbacv1.PolicyRule
	// cluster: the rules are cluster permissions (a ClusterRoleBinding of
	// a ClusterRole), else namespaced permissions.
	cluster bool
	// role is the role the CSV now expresses, so it does not travel beside
	// it: the ClusterRole of a ClusterRoleBinding or a RoleBinding's Role.
	// A RoleBinding of a ClusterRole consumes nothing: the ClusterRole may
	// serve others.
	role *Key
}

func (r installRoles) grantOf(binding *unstructured.Unstructured, ref rbacv1.RoleRef) (grant, error) {
	kind := binding.GetKind()
	roleKind, roles := "ClusterRole", r.cluster
	if ref.Kind == "Role" {
		roleKind, roles = "Role", r.namespaced
	}
	rules, ok := roles[ref.Name]
	if !ok {
		return grant{}, fmt.Errorf("%s %s binds the missing %s %s", kind, binding.GetName(), roleKind, ref.Name)
	}
	switch {
	case ref.Kind == "ClusterRole" && kind == "ClusterRoleBinding":
		return grant{rules: rules, cluster: true, role: &Key{Group: rbacv1.GroupName, Kind: "ClusterRole", Name: ref.Name}}, nil
	case ref.Kind == "Role":
		return grant{rules: rules, role: &Key{Group: rbacv1.GroupName, Kind: "Role", Namespace: binding.GetNamespace(), Name: ref.Name}}, nil
	default:
		return grant{rules: rules}, nil
	}
}

// bindingOf reads the subjects and role of a ClusterRoleBinding or
// RoleBinding.
func bindingOf(o *unstructured.Unstructured) ([]rbacv1.Subject, rbacv1.RoleRef, error) {
	if o.GetKind() == "ClusterRoleBinding" {
		var crb rbacv1.ClusterRoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crb); err != nil {
			return nil, rbacv1.RoleRef{}, fmt.Errorf("ClusterRoleBinding %s: %w", o.GetName(), err)
		}
		return crb.Subjects, crb.RoleRef, nil
	}
	var rb rbacv1.RoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &rb); err != nil {
		return nil, rbacv1.RoleRef{}, fmt.Errorf("RoleBinding %s: %w", o.GetName(), err)
	}
	return rb.Subjects, rb.RoleRef, nil
}
