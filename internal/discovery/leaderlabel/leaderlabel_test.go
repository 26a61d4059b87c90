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

package leaderlabel_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/discovery/leaderlabel"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

var api testkit.Envtest

func TestMain(m *testing.M) { os.Exit(api.Run(m)) }

func TestLabelsWhileLeadingAndRemovesAfter(t *testing.T) {
	c := api.Client(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "coxswain-system"}}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "coxswain-system", Name: "coxswain-controller-0", Labels: map[string]string{"app": "coxswain"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "coxswain:test"}}},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAMESPACE", pod.Namespace)
	t.Setenv("POD_NAME", pod.Name)
	l, err := leaderlabel.FromEnv(c, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	if !l.NeedLeaderElection() {
		t.Fatal("the labeler must only run on the leader")
	}
	labels := func() map[string]string {
		got := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			t.Fatal(err)
		}
		return got.Labels
	}
	runCtx, lose := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Start(runCtx) }()
	testkit.EventuallyWithin(t, 20*time.Second, "the leader label to be set", func() bool { return labels()[names.LeaderLabel] == "true" })
	if labels()["app"] != "coxswain" {
		t.Fatal("other labels must be kept")
	}
	lose() // leadership lost / shutdown
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the labeler did not stop")
	}
	got := labels()
	if _, ok := got[names.LeaderLabel]; ok {
		t.Fatalf("the leader label survived losing the lease: %v", got)
	}
	if got["app"] != "coxswain" {
		t.Fatal("other labels must be kept")
	}
}

func TestFromEnvNeedsThePod(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("POD_NAME", "")
	if _, err := leaderlabel.FromEnv(nil, testr.New(t)); err == nil {
		t.Fatal("FromEnv without POD_NAME/POD_NAMESPACE must fail")
	}
}
