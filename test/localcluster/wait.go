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

package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitForPodsReady waits (bounded) until every pod in namespace matching
// selector is Ready and at least want exist.
func (c *Cluster) WaitForPodsReady(ctx context.Context, namespace, selector string, want int, timeout time.Duration) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		pods, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			ready := 0
			for i := range pods.Items {
				if podReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp == nil {
					ready++
				}
			}
			last = fmt.Sprintf("%d pods, %d ready", len(pods.Items), ready)
			if ready >= want && ready == len(pods.Items) {
				return pods.Items, nil
			}
		} else if !apierrors.IsNotFound(err) {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pods %q in %s not ready within %s: %s", selector, namespace, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
