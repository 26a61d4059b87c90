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
	"fmt"
	"net"
	"time"

	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// What upgrade cases watch while they run: Deployments rolled to an image,
// and Gateways that must stay Programmed throughout.

// gatewayAddr is status.addresses[0]:80.
func gatewayAddr(gw *gwv1.Gateway) string {
	return net.JoinHostPort(gw.Status.Addresses[0].Value, "80")
}

// waitRolledTo waits until the Deployment's template runs image, its
// rollout is complete, and every pod it selects runs image (the old ones
// have terminated).
func (e *lcEnv) waitRolledTo(t *testing.T, ns, name, image string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyExplained(t, timeout, func() string { return e.rolledTo(ns, name, image) })
}

func (e *lcEnv) rolledTo(ns, name, image string) string {
	d := &appsv1.Deployment{}
	if err := e.cl.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Deployment %s/%s not found", ns, name)
		}
		return err.Error()
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != image {
		return fmt.Sprintf("Deployment %s/%s runs %q, want %q", ns, name, got, image)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.Replicas != want {
		return fmt.Sprintf("Deployment %s/%s rolling out: %d replicas, %d updated, %d ready, want %d", ns, name, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, want)
	}
	pods := &corev1.PodList{}
	if err := e.cl.List(e.ctx, pods, client.InNamespace(ns), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		if got := p.Spec.Containers[0].Image; got != image {
			return fmt.Sprintf("pod %s/%s still runs %q", ns, p.Name, got)
		}
	}
	return ""
}

// programmedWatch polls Gateways until finished and records when one of
// them was not Programmed.
type programmedWatch struct {
	stop, done chan struct{}
	checks     int
	lapses     []string // the first few
}

// watchProgrammed checks the Gateways every 250 ms until finish.
func (e *lcEnv) watchProgrammed(gws ...*gwv1.Gateway) *programmedWatch {
	w := &programmedWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		start := time.Now()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			w.checks++
			for _, gw := range gws {
				if msg := e.notProgrammed(gw.Namespace, gw.Name); msg != "" && len(w.lapses) < 5 {
					w.lapses = append(w.lapses, fmt.Sprintf("%s: %s", time.Since(start).Round(time.Millisecond), msg))
				}
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// finish stops the watch (once; later calls return the same result).
func (w *programmedWatch) finish() (checks int, lapses []string) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	return w.checks, w.lapses
}

// notProgrammed is "" when the Gateway is Programmed for its generation.
func (e *lcEnv) notProgrammed(ns, name string) string {
	gw, err := e.gateway(ns, name)
	if err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gw.Generation {
		return fmt.Sprintf("Gateway %s/%s: Programmed %+v", ns, name, c)
	}
	return ""
}
