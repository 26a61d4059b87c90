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

package kubelet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func (k *Kubelet) handle(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp == nil {
			k.bind(pod)
		}
		return
	}
	if pod.Spec.NodeName != k.nodeName {
		return
	}
	k.mu.Lock()
	if k.stopping {
		k.mu.Unlock()
		return
	}
	r := k.runners[pod.UID]
	if r == nil {
		switch {
		case pod.DeletionTimestamp != nil:
			// Nothing runs for it: finish the graceful deletion.
			k.mu.Unlock()
			go k.forceDelete(pod.Namespace, pod.Name, pod.UID)
			return
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			k.mu.Unlock()
			return
		}
		r = newPodRunner(k, pod)
		k.runners[pod.UID] = r
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			r.run()
			k.mu.Lock()
			delete(k.runners, pod.UID)
			k.mu.Unlock()
		}()
	}
	k.mu.Unlock()
	r.update(pod)
}

func (k *Kubelet) handleDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	r := k.runners[pod.UID]
	k.mu.Unlock()
	if r != nil {
		r.requestStop(0, stopObjectGone)
	}
}

// bind schedules an unscheduled pod onto the node.
func (k *Kubelet) bind(pod *corev1.Pod) {
	k.mu.Lock()
	if k.binding[pod.UID] || k.stopping {
		k.mu.Unlock()
		return
	}
	k.binding[pod.UID] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.binding, pod.UID)
			k.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
		defer cancel()
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.nodeName},
		}
		err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			k.logf("binding pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}()
}

// forceDelete removes a pod object whose containers are gone.
func (k *Kubelet) forceDelete(namespace, name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	err := k.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		k.logf("deleting pod %s/%s: %v", namespace, name, err)
	}
}
