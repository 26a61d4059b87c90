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
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PolicyValidator checks the two rules of Coxswain's that no upstream
// validator knows: the controller is least-privilege (no rule of the CSV's
// permissions grants a wildcard), and the shared proxy's ServiceAccount
// holds no Kubernetes API rights (no CSV permission names it and no binding
// shipped beside the CSV binds it).
var PolicyValidator interfaces.Validator = interfaces.ValidatorFunc(validatePolicy)

func validatePolicy(objs ...any) []apierrors.ManifestResult {
	var results []apierrors.ManifestResult
	for _, o := range objs {
		if b, ok := o.(*manifests.Bundle); ok && b.CSV != nil {
			results = append(results, bundlePolicy(b))
		}
	}
	return results
}

func bundlePolicy(b *manifests.Bundle) apierrors.ManifestResult {
	result := apierrors.ManifestResult{Name: b.CSV.Name}
	strategy := b.CSV.Spec.InstallStrategy.StrategySpec
	result.Add(permissionFindings("spec.install.spec.permissions", strategy.Permissions)...)
	result.Add(permissionFindings("spec.install.spec.clusterPermissions", strategy.ClusterPermissions)...)
	result.Add(proxyBindingFindings(b.Objects)...)
	return result
}

// permissionFindings holds one field of the install strategy to both rules.
func permissionFindings(field string, perms []v1alpha1.StrategyDeploymentPermissions) []apierrors.Error {
	var errs []apierrors.Error
	for _, p := range perms {
		at := fmt.Sprintf("%s[%s]", field, p.ServiceAccountName)
		if p.ServiceAccountName == ProxyServiceAccount {
			errs = append(errs, apierrors.NewError(apierrors.ErrorFailedValidation,
				"the shared proxy ServiceAccount must hold no Kubernetes API rights", at, nil))
		}
		for i, r := range p.Rules {
			if w := Wildcards(r); len(w) > 0 {
				errs = append(errs, apierrors.NewError(apierrors.ErrorFailedValidation,
					fmt.Sprintf("grants a wildcard (%s); the controller is least-privilege", strings.Join(w, ", ")),
					fmt.Sprintf("%s.rules[%d]", at, i), nil))
			}
		}
	}
	return errs
}

// proxyBindingFindings finds the RoleBindings and ClusterRoleBindings among
// the bundle's manifests that bind the shared proxy's ServiceAccount.
func proxyBindingFindings(objs []*unstructured.Unstructured) []apierrors.Error {
	var errs []apierrors.Error
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == rbacv1.ServiceAccountKind && m["name"] == ProxyServiceAccount {
				errs = append(errs, apierrors.NewError(apierrors.ErrorFailedValidation,
					"binds the shared proxy ServiceAccount, which must hold no rights", "", KeyOf(o).String()))
			}
		}
	}
	return errs
}

// Wildcards lists the "*" entries of a policy rule.
func Wildcards(r rbacv1.PolicyRule) []string {
	var out []string
	for field, vals := range map[string][]string{"verbs": r.Verbs, "resources": r.Resources, "apiGroups": r.APIGroups, "nonResourceURLs": r.NonResourceURLs} {
		for _, v := range vals {
			if v == "*" || strings.HasSuffix(v, "/*") {
				out = append(out, field+"="+v)
			}
		}
	}
	sort.Strings(out)
	return out
}
