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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/status/writer"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TestParametersStatus: the parameters objects in use get the translator's
// Accepted condition and observedGeneration on a real apiserver; one no
// longer in use loses them.
func TestParametersStatus(t *testing.T) {
	ctx := t.Context()
	const ns = "params-status"
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gp := &gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}}
	ip := &ingressv1alpha1.CoxswainIngressClassParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"}}
	for _, o := range []client.Object{gp, ip} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	sanitized := status.Accepted(true, translator.ReasonParametersSanitized, "used by GatewayClass dedicated; podTemplate fields ignored: spec.hostNetwork", 1)
	accepted := status.Accepted(true, status.ReasonAccepted, "used by IngressClass coxswain", 1)
	w := &writer.Writer{Client: kube}
	res := &translator.Result{
		GatewayParameters:      []translator.ParametersStatus{{NamespacedName: client.ObjectKeyFromObject(gp), Generation: 1, Conditions: []metav1.Condition{sanitized}}},
		IngressClassParameters: []translator.ParametersStatus{{NamespacedName: client.ObjectKeyFromObject(ip), Generation: 1, Conditions: []metav1.Condition{accepted}}},
	}
	if err := w.Write(ctx, res); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gp), gp); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(gp.Status.Conditions, "Accepted")
	if c == nil || c.Reason != translator.ReasonParametersSanitized || c.LastTransitionTime.IsZero() || gp.Status.ObservedGeneration != gp.Generation {
		t.Fatalf("CoxswainGatewayParameters status = %+v, want Accepted PodTemplateSanitized at generation %d", gp.Status, gp.Generation)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(ip), ip); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(ip.Status.Conditions, "Accepted"); c == nil || c.Message != accepted.Message {
		t.Fatalf("CoxswainIngressClassParameters status = %+v, want Accepted", ip.Status)
	}

	// No longer in use: the conditions go.
	res.GatewayParameters = nil
	if err := w.Write(ctx, res); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gp), gp); err != nil {
		t.Fatal(err)
	}
	if len(gp.Status.Conditions) != 0 || gp.Status.ObservedGeneration != 0 {
		t.Errorf("unused CoxswainGatewayParameters kept status %+v", gp.Status)
	}
}
