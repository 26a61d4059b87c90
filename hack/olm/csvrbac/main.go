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

// Command csvrbac prints the ServiceAccounts, Roles, RoleBindings,
// ClusterRoles and ClusterRoleBindings OLM creates for a
// ClusterServiceVersion's permissions and clusterPermissions, as a YAML
// stream. It reads the CSV (YAML or JSON, as stored in the cluster, so the
// owner references carry its UID) on stdin.
//
// The objects come from OLM's own resolver.RBACForClusterServiceVersion,
// the function the catalog operator's InstallPlan steps are generated from:
// without the catalog operator (it needs a registry image), the OLM
// end-to-end test applies them in the InstallPlan's place and the OLM
// operator then finds its requirements met and creates the Deployment.
//
//	kubectl get csv coxswain.v0.1.0 -n coxswain-system -o json | csvrbac | kubectl apply -f -
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/install"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "csvrbac:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading the CSV: %w", err)
	}
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		return fmt.Errorf("decoding the CSV: %w", err)
	}
	if csv.UID == "" {
		return fmt.Errorf("CSV %s/%s has no UID: pass the CSV as the cluster stores it (kubectl get csv -o json)", csv.Namespace, csv.Name)
	}
	perms, err := resolver.RBACForClusterServiceVersion(csv)
	if err != nil {
		return fmt.Errorf("CSV %s/%s: %w", csv.Namespace, csv.Name, err)
	}
	for _, p := range perms {
		if p.ServiceAccount.Namespace == "" {
			// clusterPermissions-only accounts come without a namespace;
			// the InstallPlan creates them in the CSV's.
			p.ServiceAccount.Namespace = csv.Namespace
		}
		if err := write(out, corev1.SchemeGroupVersion.WithKind("ServiceAccount"), p.ServiceAccount); err != nil {
			return err
		}
		for _, o := range p.Roles {
			if err := write(out, rbacv1.SchemeGroupVersion.WithKind("Role"), o); err != nil {
				return err
			}
		}
		for _, o := range p.RoleBindings {
			if err := write(out, rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), o); err != nil {
				return err
			}
		}
		for _, o := range p.ClusterRoles {
			if err := write(out, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), o); err != nil {
				return err
			}
		}
		for _, o := range p.ClusterRoleBindings {
			o.Namespace = "" // cluster-scoped; the resolver copies the CSV's namespace in
			if err := write(out, rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), o); err != nil {
				return err
			}
		}
	}
	return nil
}

// write prints obj as one YAML document of kind gvk, labelled
// olm.managed=true as the InstallPlan labels every object it creates: the
// OLM operator's informers see only objects with that label once the
// cluster holds no unlabelled OLM objects (on a fresh cluster, from the
// start), so without it OLM is never told the RBAC has arrived and a CSV
// whose requirements it checked first stays Pending until a resync.
func write(out io.Writer, gvk schema.GroupVersionKind, obj runtime.Object) error {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	labels := m.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[install.OLMManagedLabelKey] = install.OLMManagedLabelValue
	m.SetLabels(labels)
	data, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", gvk.Kind, err)
	}
	_, err = fmt.Fprintf(out, "---\n%s", data)
	return err
}
