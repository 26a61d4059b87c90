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

package writer

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// parameters writes the status.conditions of every CoxswainGatewayParameters
// and CoxswainIngressClassParameters: those the Result says are in use get
// theirs, every other one loses what we wrote (the kinds are ours, so all
// their conditions are).
func (w *Writer) parameters(ctx context.Context, res *translator.Result) error {
	gw := &gatewayv1alpha1.CoxswainGatewayParametersList{}
	if err := w.Client.List(ctx, gw); err != nil && !unserved(err) {
		return err
	}
	want := desiredParameters(res.GatewayParameters)
	for i := range gw.Items {
		p := &gw.Items[i]
		if err := w.parametersStatus(ctx, names.ParametersKind, p, &p.Status.Conditions, &p.Status.ObservedGeneration, want); err != nil {
			return err
		}
	}
	ic := &ingressv1alpha1.CoxswainIngressClassParametersList{}
	if err := w.Client.List(ctx, ic); err != nil && !unserved(err) {
		return err
	}
	want = desiredParameters(res.IngressClassParameters)
	for i := range ic.Items {
		p := &ic.Items[i]
		if err := w.parametersStatus(ctx, names.IngressParametersKind, p, &p.Status.Conditions, &p.Status.ObservedGeneration, want); err != nil {
			return err
		}
	}
	return nil
}

// unserved reports a kind the cluster (or the client's scheme) does not
// have: there is nothing of it to write.
func unserved(err error) bool {
	return meta.IsNoMatchError(err) || runtime.IsNotRegisteredError(err)
}

func desiredParameters(in []translator.ParametersStatus) map[types.NamespacedName][]metav1.Condition {
	out := make(map[types.NamespacedName][]metav1.Condition, len(in))
	for _, p := range in {
		out[p.NamespacedName] = p.Conditions
	}
	return out
}

// parametersStatus merges the desired conditions of obj (none when it is
// not in use) into conds and patches when they changed.
func (w *Writer) parametersStatus(ctx context.Context, kind string, obj client.Object, conds *[]metav1.Condition, observed *int64, want map[types.NamespacedName][]metav1.Condition) error {
	orig := obj.DeepCopyObject().(client.Object)
	origConds, origObserved := append([]metav1.Condition(nil), *conds...), *observed
	desired, inUse := want[client.ObjectKeyFromObject(obj)]
	if inUse {
		*conds, _ = status.MergeConditions(*conds, desired, obj.GetGeneration(), w.now())
		*observed = obj.GetGeneration()
	} else {
		*conds, *observed = nil, 0
	}
	if apiequality.Semantic.DeepEqual(origConds, *conds) && origObserved == *observed {
		return nil
	}
	return w.patch(ctx, kind, obj, orig)
}
