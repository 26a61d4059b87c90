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

package admin

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/translator"
)

// ProblemsView is /api/v1/problems: everything that needs an operator.
type ProblemsView struct {
	Revision uint64    `json:"revision"`
	Problems []Problem `json:"problems"`
}

// Problem is one object's bad condition, a proxy's refusal, a Gateway its
// proxies do not serve, or a Warning the translation raised.
type Problem struct {
	Object ObjectRef `json:"object"`
	// Where narrows it down: "listener https", "parent e2e/web",
	// "ancestor Gateway e2e/web", "proxy <node>".
	Where    string `json:"where,omitempty"`
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Severity string `json:"severity"` // error or warning
}

// negativePolarity are condition types whose True is the bad state.
var negativePolarity = map[string]bool{"Conflicted": true, "OverlappingTLSConfig": true, "PartiallyInvalid": true}

// Problems builds the problems view.
func Problems(in Input) ProblemsView {
	v := ProblemsView{Revision: in.Revision, Problems: []Problem{}}
	if in.Result == nil {
		return v
	}
	res := in.Result
	add := func(obj ObjectRef, where string, cs []metav1.Condition) {
		for _, c := range cs {
			if p, ok := conditionProblem(obj, where, c); ok {
				v.Problems = append(v.Problems, p)
			}
		}
	}
	for _, gc := range res.GatewayClasses {
		add(ObjectRef{Kind: "GatewayClass", Name: gc.Name}, "", gc.Status.Conditions)
	}
	for _, g := range res.Gateways {
		obj := ObjectRef{Kind: "Gateway", Namespace: g.Namespace, Name: g.Name}
		add(obj, "", g.Status.Conditions)
		for _, l := range g.Status.Listeners {
			add(obj, "listener "+string(l.Name), l.Conditions)
		}
		if p, ok := dataPlaneProblem(in, g, obj); ok {
			v.Problems = append(v.Problems, p)
		}
	}
	for _, ls := range res.ListenerSets {
		obj := ObjectRef{Kind: "ListenerSet", Namespace: ls.Namespace, Name: ls.Name}
		add(obj, "", ls.Status.Conditions)
		for _, l := range ls.Status.Listeners {
			add(obj, "listener "+string(l.Name), l.Conditions)
		}
	}
	for _, kr := range []struct {
		kind string
		rs   []translator.RouteStatus
	}{{"HTTPRoute", res.HTTPRoutes}, {"GRPCRoute", res.GRPCRoutes}, {"TLSRoute", res.TLSRoutes}, {"TCPRoute", res.TCPRoutes}, {"UDPRoute", res.UDPRoutes}} {
		for _, r := range kr.rs {
			obj := ObjectRef{Kind: kr.kind, Namespace: r.Namespace, Name: r.Name}
			for _, p := range r.Parents {
				add(obj, "parent "+parentName(r.Namespace, p.ParentRef), p.Conditions)
			}
		}
	}
	policies := func(kind string, ps []translator.PolicyStatus) {
		for _, p := range ps {
			obj := ObjectRef{Kind: kind, Namespace: p.Namespace, Name: p.Name}
			for _, a := range p.Status.Ancestors {
				add(obj, "ancestor "+ancestorName(p.Namespace, a.AncestorRef), a.Conditions)
			}
		}
	}
	policies("BackendTLSPolicy", res.BackendTLSPolicies)
	for _, kp := range res.Policies {
		policies(kp.Kind, []translator.PolicyStatus{kp.PolicyStatus})
	}
	for _, p := range res.GatewayParameters {
		add(ObjectRef{Kind: "CoxswainGatewayParameters", Namespace: p.Namespace, Name: p.Name}, "", p.Conditions)
	}
	for _, p := range res.IngressClassParameters {
		add(ObjectRef{Kind: "CoxswainIngressClassParameters", Namespace: p.Namespace, Name: p.Name}, "", p.Conditions)
	}
	for _, e := range res.Events {
		if e.Type != "Warning" {
			continue
		}
		v.Problems = append(v.Problems, Problem{
			Object: ObjectRef{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}, Type: "Event", Reason: e.Reason, Message: e.Message, Severity: "warning",
		})
	}
	for _, p := range in.Proxies {
		if p.Rejected == nil {
			continue
		}
		v.Problems = append(v.Problems, Problem{
			Object: ObjectRef{Kind: "Proxy", Name: p.NodeID}, Where: "scope " + p.Scope, Type: "Nack", Reason: "SnapshotRejected",
			Message: fmt.Sprintf("refused snapshot %s: %s", p.Rejected.Version, p.Rejected.Detail), Severity: "error",
		})
	}
	sort.SliceStable(v.Problems, func(i, j int) bool {
		a, b := v.Problems[i].Object, v.Problems[j].Object
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return v
}

// conditionProblem reports c when it is a bad state.
func conditionProblem(obj ObjectRef, where string, c metav1.Condition) (Problem, bool) {
	p := Problem{Object: obj, Where: where, Type: c.Type, Reason: c.Reason, Message: c.Message, Severity: "error"}
	switch {
	case c.Reason == translator.ReasonParametersSanitized:
		p.Severity = "warning"
		return p, true
	case negativePolarity[c.Type]:
		return p, c.Status == metav1.ConditionTrue
	default:
		return p, c.Status == metav1.ConditionFalse
	}
}

// dataPlaneProblem reports an accepted Gateway whose proxies do not all
// serve its generation (what gates Programmed).
func dataPlaneProblem(in Input, g translator.GatewayStatus, obj ObjectRef) (Problem, bool) {
	if in.DataPlane == nil || !in.Leader {
		return Problem{}, false
	}
	if c := findCondition(g.Status.Conditions, string(gwv1.GatewayConditionProgrammed)); c == nil || c.Status != metav1.ConditionTrue {
		return Problem{}, false // already listed by its condition
	}
	st := in.DataPlane(g.Namespace, g.Name, g.Generation)
	if st.Programmed() {
		return Problem{}, false
	}
	msg := fmt.Sprintf("%d of %d proxies of scope %s serve generation %d with every port bound", st.Ready, st.Proxies, st.Scope.String(), g.Generation)
	if !st.Published {
		msg = "no published snapshot holds this Gateway yet"
	} else if st.Proxies == 0 {
		msg = "no proxy of scope " + st.Scope.String() + " is connected"
	}
	return Problem{Object: obj, Type: "Programmed", Reason: "Pending", Message: msg, Severity: "error"}, true
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func parentName(routeNS string, p gwv1.ParentReference) string {
	ns := routeNS
	if p.Namespace != nil {
		ns = string(*p.Namespace)
	}
	s := ns + "/" + string(p.Name)
	if p.SectionName != nil {
		s += "/" + string(*p.SectionName)
	}
	return s
}

func ancestorName(policyNS string, a gwv1.ParentReference) string {
	kind := "Gateway"
	if a.Kind != nil {
		kind = string(*a.Kind)
	}
	return kind + " " + parentName(policyNS, a)
}
