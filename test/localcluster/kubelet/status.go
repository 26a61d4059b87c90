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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// buildStatus renders the pod status from the runner's state.
func (r *podRunner) buildStatus(prev corev1.PodStatus) corev1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := corev1.PodStatus{QOSClass: prev.QOSClass, StartTime: &r.started}
	conds := &conditions{prev: prev.Conditions, now: metav1.Now()}
	if r.failPhase != "" {
		r.failedStatusLocked(&st, conds)
	} else {
		r.runningStatusLocked(&st, conds)
	}
	st.Conditions = conds.list
	return st
}

// conditions collects a status's conditions; each keeps its
// lastTransitionTime from prev while its status does not change.
type conditions struct {
	prev []corev1.PodCondition
	now  metav1.Time
	list []corev1.PodCondition
}

func (cs *conditions) set(t corev1.PodConditionType, ok bool, reason, msg string) {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: cs.now}
	for _, old := range cs.prev {
		if old.Type == t && old.Status == s {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	cs.list = append(cs.list, c)
}

// failedStatusLocked is the status of a pod that cannot run: the failure's
// phase, reason and message, on the pod and on every container.
func (r *podRunner) failedStatusLocked(st *corev1.PodStatus, conds *conditions) {
	st.Phase, st.Reason, st.Message = r.failPhase, r.reason, r.message
	conds.set(corev1.PodScheduled, true, "", "")
	conds.set(corev1.PodInitialized, true, "", "")
	conds.set(corev1.ContainersReady, false, r.reason, r.message)
	conds.set(corev1.PodReady, false, r.reason, r.message)
	for i := range r.pod.Spec.Containers {
		c := &r.pod.Spec.Containers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r.reason, Message: r.message}},
		})
	}
}

// runningStatusLocked is the status of a pod whose containers run (or ran):
// their statuses, the phase, the addresses once Running, and the
// conditions.
func (r *podRunner) runningStatusLocked(st *corev1.PodStatus, conds *conditions) {
	allReady, allDone, anyFailed := len(r.containers) > 0, len(r.containers) > 0, false
	var notReady []string
	for _, c := range r.containers {
		st.ContainerStatuses = append(st.ContainerStatuses, r.containerStatusLocked(c))
		if !c.ready {
			allReady = false
			notReady = append(notReady, c.spec.Name)
		}
		if !c.done {
			allDone = false
		} else if c.lastTerm != nil && c.lastTerm.ExitCode != 0 {
			anyFailed = true
		}
	}
	switch {
	case allDone && anyFailed:
		st.Phase = corev1.PodFailed
	case allDone:
		st.Phase = corev1.PodSucceeded
	case r.gate:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	if r.gate || allDone {
		hostIP := r.k.net.Gateway().String()
		st.PodIP = r.ip.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		st.HostIP = hostIP
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	message := ""
	if !allReady {
		message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	}
	conds.set(corev1.PodReadyToStartContainers, r.ip != nil, "", "")
	conds.set(corev1.PodScheduled, true, "", "")
	conds.set(corev1.PodInitialized, true, "", "")
	ready := allReady && r.gate
	reason := ""
	if !ready {
		reason = "ContainersNotReady"
		if r.reason != "" {
			reason = r.reason
		}
	}
	conds.set(corev1.ContainersReady, ready, reason, message)
	conds.set(corev1.PodReady, ready, reason, message)
}

// containerStatusLocked is one container's status: running, terminated for
// good, or waiting (to be created, or to be restarted).
func (r *podRunner) containerStatusLocked(c *containerState) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{
		Name: c.spec.Name, Image: c.spec.Image, ImageID: "localcluster://" + c.plan.path,
		Ready: c.ready, RestartCount: c.restarts, LastTerminationState: corev1.ContainerState{Terminated: c.lastTerm},
	}
	switch {
	case c.proc != nil && !c.proc.Exited():
		cs.ContainerID = containerID(c.proc)
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
		cs.Started = ptr.To(true)
	case c.done && c.lastTerm != nil:
		cs.State.Terminated = c.lastTerm
		cs.LastTerminationState = corev1.ContainerState{}
	default:
		reason := c.waiting
		if reason == "" {
			reason = "ContainerCreating"
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		if reason == ReasonConfigError || reason == "RunContainerError" {
			cs.State.Waiting.Message = r.message
		}
		cs.Started = ptr.To(false)
	}
	return cs
}

// statusSignature is what decides whether a status write is needed.
func statusSignature(st corev1.PodStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|", st.Phase, st.Reason, st.Message, st.PodIP, st.HostIP)
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s;", c.Type, c.Status, c.Reason)
	}
	for _, c := range st.ContainerStatuses {
		fmt.Fprintf(&b, "%s:%t:%d:%s:", c.Name, c.Ready, c.RestartCount, c.ContainerID)
		switch {
		case c.State.Running != nil:
			b.WriteString("running")
		case c.State.Waiting != nil:
			b.WriteString("waiting " + c.State.Waiting.Reason + " " + c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, "terminated %d", c.State.Terminated.ExitCode)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// report writes the status when it changed (while stopping, only during a
// graceful termination).
func (r *podRunner) report() {
	r.mu.Lock()
	terminating := r.terminating
	r.mu.Unlock()
	if r.stopping() && !terminating {
		return
	}
	pod := r.latest()
	want := r.buildStatus(pod.Status)
	sig := statusSignature(want)
	r.mu.Lock()
	same := sig == r.lastSig
	r.mu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(r.k.ctx, 10*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != r.uid {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		cur.Status = r.buildStatus(cur.Status)
		_, err = r.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	switch {
	case err == nil:
		r.mu.Lock()
		r.lastSig = sig
		r.mu.Unlock()
	case apierrors.IsNotFound(err), errors.Is(err, context.Canceled), r.stopping():
	default:
		r.logf("updating status: %v", err)
	}
}
