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

// Package uninstall removes what the Coxswain controller created while it
// ran, as opposed to what an install path (kustomize, Helm, OLM) applied:
// the shared proxy pool, every dedicated proxy's Deployment, Service,
// ServiceAccount, ConfigMap and HorizontalPodAutoscaler, the VIP Services
// of shared Gateways, the discovery CA Secret and trust ConfigMap it
// generated, and its leader-election Lease. An install path's own removal
// (`kubectl delete -k`, `helm uninstall`, deleting the CSV) cannot know
// about these: they live in the Gateways' namespaces or were created at
// run time. docs/upgrade.md gives the order: remove the controller by its
// install path, then run `coxswain uninstall`.
//
// Only objects that carry Coxswain's managed-by label (or, in the install
// namespace, its own names and component labels) are deleted; a
// user-provided discovery CA Secret has no component label and is kept.
package uninstall

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Options is one uninstall.
type Options struct {
	// Namespace is where the controller was installed.
	Namespace string
	// Timeout bounds the wait for the controller to stop and for every
	// deleted object (and its pods) to be gone.
	Timeout time.Duration
	// Logf reports each step; nil is silent.
	Logf func(format string, args ...any)
}

// Report is what an uninstall removed, as "Kind namespace/name".
type Report struct {
	Deleted []string
}

// ErrOLMOwned is returned when the controller Deployment still belongs to
// an OLM ClusterServiceVersion: OLM would scale it back up, so the CSV
// must be deleted first.
var ErrOLMOwned = errors.New("the controller Deployment is owned by an OLM ClusterServiceVersion; delete the CSV (or its Subscription) first")

// Run stops a controller that still runs (scaling its Deployment to zero
// and waiting for its pods to go, so nothing is recreated behind us), then
// deletes every object the controller created and waits until they, and
// their pods, are gone.
func Run(ctx context.Context, c client.Client, o Options) (Report, error) {
	if o.Namespace == "" {
		o.Namespace = names.DefaultInstallNamespace
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := stopController(ctx, c, o); err != nil {
		return Report{}, err
	}
	targets, err := created(ctx, c, o.Namespace)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	background := client.PropagationPolicy(metav1.DeletePropagationBackground)
	for _, obj := range targets {
		err := c.Delete(ctx, obj, background)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return rep, fmt.Errorf("deleting %s: %w", describe(c, obj), err)
		}
		o.Logf("deleted %s", describe(c, obj))
		rep.Deleted = append(rep.Deleted, describe(c, obj))
	}
	for _, obj := range targets {
		if err := waitGone(ctx, c, obj); err != nil {
			return rep, err
		}
		if d, ok := obj.(*appsv1.Deployment); ok {
			if err := waitNoPods(ctx, c, d.Namespace, d.Spec.Selector); err != nil {
				return rep, fmt.Errorf("waiting for the pods of %s: %w", describe(c, d), err)
			}
		}
	}
	return rep, nil
}

// stopController scales the controller Deployment to zero, if it still
// exists, and waits for its pods to be gone.
func stopController(ctx context.Context, c client.Client, o Options) error {
	d := &appsv1.Deployment{}
	err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: names.ControllerDeploymentName}, d)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the controller Deployment: %w", err)
	}
	for _, ref := range d.OwnerReferences {
		if ref.Kind == "ClusterServiceVersion" {
			return ErrOLMOwned
		}
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		o.Logf("scaling Deployment %s/%s to 0 replicas", d.Namespace, d.Name)
		patch := client.MergeFrom(d.DeepCopy())
		zero := int32(0)
		d.Spec.Replicas = &zero
		if err := c.Patch(ctx, d, patch); err != nil {
			return fmt.Errorf("scaling the controller to zero: %w", err)
		}
	}
	if err := waitNoPods(ctx, c, o.Namespace, d.Spec.Selector); err != nil {
		return fmt.Errorf("waiting for the controller's pods to stop: %w", err)
	}
	return nil
}

// waitNoPods polls until no pod of ns matches selector: the garbage
// collector removes a deleted Deployment's ReplicaSets and pods after it,
// and an uninstall that returned before they went would leave them behind
// unseen.
func waitNoPods(ctx context.Context, c client.Client, ns string, selector *metav1.LabelSelector) error {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Errorf("selector: %w", err)
	}
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
}

// created lists what the controller made, Deployments first so their pods
// go while the rest is deleted.
func created(ctx context.Context, c client.Client, ns string) ([]client.Object, error) {
	managed := client.MatchingLabels{names.LabelManagedBy: names.ValueManagedBy}
	var out []client.Object
	lists := []client.ObjectList{
		&appsv1.DeploymentList{}, &autoscalingv2.HorizontalPodAutoscalerList{},
		&corev1.ServiceList{}, &corev1.ServiceAccountList{}, &corev1.ConfigMapList{},
	}
	for _, l := range lists {
		if err := c.List(ctx, l, managed); err != nil {
			return nil, fmt.Errorf("listing objects labelled %s=%s: %w", names.LabelManagedBy, names.ValueManagedBy, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				out = append(out, obj)
			}
		}
	}
	own, err := installNamespaceObjects(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	return append(out, own...), nil
}

// installNamespaceObjects are the discovery CA Secret and trust ConfigMap
// the controller generated (a user-provided CA has no component label and
// is kept) and the leader-election Lease.
func installNamespaceObjects(ctx context.Context, c client.Client, ns string) ([]client.Object, error) {
	var out []client.Object
	generated := []struct {
		obj       client.Object
		name      string
		component string
	}{
		{&corev1.Secret{}, names.CASecretName, names.ComponentDiscoveryCA},
		{&corev1.ConfigMap{}, names.TrustBundleConfigMapName, names.ComponentDiscoveryTrust},
	}
	for _, g := range generated {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: g.name}, g.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s/%s: %w", ns, g.name, err)
		}
		if labels.Set(g.obj.GetLabels()).Get(names.LabelComponent) == g.component &&
			g.obj.GetLabels()[names.LabelManagedBy] != names.ValueManagedBy { // else already listed
			out = append(out, g.obj)
		}
	}
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.LeaseName}, lease)
	switch {
	case err == nil:
		out = append(out, lease)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Lease %s/%s: %w", ns, names.LeaseName, err)
	}
	return out, nil
}

// waitGone polls until obj no longer exists (a finalizer may hold it).
func waitGone(ctx context.Context, c client.Client, obj client.Object) error {
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be gone: %w", describe(c, obj), err)
	}
	return nil
}

// describe is "Kind namespace/name".
func describe(c client.Client, obj client.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		kind = gvk.Kind
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}
