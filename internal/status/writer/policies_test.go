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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

const otherController = "example.com/other-controller"

// gatewayAncestor is the ancestorRef of Gateway name in the test namespace.
func gatewayAncestor(name string) gwv1.ParentReference {
	group, kind := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway")
	return gwv1.ParentReference{Group: &group, Kind: &kind, Name: gwv1.ObjectName(name)}
}

// policyObject is one of our policy objects under test, with where its
// status lives.
type policyObject struct {
	kind   string
	obj    client.Object
	status func() *gwv1.PolicyStatus
}

// ancestors renders obj's status.ancestors as "controller:gateway:reason"
// entries, after reading it afresh.
func (p policyObject) ancestors(ctx context.Context, t *testing.T) string {
	t.Helper()
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p.obj), p.obj); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range p.status().Ancestors {
		reason := "-"
		if len(a.Conditions) > 0 {
			reason = a.Conditions[0].Reason
			if a.Conditions[0].LastTransitionTime.IsZero() {
				reason += "(no lastTransitionTime)"
			}
		}
		out = append(out, fmt.Sprintf("%s:%s:%s", a.ControllerName, a.AncestorRef.Name, reason))
	}
	return strings.Join(out, " ")
}

// desired is the translator's status for p: accepted by Gateway gateway.
func (p policyObject) desired(gateway string) translator.KindPolicyStatus {
	gen := p.obj.GetGeneration()
	return translator.KindPolicyStatus{Kind: p.kind, PolicyStatus: translator.PolicyStatus{
		NamespacedName: client.ObjectKeyFromObject(p.obj),
		Generation:     gen,
		Status: gwv1.PolicyStatus{Ancestors: []gwv1.PolicyAncestorStatus{{
			AncestorRef: gatewayAncestor(gateway),
			Conditions:  []metav1.Condition{status.Accepted(true, status.ReasonAccepted, "Policy is accepted", gen)},
		}}},
	}}
}

// TestPolicyAncestorsAreOursOnly: the writer writes our policy kinds'
// status.ancestors from Result.Policies next to another controller's entry,
// leaves a settled status unpatched, removes our entry from a policy the
// Result no longer lists (and only ours), and writes nothing once the Lease
// is lost.
func TestPolicyAncestorsAreOursOnly(t *testing.T) {
	ctx := t.Context()
	const ns = "policies"
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gatewayRef := []gwv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{
		Group: gwv1.GroupName, Kind: "Gateway", Name: "web",
	}}}
	rl := &gatewayv1alpha1.RateLimit{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limit"},
		Spec:       gatewayv1alpha1.RateLimitSpec{RoutePolicyTargets: gatewayv1alpha1.RoutePolicyTargets{TargetRefs: gatewayRef}, Requests: 10},
	}
	ctp := &gatewayv1alpha1.ClientTrafficPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clients"},
		Spec:       gatewayv1alpha1.ClientTrafficPolicySpec{TargetRefs: gatewayRef, UnderscoreHeaders: "Reject"},
	}
	policies := []policyObject{
		{gatewayv1alpha1.KindRateLimit, rl, func() *gwv1.PolicyStatus { return &rl.Status }},
		{gatewayv1alpha1.KindClientTrafficPolicy, ctp, func() *gwv1.PolicyStatus { return &ctp.Status }},
	}
	// Another controller already reports both policies on Gateway web.
	foreign := gwv1.PolicyAncestorStatus{
		AncestorRef:    gatewayAncestor("web"),
		ControllerName: otherController,
		Conditions: []metav1.Condition{{
			Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Theirs", Message: "accepted elsewhere",
			LastTransitionTime: metav1.Now(), ObservedGeneration: 1,
		}},
	}
	for _, p := range policies {
		if err := kube.Create(ctx, p.obj); err != nil {
			t.Fatalf("creating %s: %v", p.kind, err)
		}
		p.status().Ancestors = []gwv1.PolicyAncestorStatus{foreign}
		if err := kube.Status().Update(ctx, p.obj); err != nil {
			t.Fatalf("seeding %s status: %v", p.kind, err)
		}
	}
	const theirs = otherController + ":web:Theirs"
	ours := names.ControllerName + ":web:" + status.ReasonAccepted

	w := &writer.Writer{Client: kube}
	both := &translator.Result{Policies: []translator.KindPolicyStatus{policies[0].desired("web"), policies[1].desired("web")}}
	if err := w.Write(ctx, both); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, p := range policies {
		expect(t, p.kind+" reported", p.ancestors(ctx, t), theirs+" "+ours)
		versions[p.kind] = p.obj.GetResourceVersion()
	}
	if err := w.Write(ctx, both); err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		if p.ancestors(ctx, t); p.obj.GetResourceVersion() != versions[p.kind] {
			t.Errorf("%s: a settled status was patched again (resourceVersion %s → %s)", p.kind, versions[p.kind], p.obj.GetResourceVersion())
		}
	}

	// The ClientTrafficPolicy no longer attaches to a Gateway of ours.
	if err := w.Write(ctx, &translator.Result{Policies: []translator.KindPolicyStatus{policies[0].desired("web")}}); err != nil {
		t.Fatal(err)
	}
	expect(t, "RateLimit still reported", policies[0].ancestors(ctx, t), theirs+" "+ours)
	expect(t, "ClientTrafficPolicy no longer reported", policies[1].ancestors(ctx, t), theirs)

	// A replica that lost the Lease writes nothing, not even the sweep.
	lost := &writer.Writer{Client: kube, Leader: func(context.Context) (bool, error) { return false, nil }}
	if err := lost.Write(ctx, &translator.Result{}); !errors.Is(err, writer.ErrNotLeader) {
		t.Fatalf("Write without the Lease: %v, want ErrNotLeader", err)
	}
	expect(t, "RateLimit after a non-leader round", policies[0].ancestors(ctx, t), theirs+" "+ours)

	if err := w.Write(ctx, &translator.Result{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "RateLimit no longer reported", policies[0].ancestors(ctx, t), theirs)
}
