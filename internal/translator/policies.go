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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// The policy layer (docs/policies.md). Every policy CRD of
// gateway.coxswain-labs.dev is compiled once, by its own file
// (policy_<kind>.go), into a policy: its settings as a function onto a
// snapshot route, endpoint set or listener, or why it is invalid. This file
// resolves attachment (GEP-713) for all of them:
//
//   - Route policies attach by targetRefs to a Gateway (sectionName: a
//     listener of the Gateway), an HTTPRoute or GRPCRoute (sectionName: a
//     rule name), or by an HTTPRoute or GRPCRoute rule's ExtensionRef
//     filter. For each route rule served on a listener, and each kind, the
//     most specific attachment wins: ExtensionRef, then route rule, then
//     route, then listener, then Gateway. There is no field-by-field merge:
//     the winner's settings replace the less specific policies' entirely.
//     Policies of the same kind on the same target: the oldest
//     (creationTimestamp, then namespace/name) wins, the others are
//     Conflicted. A rule's own HTTPRoute fields (retry, timeouts) win over a
//     RetryPolicy's.
//   - CoxswainBackendPolicy targets Services (sectionName: a port name,
//     which wins over the whole Service); ClientTrafficPolicy targets
//     Gateways (sectionName: the port of that listener, which wins over the
//     whole Gateway). Same precedence and conflict rules.
//   - An invalid policy is not applied. Authentication policies (BasicAuth,
//     JwtAuth, CoxswainExternalAuth) fail closed instead: the routes they
//     cover answer 500. An ExtensionRef to a policy that is missing or
//     invalid makes its rule answer 500 (a filter that cannot be applied is
//     never skipped), with ResolvedRefs=False InvalidKind on the route.
//   - Status: every policy with an ancestor (a Gateway of ours it was
//     applied to, or that it targets) gets status.ancestors with Accepted:
//     True Accepted, False Conflicted, False Invalid (naming the field and
//     the reason), or False TargetNotFound.

// policy is one policy object as translated.
type policy struct {
	kind string
	meta *metav1.ObjectMeta
	// targets are its targetRefs.
	targets []gwv1.LocalPolicyTargetReferenceWithSectionName
	// invalid names the field and why it is unusable ("" when valid).
	invalid string
	// failClosed makes an invalid policy answer 500 where it applies
	// (authentication), instead of not applying.
	failClosed bool
	// httpOnly policies do not apply to GRPCRoute rules.
	httpOnly bool
	// route applies a route policy's settings onto a snapshot route.
	route func(*snapshot.Route)
	// backend applies a backend policy onto an endpoint set.
	backend func(*snapshot.EndpointSet)
	// listener is a ClientTrafficPolicy's settings.
	listener *snapshot.ClientTraffic

	conflicted []string
	missing    []string
	ancestors  map[nn]bool
}

func (p *policy) invalidf(format string, args ...any) {
	if p.invalid == "" {
		p.invalid = fmt.Sprintf(format, args...)
	}
}

// policyTarget is one attachment point of a kind of policy.
type policyTarget struct {
	kind, targetKind, ns, name, section string
}

// policyRef names a policy object.
type policyRef struct {
	kind, ns, name string
}

// policyKinds compile every policy object of their kind; their order is
// the order the route policies are applied in (it does not matter: each
// sets its own fields).
var policyKinds = []func(t *translator){
	compileIPAccessControls,
	compileRateLimits,
	compileBasicAuths,
	compileJWTAuths,
	compileExternalAuths,
	compileCompressions,
	compileRequestSizeLimits,
	compilePathRewriteRegexes,
	compileRetryPolicies,
	compileBackendPolicies,
	compileClientTrafficPolicies,
}

// routePolicyKinds are the kinds that attach to routes, in the order
// targetRef winners are looked up.
var routePolicyKinds = []string{
	gatewayv1alpha1.KindIPAccessControl, gatewayv1alpha1.KindRateLimit, gatewayv1alpha1.KindBasicAuth,
	gatewayv1alpha1.KindJWTAuth, gatewayv1alpha1.KindExternalAuth, gatewayv1alpha1.KindCompression,
	gatewayv1alpha1.KindRequestSizeLimit, gatewayv1alpha1.KindRetryPolicy,
}

// addPolicies compiles the objects of one kind, oldest first (a repeated
// name once), with compile filling in each policy's settings.
func addPolicies[P any](t *translator, kind string, objs []*P, parts func(*P) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName), compile func(*P, *policy)) {
	sorted := make([]*P, 0, len(objs))
	for _, o := range objs {
		if o == nil {
			continue
		}
		if m, _ := parts(o); named(m) {
			sorted = append(sorted, o)
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, _ := parts(sorted[i])
		b, _ := parts(sorted[j])
		return olderFirst(a, b)
	})
	for _, o := range sorted {
		m, targets := parts(o)
		ref := policyRef{kind: kind, ns: m.Namespace, name: m.Name}
		if t.policyByRef[ref] != nil {
			continue
		}
		p := &policy{kind: kind, meta: m, targets: targets, ancestors: map[nn]bool{}}
		compile(o, p)
		t.policyByRef[ref] = p
		t.policies = append(t.policies, p)
	}
}

// targetedRouteRules lists the rule names of every HTTPRoute and GRPCRoute
// a policy targets, by kind and name (the others are not needed: at
// 10,000 routes listing them all was a tenth of a translation's garbage).
func (t *translator) targetedRouteRules() map[string]map[nn][]string {
	routes := map[string]map[nn][]string{kindHTTPRoute: {}, kindGRPCRoute: {}}
	targeted := map[string]map[nn]bool{kindHTTPRoute: {}, kindGRPCRoute: {}}
	for _, p := range t.policies {
		for _, ref := range p.targets {
			if m := targeted[string(ref.Kind)]; m != nil {
				m[nn{Namespace: p.meta.Namespace, Name: string(ref.Name)}] = true
			}
		}
	}
	if len(targeted[kindHTTPRoute]) > 0 {
		for _, r := range t.res.HTTPRoutes {
			if r != nil && targeted[kindHTTPRoute][key(&r.ObjectMeta)] {
				routes[kindHTTPRoute][key(&r.ObjectMeta)] = ruleSectionNames(r.Spec.Rules, func(rule *gwv1.HTTPRouteRule) *gwv1.SectionName { return rule.Name })
			}
		}
	}
	if len(targeted[kindGRPCRoute]) > 0 {
		for _, r := range t.res.GRPCRoutes {
			if r != nil && targeted[kindGRPCRoute][key(&r.ObjectMeta)] {
				routes[kindGRPCRoute][key(&r.ObjectMeta)] = ruleSectionNames(r.Spec.Rules, func(rule *gwv1.GRPCRouteRule) *gwv1.SectionName { return rule.Name })
			}
		}
	}
	return routes
}

// ruleSectionNames is the section name of every rule ("" for none).
func ruleSectionNames[R any](rules []R, name func(*R) *gwv1.SectionName) []string {
	names := make([]string, 0, len(rules))
	for i := range rules {
		names = append(names, sectionName(name(&rules[i])))
	}
	return names
}

// processPolicies compiles every policy and decides the winner of each
// attachment point.
func (t *translator) processPolicies() {
	t.policyByRef = map[policyRef]*policy{}
	t.policyWinners = map[policyTarget]*policy{}
	t.policyLosers = map[policyTarget][]*policy{}
	for _, k := range policyKinds {
		k(t)
	}
	routes := t.targetedRouteRules()
	// t.policies is oldest first within each kind, so the first policy to
	// claim a target is the winner.
	for _, p := range t.policies {
		for _, ref := range p.targets {
			tg := policyTarget{kind: p.kind, targetKind: string(ref.Kind), ns: p.meta.Namespace, name: string(ref.Name)}
			if ref.SectionName != nil {
				tg.section = string(*ref.SectionName)
			}
			if msg := t.targetMissing(tg, string(ref.Group), routes); msg != "" {
				p.missing = append(p.missing, msg)
				continue
			}
			if tg.targetKind == kindGateway {
				if gi := t.gateways[nn{Namespace: tg.ns, Name: tg.name}]; gi != nil {
					p.ancestors[key(&gi.gw.ObjectMeta)] = true
				}
			}
			if w := t.policyWinners[tg]; w != nil {
				p.conflicted = append(p.conflicted, fmt.Sprintf("%s %s/%s already has the older %s %s", tg.targetKind, tg.ns, targetName(tg), p.kind, w.meta.Name))
				t.policyLosers[tg] = append(t.policyLosers[tg], p)
				continue
			}
			t.policyWinners[tg] = p
		}
	}
}

func sectionName(s *gwv1.SectionName) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

func targetName(tg policyTarget) string {
	if tg.section != "" {
		return tg.name + " sectionName " + tg.section
	}
	return tg.name
}

// targetMissing says why a target does not exist ("" when it does).
func (t *translator) targetMissing(tg policyTarget, group string, routes map[string]map[nn][]string) string {
	k := nn{Namespace: tg.ns, Name: tg.name}
	switch tg.targetKind {
	case kindGateway:
		if group != gatewayGroup {
			break
		}
		gi := t.gateways[k]
		if gi == nil {
			return fmt.Sprintf("Gateway %s/%s not found", tg.ns, tg.name)
		}
		if tg.section == "" {
			return ""
		}
		for _, li := range gi.listeners {
			if string(li.spec.Name) == tg.section {
				return ""
			}
		}
		return fmt.Sprintf("Gateway %s/%s has no listener %q", tg.ns, tg.name, tg.section)
	case kindHTTPRoute, kindGRPCRoute:
		if group != gatewayGroup {
			break
		}
		rules, ok := routes[tg.targetKind][k]
		if !ok {
			return fmt.Sprintf("%s %s/%s not found", tg.targetKind, tg.ns, tg.name)
		}
		if tg.section == "" {
			return ""
		}
		for _, n := range rules {
			if n == tg.section {
				return ""
			}
		}
		return fmt.Sprintf("%s %s/%s has no rule named %q", tg.targetKind, tg.ns, tg.name, tg.section)
	case kindService:
		if group != "" {
			break
		}
		svc := t.ix.services[k]
		if svc == nil {
			return fmt.Sprintf("Service %s/%s not found", tg.ns, tg.name)
		}
		if tg.section == "" {
			return ""
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Name == tg.section {
				return ""
			}
		}
		return fmt.Sprintf("Service %s/%s has no port named %q", tg.ns, tg.name, tg.section)
	}
	return fmt.Sprintf("target %s/%s %s is not a kind this policy attaches to", group, tg.targetKind, tg.name)
}

// extensionRef compiles an HTTPRoute or GRPCRoute rule's ExtensionRef
// filter onto base: the named policy's settings, or a 500 when it is
// missing or invalid. It records the kind so that targetRef policies of
// that kind do not override it.
func (t *translator) extensionRef(cr *compiledRoute, base *snapshot.Route, ri int, ref *gwv1.LocalObjectReference) {
	if ref == nil {
		cr.fail("rule %d: ExtensionRef filter without extensionRef", ri)
		return
	}
	fail := func(msg string) {
		cr.unresolved(status.ReasonInvalidKind, msg)
		base.DirectResponse = &snapshot.DirectResponse{StatusCode: 500, Body: "filter unavailable"}
	}
	desc := fmt.Sprintf("rule %d: ExtensionRef %s/%s %s", ri, ref.Group, ref.Kind, ref.Name)
	if string(ref.Group) != gatewayv1alpha1.GroupVersion.Group {
		fail(desc + ": group is not " + gatewayv1alpha1.GroupVersion.Group)
		return
	}
	p := t.policyByRef[policyRef{kind: string(ref.Kind), ns: cr.meta.Namespace, name: string(ref.Name)}]
	switch {
	case p == nil || (p.route == nil && p.invalid == ""):
		fail(desc + ": not found, or not a kind usable as a filter")
		return
	case p.invalid != "":
		fail(desc + ": invalid: " + p.invalid)
	case p.httpOnly && cr.kind == kindGRPCRoute:
		fail(desc + ": " + p.kind + " does not apply to GRPCRoute")
	default:
		p.route(base)
	}
	if cr.ext == nil {
		cr.ext = map[int][]*policy{}
	}
	cr.ext[ri] = append(cr.ext[ri], p)
}

// withPolicies applies the route policies that win for one rule of cr
// served on listener li of gi; rt is returned as is when none applies.
func (t *translator) withPolicies(gi *gatewayInfo, li *listenerInfo, cr *compiledRoute, rule int, rt *snapshot.Route) *snapshot.Route {
	var byExt map[string]bool // read as empty while nil
	if exts := cr.ext[rule]; len(exts) > 0 {
		gwKey := key(&gi.gw.ObjectMeta)
		byExt = map[string]bool{}
		for _, p := range exts {
			p.ancestors[gwKey] = true
			byExt[p.kind] = true
		}
	}
	if len(t.policyWinners) == 0 {
		return rt
	}
	out := rt
	ruleName := ""
	if rule < len(cr.ruleNames) {
		ruleName = cr.ruleNames[rule]
	}
	listener := ""
	if li.owner.kind == kindGateway {
		listener = string(li.spec.Name)
	}
	for _, kind := range routePolicyKinds {
		if byExt[kind] {
			continue
		}
		p := t.routeWinner(kind, gi, cr, ruleName, listener)
		if p == nil {
			continue
		}
		if p.httpOnly && cr.kind == kindGRPCRoute {
			continue
		}
		if p.invalid != "" && !p.failClosed {
			continue
		}
		if out == rt {
			c := *rt
			out = &c
		}
		if p.invalid != "" {
			out.DirectResponse = &snapshot.DirectResponse{StatusCode: 500, Body: "authentication policy " + p.meta.Name + " is invalid"}
			continue
		}
		p.route(out)
	}
	return out
}

// routeWinner is the most specific targetRef policy of kind for a rule.
func (t *translator) routeWinner(kind string, gi *gatewayInfo, cr *compiledRoute, ruleName, listener string) *policy {
	rk := policyTarget{kind: kind, targetKind: cr.kind, ns: cr.meta.Namespace, name: cr.meta.Name}
	gk := policyTarget{kind: kind, targetKind: kindGateway, ns: gi.gw.Namespace, name: gi.gw.Name}
	cands := make([]policyTarget, 0, 4)
	if ruleName != "" {
		r := rk
		r.section = ruleName
		cands = append(cands, r)
	}
	cands = append(cands, rk)
	if listener != "" {
		g := gk
		g.section = listener
		cands = append(cands, g)
	}
	cands = append(cands, gk)
	gwKey := key(&gi.gw.ObjectMeta)
	var win *policy
	for _, c := range cands {
		p := t.policyWinners[c]
		if p == nil {
			continue
		}
		// Every policy that targets what the rule is served under has
		// the Gateway as an ancestor, the winner's losers too.
		p.ancestors[gwKey] = true
		for _, l := range t.policyLosers[c] {
			l.ancestors[gwKey] = true
		}
		if win == nil {
			win = p
		}
	}
	return win
}

// applyBackendPolicy gives an endpoint set of a Service port the
// CoxswainBackendPolicy that covers it (its port name's, else the
// Service's).
func (t *translator) applyBackendPolicy(es *snapshot.EndpointSet, ns, svc, port string) {
	if len(t.policyWinners) == 0 {
		return
	}
	tg := policyTarget{kind: gatewayv1alpha1.KindBackendPolicy, targetKind: kindService, ns: ns, name: svc, section: port}
	p := t.policyWinners[tg]
	if p == nil && port != "" {
		tg.section = ""
		p = t.policyWinners[tg]
	}
	if p == nil {
		return
	}
	if t.setBackendPolicy == nil {
		t.setBackendPolicy = map[string]*policy{}
	}
	t.setBackendPolicy[es.Name] = p
	if p.invalid == "" && p.backend != nil {
		p.backend(es)
	}
}

// notePolicyAncestors records gi as an ancestor of the backend policies of
// the endpoint sets a route it serves uses.
func (t *translator) notePolicyAncestors(gi *gatewayInfo, r *snapshot.Route) {
	if len(t.setBackendPolicy) == 0 {
		return
	}
	note := func(set string) {
		if p := t.setBackendPolicy[set]; p != nil {
			p.ancestors[key(&gi.gw.ObjectMeta)] = true
		}
	}
	for _, b := range r.Backends {
		note(b.EndpointSet)
	}
	for _, m := range r.Mirrors {
		note(m.EndpointSet)
	}
	if r.ExtAuth != nil {
		note(r.ExtAuth.EndpointSet)
	}
}

// clientTrafficFor is the ClientTrafficPolicy of a Gateway port: that of
// the first of lis (the port's listeners, in spec order) a policy targets
// by sectionName, else the Gateway's.
func (t *translator) clientTrafficFor(gi *gatewayInfo, lis []*listenerInfo) *snapshot.ClientTraffic {
	if len(t.policyWinners) == 0 {
		return nil
	}
	tg := policyTarget{kind: gatewayv1alpha1.KindClientTrafficPolicy, targetKind: kindGateway, ns: gi.gw.Namespace, name: gi.gw.Name}
	var p *policy
	for _, li := range lis {
		if li.owner.kind != kindGateway {
			continue
		}
		s := tg
		s.section = string(li.spec.Name)
		if p = t.policyWinners[s]; p != nil {
			break
		}
	}
	if p == nil {
		p = t.policyWinners[tg]
	}
	if p == nil || p.invalid != "" {
		return nil
	}
	return p.listener
}

// policyStatuses fills the status of every policy with an ancestor, or
// whose targets are all missing.
func (t *translator) policyStatuses() {
	for _, p := range t.policies {
		st := KindPolicyStatus{Kind: p.kind, PolicyStatus: PolicyStatus{NamespacedName: key(p.meta), Generation: p.meta.Generation}}
		gen := p.meta.Generation
		var cond metav1.Condition
		switch {
		case p.invalid != "":
			cond = status.Accepted(false, string(gwv1.PolicyReasonInvalid), p.invalid, gen)
		case len(p.conflicted) > 0:
			cond = status.Accepted(false, string(gwv1.PolicyReasonConflicted), strings.Join(p.conflicted, "; "), gen)
		case len(p.missing) > 0 && len(p.ancestors) == 0:
			cond = status.Accepted(false, string(gwv1.PolicyReasonTargetNotFound), strings.Join(p.missing, "; "), gen)
		case len(p.missing) > 0:
			cond = status.Accepted(true, string(gwv1.PolicyReasonAccepted), "policy is accepted; "+strings.Join(p.missing, "; "), gen)
		default:
			cond = status.Accepted(true, string(gwv1.PolicyReasonAccepted), "policy is accepted", gen)
		}
		anc := make([]nn, 0, len(p.ancestors))
		for k := range p.ancestors {
			anc = append(anc, k)
		}
		sort.Slice(anc, func(i, j int) bool { return nnLess(anc[i], anc[j]) })
		for _, a := range anc {
			st.Status.Ancestors = append(st.Status.Ancestors, policyAncestor(gatewayGroup, kindGateway, a, cond))
		}
		if len(anc) == 0 {
			if len(p.missing) == 0 || len(p.targets) == 0 {
				continue // not attached anywhere yet: no ancestor to report on
			}
			ref := p.targets[0]
			st.Status.Ancestors = append(st.Status.Ancestors, policyAncestor(string(ref.Group), string(ref.Kind), nn{Namespace: p.meta.Namespace, Name: string(ref.Name)}, cond))
		}
		t.out.Policies = append(t.out.Policies, st)
	}
	sort.SliceStable(t.out.Policies, func(i, j int) bool {
		a, b := t.out.Policies[i], t.out.Policies[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return nnLess(a.NamespacedName, b.NamespacedName)
	})
}

func policyAncestor(group, kind string, a nn, cond metav1.Condition) gwv1.PolicyAncestorStatus {
	g, k, ns := gwv1.Group(group), gwv1.Kind(kind), gwv1.Namespace(a.Namespace)
	return gwv1.PolicyAncestorStatus{
		AncestorRef:    gwv1.ParentReference{Group: &g, Kind: &k, Namespace: &ns, Name: gwv1.ObjectName(a.Name)},
		ControllerName: gwv1.GatewayController(names.ControllerName),
		Conditions:     []metav1.Condition{cond},
	}
}
