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
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/provision"
	"github.com/coxswain-go/coxswain/internal/status"
)

// ParametersStatus is the desired status.conditions of a
// CoxswainGatewayParameters or CoxswainIngressClassParameters in use.
type ParametersStatus struct {
	types.NamespacedName
	Generation int64
	Conditions []metav1.Condition
}

// The reasons of a parameters object's Accepted condition.
const (
	// ReasonParametersSanitized: in use, but fields of its podTemplate were
	// dropped (the security envelope's, or unknown to core/v1).
	ReasonParametersSanitized = "PodTemplateSanitized"
	// ReasonParametersInvalid: in use, but the dedicated proxies of a
	// Gateway cannot be rendered with it.
	ReasonParametersInvalid = "Invalid"
)

// parametersUse collects, per parameters object, who uses it and what its
// use found.
type parametersUse struct {
	users     []string
	sanitized []string
	invalid   []string
}

// parametersStatuses fills the status of every parameters object a class,
// Gateway or IngressClass of ours uses: Accepted True with its users, or
// with reason PodTemplateSanitized naming the podTemplate fields a
// dedicated Gateway's render dropped, or False Invalid when the render
// fails.
func (t *translator) parametersStatuses() {
	uses := map[nn]*parametersUse{}
	use := func(k nn) *parametersUse {
		u := uses[k]
		if u == nil {
			u = &parametersUse{}
			uses[k] = u
		}
		return u
	}
	for _, ci := range t.classes {
		if ci.params != nil {
			u := use(*ci.params)
			u.users = append(u.users, "GatewayClass "+ci.gc.Name)
		}
	}
	for _, gi := range t.gwOrder {
		if !gi.dedicated {
			continue
		}
		var params []gatewayv1alpha1.CoxswainGatewayParameters
		for _, ref := range provision.ParamsRefs(gi.gw, gi.class.gc) {
			p := t.ix.gwParams[ref.NamespacedName]
			if p == nil || !ref.IsParameters() {
				continue
			}
			params = append(params, *p)
			if ref.From == kindGateway {
				u := use(ref.NamespacedName)
				u.users = append(u.users, "Gateway "+gi.gw.Namespace+"/"+gi.gw.Name)
			}
		}
		eff, _, err := provision.Resolve(gi.gw, gi.class.gc, params)
		if err != nil {
			continue
		}
		d, err := provision.RenderDedicated(provision.DedicatedInput{Gateway: gi.gw, Effective: eff, InstallNamespace: names.DefaultInstallNamespace, DefaultImage: "coxswain"})
		for _, l := range eff.PodTemplates {
			u := use(l.Source)
			switch {
			case err != nil:
				u.invalid = append(u.invalid, "Gateway "+gi.gw.Namespace+"/"+gi.gw.Name+": "+err.Error())
			case len(d.Sanitized) > 0:
				u.sanitized = append(u.sanitized, d.Sanitized...)
			}
		}
	}
	for k, u := range uses {
		p := t.ix.gwParams[k]
		if p == nil {
			continue
		}
		t.out.GatewayParameters = append(t.out.GatewayParameters, ParametersStatus{NamespacedName: k, Generation: p.Generation,
			Conditions: []metav1.Condition{parametersAccepted(u, p.Generation)}})
	}
	sort.Slice(t.out.GatewayParameters, func(i, j int) bool {
		return nnLess(t.out.GatewayParameters[i].NamespacedName, t.out.GatewayParameters[j].NamespacedName)
	})
	t.ingressParametersStatuses()
}

// ingressParametersStatuses fills the status of every
// CoxswainIngressClassParameters an IngressClass of ours names: Accepted
// True with its classes (a broken reference is the IngressClass's Warning
// Event, ingressParams).
func (t *translator) ingressParametersStatuses() {
	classes, _ := t.ingressClasses()
	users := map[nn][]string{}
	for name, ic := range classes {
		p := ic.Spec.Parameters
		if p == nil || p.APIGroup == nil || *p.APIGroup != names.IngressParametersGroup || p.Kind != names.IngressParametersKind || p.Namespace == nil {
			continue
		}
		k := nn{Namespace: *p.Namespace, Name: p.Name}
		if t.ix.icParams[k] != nil {
			users[k] = append(users[k], "IngressClass "+name)
		}
	}
	for k, us := range users {
		p := t.ix.icParams[k]
		t.out.IngressClassParameters = append(t.out.IngressClassParameters, ParametersStatus{NamespacedName: k, Generation: p.Generation,
			Conditions: []metav1.Condition{parametersAccepted(&parametersUse{users: us}, p.Generation)}})
	}
	sort.Slice(t.out.IngressClassParameters, func(i, j int) bool {
		return nnLess(t.out.IngressClassParameters[i].NamespacedName, t.out.IngressClassParameters[j].NamespacedName)
	})
}

// parametersAccepted is the Accepted condition of a parameters object.
func parametersAccepted(u *parametersUse, gen int64) metav1.Condition {
	sort.Strings(u.users)
	users := "used by " + strings.Join(compactStrings(u.users), ", ")
	switch {
	case len(u.invalid) > 0:
		sort.Strings(u.invalid)
		return status.Accepted(false, ReasonParametersInvalid, users+"; cannot render: "+strings.Join(compactStrings(u.invalid), "; "), gen)
	case len(u.sanitized) > 0:
		sort.Strings(u.sanitized)
		return status.Accepted(true, ReasonParametersSanitized, users+"; podTemplate fields ignored: "+strings.Join(compactStrings(u.sanitized), "; "), gen)
	}
	return status.Accepted(true, status.ReasonAccepted, users, gen)
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
