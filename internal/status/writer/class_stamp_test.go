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

package writer_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestGatewayClassSettledByStamp: a round that reads the GatewayClass
// unchanged since a round found its status to be what it desires, and
// desires the very same lists (an endpoint refresh hands the Result's
// GatewayClasses on) or equal ones (a translation's), skips the
// comparison; another writer's edit, or other lists, bring it back, and
// the edit is undone.
func TestGatewayClassSettledByStamp(t *testing.T) {
	ctx := t.Context()
	gc := &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "stamp-test"},
		Spec: gwv1.GatewayClassSpec{ControllerName: "coxswain-labs.dev/stamp-test"}}
	if err := kube.Create(ctx, gc); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Name: gc.Name}
	desired := translator.GatewayClassStatus{NamespacedName: key, Generation: 1, Status: gwv1.GatewayClassStatus{
		Conditions: []metav1.Condition{{Type: string(gwv1.GatewayClassConditionStatusAccepted), Status: metav1.ConditionTrue,
			Reason: string(gwv1.GatewayClassReasonAccepted), Message: "accepted", ObservedGeneration: 1}},
		SupportedFeatures: []gwv1.SupportedFeature{{Name: "Gateway"}, {Name: "HTTPRoute"}},
	}}
	res := &translator.Result{GatewayClasses: []translator.GatewayClassStatus{desired}}
	w := &writer.Writer{Client: kube}
	write := func(r *translator.Result) {
		t.Helper()
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	skipped := func(want int64) {
		t.Helper()
		if got := writer.SkippedClassReads(w); got != want {
			t.Fatalf("%d comparisons skipped, want %d", got, want)
		}
	}
	get := func() *gwv1.GatewayClass {
		t.Helper()
		got := &gwv1.GatewayClass{}
		if err := kube.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	write(res) // patches
	write(res) // finds it written: stamped
	skipped(0)
	write(res)
	write(res)
	skipped(2)

	edited := get()
	edited.Status.Conditions[0].Message = "tampered"
	if err := kube.Status().Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	write(res) // another resourceVersion: compared, and restored
	skipped(2)
	if c := meta.FindStatusCondition(get().Status.Conditions, string(gwv1.GatewayClassConditionStatusAccepted)); c == nil || c.Message != "accepted" {
		t.Fatalf("after another writer's edit, the round left %+v", c)
	}
	write(res)
	write(res)
	skipped(3)

	// A new translation's lists, equal (every route change makes them
	// anew): nothing to compare.
	again := desired
	again.Status.Conditions = slices.Clone(desired.Status.Conditions)
	again.Status.SupportedFeatures = slices.Clone(desired.Status.SupportedFeatures)
	next := &translator.Result{GatewayClasses: []translator.GatewayClassStatus{again}}
	write(next)
	skipped(4)

	// A feature more: compared, and written.
	more := again
	more.Status.SupportedFeatures = append(slices.Clone(again.Status.SupportedFeatures), gwv1.SupportedFeature{Name: "GRPCRoute"})
	write(&translator.Result{GatewayClasses: []translator.GatewayClassStatus{more}})
	skipped(4)
	if got := get().Status.SupportedFeatures; len(got) != 3 {
		t.Fatalf("after a feature more, the class lists %v", got)
	}
}
