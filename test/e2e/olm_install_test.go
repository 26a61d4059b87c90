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

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

// The OLM install path's steps: install the operator from a bundle, check
// OLM owns what it created, uninstall and check it is gone.

const (
	olmNamespace      = "olm" // the OLM operator's own namespace (--namespace)
	operatorGroupName = "coxswain"
	// The tree under test is installed as the next release: CSV
	// coxswain.v0.2.0 with image coxswain:v0.2.0, which the local kubelet
	// runs as the coxswain binary under test (Binaries.CoxswainTags).
	currentVersion = "0.2.0"
	currentTag     = "v" + currentVersion
	currentImage   = "coxswain:" + currentTag
	// OLM's labels on what it creates for a CSV (ownerutil in OLM).
	olmOwnerLabel     = "olm.owner"
	olmOwnerKindLabel = "olm.owner.kind"
	olmOwnerNSLabel   = "olm.owner.namespace"
	// The label an InstallPlan puts on every object it creates (the CSV,
	// its ServiceAccount and RBAC); csvrbac adds it to the RBAC.
	olmManagedLabel = "olm.managed"
)

// olmTools are the OLM binaries and CRDs the test uses.
type olmTools struct {
	olm     string // cmd/olm, the OLM operator
	csvRBAC string // hack/olm/csvrbac
	chart   string // OLM's deploy/chart: crds/ and templates/
}

// olmEnv is the local cluster with OLM running.
type olmEnv struct {
	*lcEnv
	tools    olmTools
	coxswain string // this tree's binary, for `coxswain uninstall`
}

// checkOLMNeverRestarted fails the test when the OLM operator's container
// restarted (it crashed or exited).
func (o *olmEnv) checkOLMNeverRestarted(t *testing.T) {
	t.Helper()
	pods := &corev1.PodList{}
	o.list(t, pods, client.InNamespace(olmNamespace), client.MatchingLabels{"app": "olm-operator"})
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("the OLM operator (pod %s) restarted %d times", p.Name, cs.RestartCount)
			}
		}
	}
}

// logOLMOnFailure prints, when the test failed, the end of the OLM
// operator's log and every CSV's phase: CI keeps only the test's output.
func (o *olmEnv) logOLMOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	csvs, err := o.c.Kubectl(ctx, nil, "get", "csv", "-A", "-o", "custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,PHASE:.status.phase,REASON:.status.reason")
	t.Logf("CSVs at the failure (err %v):\n%s", err, csvs)
	logs, err := o.c.Kubectl(ctx, nil, "logs", "-n", olmNamespace, "-l", "app=olm-operator", "--tail=80")
	t.Logf("the OLM operator's last log lines (err %v):\n%s", err, logs)
}

// installOperator installs Coxswain from bundle b with CSV csv the OLM way,
// into the install namespace, and waits for the CSV to succeed and the
// controller to be ready. repo's config/crd/policy holds the admission
// policy a bundle cannot carry.
func (o *olmEnv) installOperator(t *testing.T, b *olmBundle, csv *operatorsv1alpha1.ClusterServiceVersion, repo string) {
	t.Helper()
	o.apply(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: %[2]s, namespace: %[1]s}
spec: {}
`, installNS, operatorGroupName))
	o.kubectl(t, "apply", "--server-side", "-f", policyFile(repo))
	o.applyBundleManifests(t, b, installNS)
	o.createCSV(t, csv)
	o.waitCSVSucceeded(t, csv.Name, 3*time.Minute)
	if _, err := o.c.WaitForPodsReady(o.ctx, installNS, controllerLb, 1, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
}

// policyFile is the Project admission policy the docs have users apply
// next to the bundle.
func policyFile(repo string) string {
	return filepath.Join(repo, "config", "crd", "policy", "project_shard_label.yaml")
}

// createCSV creates csv in the install namespace, then applies the RBAC
// OLM's resolver derives from it (owned by the stored CSV), as the
// InstallPlan would; both carry olm.managed=true, the label OLM's
// informers select on (docs/e2e.md).
func (o *olmEnv) createCSV(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	csv = csv.DeepCopy()
	csv.Namespace = installNS
	if csv.Labels == nil {
		csv.Labels = map[string]string{}
	}
	csv.Labels[olmManagedLabel] = "true"
	if err := o.cl.Create(o.ctx, csv); err != nil {
		t.Fatalf("creating CSV %s: %v", csv.Name, err)
	}
	stored, err := o.c.Kubectl(o.ctx, nil, "get", "csv", csv.Name, "-n", installNS, "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get csv %s: %v\n%s", csv.Name, err, stored)
	}
	cmd := exec.CommandContext(o.ctx, o.tools.csvRBAC)
	cmd.Stdin = strings.NewReader(stored)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rbac, err := cmd.Output()
	if err != nil {
		t.Fatalf("csvrbac %s: %v\n%s", csv.Name, err, stderr.String())
	}
	// One field manager per CSV, as the InstallPlan of each CSV adds its
	// own owner reference: the ServiceAccount both releases use keeps the
	// older CSV's owner reference while the newer one's is added. With one
	// manager for both, the second apply would drop the first CSV's owner
	// reference, and OLM, seeing the account owned by another CSV alone,
	// would send the replaced CSV back to Pending (requirements not met)
	// before the new one could replace it - a race the upgrade lost under
	// load.
	if out, err := o.c.Kubectl(o.ctx, rbac, "apply", "--server-side", "--force-conflicts", "--field-manager", "olm-installplan-"+csv.Name, "-f", "-"); err != nil {
		t.Fatalf("applying the RBAC of CSV %s: %v\n%s\n%s", csv.Name, err, out, rbac)
	}
}

// waitCSVSucceeded waits for the CSV's phase Succeeded.
func (o *olmEnv) waitCSVSucceeded(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: name}, csv); err != nil {
			return err.Error()
		}
		if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
			return fmt.Sprintf("CSV %s: phase %q, reason %q: %s%s", name, csv.Status.Phase, csv.Status.Reason, csv.Status.Message, unmetRequirements(csv))
		}
		return ""
	})
}

// unmetRequirements lists what OLM last found missing for csv (its
// requirement statuses other than Present, and their unsatisfied
// dependents), for a failure message.
func unmetRequirements(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	var out []string
	for _, r := range csv.Status.RequirementStatus {
		if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
			out = append(out, fmt.Sprintf("%s %s: %s %s", r.Kind, r.Name, r.Status, r.Message))
		}
		for _, d := range r.Dependents {
			if d.Status != operatorsv1alpha1.DependentStatusReasonSatisfied {
				out = append(out, fmt.Sprintf("%s of %s %s: %s %s", d.Kind, r.Kind, r.Name, d.Status, d.Message))
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; unmet: " + strings.Join(out, "; ")
}

// checkOLMOwnsController asserts that OLM created the controller
// Deployment from the CSV (its owner labels and owner reference) with the
// CSV's image, and copied the CSV into the other namespaces
// (AllNamespaces).
func (o *olmEnv) checkOLMOwnsController(t *testing.T, csvName string) {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: csvName}, csv); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: names.ControllerDeploymentName}, d); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{olmOwnerLabel: csvName, olmOwnerKindLabel: operatorsv1alpha1.ClusterServiceVersionKind, olmOwnerNSLabel: installNS}
	for k, v := range want {
		if d.Labels[k] != v {
			t.Errorf("Deployment %s: label %s=%q, want %q (labels %v)", d.Name, k, d.Labels[k], v, d.Labels)
		}
	}
	if !ownedBy(d.OwnerReferences, csv) {
		t.Errorf("Deployment %s: owner references %+v do not name CSV %s (uid %s)", d.Name, d.OwnerReferences, csvName, csv.UID)
	}
	if got, want := d.Spec.Template.Spec.Containers[0].Image, controllerImage(csv); got != want {
		t.Errorf("Deployment %s runs image %q, the CSV says %q", d.Name, got, want)
	}
	testkit.EventuallyExplained(t, time.Minute, func() string {
		copied := &operatorsv1alpha1.ClusterServiceVersion{}
		if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: "default", Name: csvName}, copied); err != nil {
			return "no copied CSV in namespace default: " + err.Error()
		}
		if copied.Labels[operatorsv1alpha1.CopiedLabelKey] != installNS {
			return fmt.Sprintf("CSV default/%s is not a copy (labels %v)", csvName, copied.Labels)
		}
		return ""
	})
}

// ownedBy reports whether refs name csv.
func ownedBy(refs []metav1.OwnerReference, csv *operatorsv1alpha1.ClusterServiceVersion) bool {
	for _, r := range refs {
		if r.Kind == operatorsv1alpha1.ClusterServiceVersionKind && r.Name == csv.Name && r.UID == csv.UID {
			return true
		}
	}
	return false
}

// uninstallOperator removes what installOperator created, the OLM way:
// the CSV (OLM and the garbage collector remove the Deployment, the copied
// CSVs and what the CSV owns), then the OperatorGroup, the bundle's other
// manifests, the admission policy and the namespace. It checks that
// nothing OLM created for the CSV or the OperatorGroup is left.
func (o *olmEnv) uninstallOperator(t *testing.T, b *olmBundle, csvName, repo string) {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: csvName}, csv); err != nil {
		t.Fatal(err)
	}
	// The check below must see what it later wants gone.
	before := strings.Join(o.leftOf(t, csv), ", ")
	for _, kind := range []string{"Deployment", "Pod", "CSV", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		if !strings.HasPrefix(before, kind+" ") && !strings.Contains(before, ", "+kind+" ") {
			t.Errorf("before the uninstall no %s of CSV %s is found: %s", kind, csvName, before)
		}
	}
	o.kubectl(t, "delete", "csv", csvName, "-n", installNS, "--wait=true", "--timeout=2m")
	testkit.EventuallyExplained(t, 2*time.Minute, func() string {
		if left := o.leftOf(t, csv); len(left) > 0 {
			return fmt.Sprintf("after deleting CSV %s, still there: %s", csvName, strings.Join(left, ", "))
		}
		return ""
	})
	o.kubectl(t, "delete", "operatorgroup", operatorGroupName, "-n", installNS, "--wait=true", "--timeout=1m")
	testkit.EventuallyExplained(t, time.Minute, func() string {
		if left := o.clusterRBACOf(t, installNS); len(left) > 0 {
			return "after deleting the OperatorGroup, OLM's cluster-scoped RBAC for namespace " + installNS + " is still there: " + strings.Join(left, ", ")
		}
		return ""
	})
	o.deleteBundleManifests(t, b, installNS)
	o.kubectl(t, "delete", "--ignore-not-found", "-f", policyFile(repo))
	o.kubectl(t, "delete", "namespace", installNS, "--wait=true", "--timeout=3m")
}

// leftOf lists what is left of an installed CSV: the controller Deployment
// and its pods, the CSV and its copies, and the RBAC created for the CSV
// (owned by it, or labelled with it when cluster-scoped), as "Kind
// namespace/name".
func (o *olmEnv) leftOf(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) []string {
	t.Helper()
	var left []string
	d := &appsv1.Deployment{}
	if err := o.cl.Get(o.ctx, types.NamespacedName{Namespace: installNS, Name: names.ControllerDeploymentName}, d); !apierrors.IsNotFound(err) {
		left = append(left, "Deployment "+installNS+"/"+names.ControllerDeploymentName)
	}
	pods := &corev1.PodList{}
	o.list(t, pods, client.InNamespace(installNS), client.MatchingLabels{"app.kubernetes.io/component": "controller"})
	for _, p := range pods.Items {
		left = append(left, "Pod "+p.Namespace+"/"+p.Name)
	}
	csvs := &operatorsv1alpha1.ClusterServiceVersionList{}
	o.list(t, csvs)
	for _, c := range csvs.Items {
		if c.Name == csv.Name {
			left = append(left, "CSV "+c.Namespace+"/"+c.Name)
		}
	}
	for kind, meta := range o.rbacObjects(t) {
		for _, m := range meta {
			if ownedBy(m.OwnerReferences, csv) || m.Labels[olmOwnerLabel] == csv.Name {
				left = append(left, kind+" "+m.Namespace+"/"+m.Name)
			}
		}
	}
	sort.Strings(left)
	return left
}

// clusterRBACOf lists the ClusterRoles and ClusterRoleBindings OLM
// labelled as belonging to an owner (CSV or OperatorGroup) in namespace.
func (o *olmEnv) clusterRBACOf(t *testing.T, namespace string) []string {
	t.Helper()
	var left []string
	for kind, meta := range o.rbacObjects(t) {
		for _, m := range meta {
			if m.Namespace == "" && m.Labels[olmOwnerNSLabel] == namespace {
				left = append(left, fmt.Sprintf("%s %s (%s %s)", kind, m.Name, m.Labels[olmOwnerKindLabel], m.Labels[olmOwnerLabel]))
			}
		}
	}
	sort.Strings(left)
	return left
}

// rbacObjects lists every ServiceAccount, Role, RoleBinding, ClusterRole
// and ClusterRoleBinding, by kind.
func (o *olmEnv) rbacObjects(t *testing.T) map[string][]metav1.ObjectMeta {
	t.Helper()
	sas, roles, bindings := &corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}
	croles, cbindings := &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}
	for _, l := range []client.ObjectList{sas, roles, bindings, croles, cbindings} {
		o.list(t, l)
	}
	return map[string][]metav1.ObjectMeta{
		"ServiceAccount":     metas(sas.Items, func(x corev1.ServiceAccount) metav1.ObjectMeta { return x.ObjectMeta }),
		"Role":               metas(roles.Items, func(x rbacv1.Role) metav1.ObjectMeta { return x.ObjectMeta }),
		"RoleBinding":        metas(bindings.Items, func(x rbacv1.RoleBinding) metav1.ObjectMeta { return x.ObjectMeta }),
		"ClusterRole":        metas(croles.Items, func(x rbacv1.ClusterRole) metav1.ObjectMeta { return x.ObjectMeta }),
		"ClusterRoleBinding": metas(cbindings.Items, func(x rbacv1.ClusterRoleBinding) metav1.ObjectMeta { return x.ObjectMeta }),
	}
}

// list lists into l, failing the test on error.
func (o *olmEnv) list(t *testing.T, l client.ObjectList, opts ...client.ListOption) {
	t.Helper()
	if err := o.cl.List(o.ctx, l, opts...); err != nil {
		t.Fatal(err)
	}
}

// metas maps items to their ObjectMeta.
func metas[T any](items []T, meta func(T) metav1.ObjectMeta) []metav1.ObjectMeta {
	out := make([]metav1.ObjectMeta, 0, len(items))
	for _, it := range items {
		out = append(out, meta(it))
	}
	return out
}
