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

package infra

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/lifecycle"
)

// TestProberOutageWrites: during an outage the prober writes the start of
// the failure streak, the turn to Ready=False, and then the growing count
// at most once a minute, not once per probe; recovery is written at once.
// Writes are counted as resourceVersion changes on the real apiserver.
func TestProberOutageWrites(t *testing.T) {
	ctx := context.Background()
	srv, code := readyzServer(t)
	p := newProject(t, srv.Listener.Addr().String())
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	pr := &Prober{Client: onlyProject{k8s, p.Name}, Checker: checkerFor(srv), Clock: clk, Timeout: 5 * time.Second}

	rv := ""
	// round advances the clock by 10s, probes, and reports whether the
	// Project was written (its resourceVersion moved) and its status.
	round := func() (bool, infrav1alpha1.ProjectStatus) {
		t.Helper()
		clk.SetTime(clk.Now().Add(10 * time.Second))
		n, err := pr.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := get(t, k8s, p.Name)
		wrote := got.ResourceVersion != rv
		rv = got.ResourceVersion
		if wrote != (n == 1) {
			t.Fatalf("RunOnce reported %d patches but the resourceVersion moved=%v", n, wrote)
		}
		return wrote, got.Status
	}
	if wrote, st := round(); !wrote || readyOf(&infrav1alpha1.Project{Status: st}) != metav1.ConditionTrue {
		t.Fatalf("healthy start: wrote=%v %+v", wrote, st)
	}

	code.Store(http.StatusServiceUnavailable)
	// Failures 1..18, ten seconds apart. Written: 1 (streak starts), 3
	// (Ready=False), then a minute after the last write: 9 and 15.
	wantWrites := map[int]int32{1: 1, 3: 3, 9: 9, 15: 15}
	persisted := int32(0)
	for i := 1; i <= 18; i++ {
		wrote, st := round()
		want, shouldWrite := wantWrites[i]
		if wrote != shouldWrite {
			t.Fatalf("failure %d: wrote=%v, want %v", i, wrote, shouldWrite)
		}
		if shouldWrite {
			persisted = want
		}
		if st.ConsecutiveFailures != persisted {
			t.Fatalf("failure %d: consecutiveFailures %d, want %d", i, st.ConsecutiveFailures, persisted)
		}
		if wantReady := map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[i < 3]; readyOf(&infrav1alpha1.Project{Status: st}) != wantReady {
			t.Fatalf("failure %d: Ready %s, want %s", i, readyOf(&infrav1alpha1.Project{Status: st}), wantReady)
		}
	}

	code.Store(http.StatusOK)
	wrote, st := round()
	if !wrote || st.ConsecutiveFailures != 0 || readyOf(&infrav1alpha1.Project{Status: st}) != metav1.ConditionTrue {
		t.Fatalf("recovery: wrote=%v %+v", wrote, st)
	}
	if wrote, _ := round(); wrote {
		t.Fatal("healthy round after recovery wrote")
	}
}

// TestProberReportsInvalidAgentCA: a Project whose agentCA.certificates do
// not parse gets AgentCAValid=False/InvalidAgentCA (and a log line); fixed,
// it turns True.
func TestProberReportsInvalidAgentCA(t *testing.T) {
	ctx := context.Background()
	srv, _ := readyzServer(t)
	p := newProject(t, srv.Listener.Addr().String())
	p.Spec.AgentCA = &infrav1alpha1.AgentCA{Certificates: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}
	if err := k8s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		lines []string
	)
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	pr := &Prober{Client: onlyProject{k8s, p.Name}, Checker: checkerFor(srv), Clock: clk, Log: log}
	if _, err := pr.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got := get(t, k8s, p.Name)
	c := meta.FindStatusCondition(got.Status.Conditions, ConditionAgentCAValid)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidAgentCA ||
		!strings.Contains(c.Message, "not valid PEM certificates") || c.ObservedGeneration != got.Generation {
		t.Fatalf("AgentCAValid for an unparseable CA: %+v", c)
	}
	if readyOf(got) != metav1.ConditionTrue {
		t.Fatalf("Ready %s: an invalid CA does not make the API server unhealthy", readyOf(got))
	}
	mu.Lock()
	logged := false
	for _, l := range lines {
		logged = logged || (strings.Contains(l, "agentCA.certificates is not valid") && strings.Contains(l, p.Name))
	}
	mu.Unlock()
	if !logged {
		t.Fatal("invalid agent CA not logged")
	}

	// A valid CA (two certificates, as during a rotation).
	ca1, _, err := lifecycle.NewAgentCA(p.Name, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca2, _, err := lifecycle.NewAgentCA(p.Name, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.AgentCA.Certificates = ca1 + ca2
	if err := k8s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(clk.Now().Add(10 * time.Second))
	if _, err := pr.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got = get(t, k8s, p.Name)
	c = meta.FindStatusCondition(got.Status.Conditions, ConditionAgentCAValid)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonAgentCAParsed || c.ObservedGeneration != got.Generation {
		t.Fatalf("AgentCAValid for a valid CA: %+v", c)
	}
}
