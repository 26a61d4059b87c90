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

package translator

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/status"
)

type classInfo struct {
	gc *gwv1.GatewayClass
	// paramsErr is set when parametersRef is unusable.
	paramsErr string
	// params is the class-level CoxswainGatewayParameters (dedicated mode).
	params *nn
}

func (t *translator) processGatewayClasses() {
	t.classes = map[string]*classInfo{}
	for _, gc := range t.res.GatewayClasses {
		if gc == nil || gc.Name == "" || string(gc.Spec.ControllerName) != names.ControllerName {
			continue
		}
		if prev, ok := t.classes[gc.Name]; ok && prev.gc.UID <= gc.UID {
			continue
		}
		ci := &classInfo{gc: gc}
		if ref := gc.Spec.ParametersRef; ref != nil {
			ns := ""
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			desc := fmt.Sprintf("parametersRef %s/%s %s/%s", ref.Group, ref.Kind, ns, ref.Name)
			switch {
			case string(ref.Group) != names.ParametersGroup || string(ref.Kind) != names.ParametersKind:
				ci.paramsErr = desc + ": unsupported kind; only " + names.ParametersGroup + "/" + names.ParametersKind + " is supported"
			case ns == "":
				ci.paramsErr = desc + ": namespace is required"
			case t.ix.gwParams[nn{Namespace: ns, Name: ref.Name}] == nil:
				ci.paramsErr = desc + ": not found"
			default:
				ci.params = &nn{Namespace: ns, Name: ref.Name}
			}
		}
		t.classes[gc.Name] = ci
	}
	classNames := make([]string, 0, len(t.classes))
	for n := range t.classes {
		classNames = append(classNames, n)
	}
	sort.Strings(classNames)
	for _, n := range classNames {
		ci := t.classes[n]
		gen := ci.gc.Generation
		var cond metav1.Condition
		if ci.paramsErr != "" {
			cond = status.Accepted(false, status.ReasonInvalidParameters, ci.paramsErr, gen)
		} else {
			cond = status.Accepted(true, status.ReasonAccepted, "GatewayClass is accepted by "+names.ControllerName, gen)
		}
		t.out.GatewayClasses = append(t.out.GatewayClasses, GatewayClassStatus{
			NamespacedName: nn{Name: n},
			Generation:     gen,
			Status: gwv1.GatewayClassStatus{
				Conditions:        []metav1.Condition{cond},
				SupportedFeatures: supportedFeatureList(t.res.AbsentKinds, t.res.GatewayAPIChannel, ci.params != nil),
			},
		})
	}
}
