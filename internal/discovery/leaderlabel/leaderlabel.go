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

// Package leaderlabel marks the controller pod that holds the Lease with
// names.LeaderLabel=true, so the leader-only discovery Service routes to
// it, and removes the mark when leadership ends.
package leaderlabel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Labeler is a controller-runtime Runnable that needs leader election: the
// manager starts it once this replica holds the Lease. It labels the pod
// and removes the label when its context ends (leadership lost or shutdown).
type Labeler struct {
	Client    client.Client
	Namespace string
	Name      string
	Log       logr.Logger
}

// FromEnv names the pod from POD_NAMESPACE and POD_NAME (the downward API).
func FromEnv(c client.Client, log logr.Logger) (*Labeler, error) {
	ns, name := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME")
	if ns == "" || name == "" {
		return nil, errors.New("POD_NAMESPACE and POD_NAME must be set to label the leader pod")
	}
	return &Labeler{Client: c, Namespace: ns, Name: name, Log: log}, nil
}

// NeedLeaderElection is true: only the leader runs it.
func (l *Labeler) NeedLeaderElection() bool { return true }

// Start labels the pod (retrying until it succeeds or ctx ends), waits for
// ctx to end, then removes the label.
func (l *Labeler) Start(ctx context.Context) error {
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 10 * time.Second},
		func(ctx context.Context) (bool, error) {
			if err := l.Set(ctx, true); err != nil {
				l.Log.Error(err, "labelling the leader pod; retrying")
				return false, nil
			}
			return true, nil
		})
	if err == nil {
		l.Log.Info("labelled the leader pod", "pod", l.Namespace+"/"+l.Name, "label", names.LeaderLabel)
	}
	<-ctx.Done()
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Set(rctx, false); err != nil {
		l.Log.Error(err, "removing the leader label from the pod")
		return nil
	}
	l.Log.Info("removed the leader label", "pod", l.Namespace+"/"+l.Name)
	return nil
}

// Set adds (true) or removes (false) the leader label with a merge patch.
func (l *Labeler) Set(ctx context.Context, leader bool) error {
	var value any // nil removes the label
	if leader {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{names.LeaderLabel: value}}})
	if err != nil {
		return err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name}}
	if err := l.Client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching pod %s/%s: %w", l.Namespace, l.Name, err)
	}
	return nil
}
