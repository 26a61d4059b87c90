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

// Package kubeapply holds what applying Coxswain's rendered objects needs
// beyond a server-side apply: today, making way for a Service whose
// ClusterIP is pinned (a Gateway's static address), which Kubernetes does
// not let an update change.
package kubeapply

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PrepareClusterIP makes way for desired, a Service whose spec.clusterIP
// is pinned: spec.clusterIP is immutable, so an existing Service of its
// name with another ClusterIP is replaced by one with the pinned address.
// A server-side dry run first asks the cluster whether it takes the
// address (inside its Service range); an address it refuses there, or one
// another Service holds (which a dry run does not see), never costs the
// Gateway its Service: it is recreated with an address the cluster picks,
// and the refusal is returned. A Service without a pinned ClusterIP, or
// one that has it already, is left alone. The caller's apply then brings
// the Service to the rest of desired.
func PrepareClusterIP(ctx context.Context, c client.Client, desired *corev1.Service) error {
	ip := desired.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		return nil
	}
	var existing corev1.Service
	switch err := c.Get(ctx, client.ObjectKeyFromObject(desired), &existing); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case existing.Spec.ClusterIP == ip:
		return nil
	}
	probe := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: desired.Namespace, GenerateName: "coxswain-address-check-"},
		Spec:       *desired.Spec.DeepCopy(),
	}
	if len(probe.Spec.Ports) == 0 {
		probe.Spec.Ports = []corev1.ServicePort{{Name: "probe", Port: 1}}
	}
	if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
		return fmt.Errorf("static address %s for Service %s/%s: the cluster refuses it: %w", ip, desired.Namespace, desired.Name, err)
	}
	if err := c.Delete(ctx, &existing, client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Service %s/%s to pin its ClusterIP %s: %w", desired.Namespace, desired.Name, ip, err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var s corev1.Service
		err := c.Get(ctx, client.ObjectKeyFromObject(desired), &s)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && s.UID != existing.UID, err
	}); err != nil {
		return fmt.Errorf("waiting for Service %s/%s to go: %w", desired.Namespace, desired.Name, err)
	}
	created := desired.DeepCopy()
	created.ResourceVersion, created.UID = "", ""
	err := c.Create(ctx, created)
	if err == nil {
		return nil
	}
	// Taken after all: put the Service back with any address.
	fallback := desired.DeepCopy()
	fallback.ResourceVersion, fallback.UID = "", ""
	fallback.Spec.ClusterIP, fallback.Spec.ClusterIPs = "", nil
	if ferr := c.Create(ctx, fallback); ferr != nil && !apierrors.IsAlreadyExists(ferr) {
		return fmt.Errorf("static address %s for Service %s/%s refused, and recreating it without: %w", ip, desired.Namespace, desired.Name, errors.Join(err, ferr))
	}
	return fmt.Errorf("static address %s for Service %s/%s: the cluster refuses it: %w", ip, desired.Namespace, desired.Name, err)
}
