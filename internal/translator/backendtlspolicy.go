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
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// A BackendTLSPolicy makes the proxy speak TLS to a Service's endpoints and
// verify them: its targetRefs name Services (a sectionName, one port by
// name). Of the policies that select the same Service and sectionName the
// oldest wins and the others are Conflicted; a policy with a sectionName
// takes precedence, for its port, over one without. The winner's settings
// land on the endpoint sets of the Service ports it covers (EndpointSet.TLS),
// so every HTTPRoute and GRPCRoute backend and mirror of that port uses
// them; stream routes (TLS passthrough, TCP) splice bytes and ignore them.
// Status goes on every Gateway whose routes use a covered port (GEP-713
// ancestors). A policy whose CA references are all unusable still applies:
// its connections fail, so requests get 502 rather than reaching an
// unverified backend.

// tlsPolicy is one BackendTLSPolicy as translated.
type tlsPolicy struct {
	p *gwv1.BackendTLSPolicy
	// tls is what the policy makes the endpoint sets it covers do; an
	// invalid policy fails closed (TLS that verifies against nothing).
	tls                *snapshot.UpstreamTLS
	accepted, resolved metav1.Condition
	// ancestors are the Gateways whose routes use a port it covers.
	ancestors map[nn]bool
}

// tlsTarget is one Service (and port name, "" for every port) a policy
// selects.
type tlsTarget struct {
	ns, svc, section string
}

// PolicyStatus is the desired status of one policy object.
type PolicyStatus struct {
	types.NamespacedName
	Generation int64
	Status     gwv1.PolicyStatus
}

// processBackendTLSPolicies validates every BackendTLSPolicy and decides
// which one applies to each Service and port.
func (t *translator) processBackendTLSPolicies() {
	pols := make([]*gwv1.BackendTLSPolicy, 0, len(t.res.BackendTLSPolicies))
	for _, p := range t.res.BackendTLSPolicies {
		if p != nil && named(&p.ObjectMeta) {
			pols = append(pols, p)
		}
	}
	sort.SliceStable(pols, func(i, j int) bool { return olderFirst(&pols[i].ObjectMeta, &pols[j].ObjectMeta) })
	t.tlsWinners = map[tlsTarget]*tlsPolicy{}
	t.tlsByService = map[nn][]*tlsPolicy{}
	seen := map[nn]bool{}
	for _, p := range pols {
		k := key(&p.ObjectMeta)
		if seen[k] {
			continue
		}
		seen[k] = true
		tp := t.compileTLSPolicy(p)
		t.tlsPolicies = append(t.tlsPolicies, tp)
		conflicted := false
		for _, ref := range p.Spec.TargetRefs {
			if string(ref.Group) != "" || string(ref.Kind) != kindService {
				continue
			}
			tg := tlsTarget{ns: p.Namespace, svc: string(ref.Name)}
			sk := nn{Namespace: tg.ns, Name: tg.svc}
			if l := t.tlsByService[sk]; len(l) == 0 || l[len(l)-1] != tp {
				t.tlsByService[sk] = append(l, tp)
			}
			if ref.SectionName != nil {
				tg.section = string(*ref.SectionName)
			}
			if w := t.tlsWinners[tg]; w != nil {
				conflicted = true
				continue
			}
			t.tlsWinners[tg] = tp
		}
		if conflicted {
			tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonConflicted),
				"an older BackendTLSPolicy selects the same Service and sectionName", p.Generation)
		}
	}
}

// compileTLSPolicy validates one policy into its upstream TLS settings and
// Accepted and ResolvedRefs conditions.
func (t *translator) compileTLSPolicy(p *gwv1.BackendTLSPolicy) *tlsPolicy {
	gen := p.Generation
	v := &p.Spec.Validation
	tp := &tlsPolicy{p: p, ancestors: map[nn]bool{},
		accepted: status.Accepted(true, string(gwv1.PolicyReasonAccepted), "policy is accepted", gen),
		resolved: status.ResolvedRefs(true, string(gwv1.BackendTLSPolicyReasonResolvedRefs), "all references resolved", gen),
	}
	// Until it validates, the policy fails closed: TLS that verifies
	// against nothing, so no request reaches the backend unverified.
	tp.tls = &snapshot.UpstreamTLS{ServerName: "invalid.invalid"}
	u := &snapshot.UpstreamTLS{ServerName: strings.ToLower(string(v.Hostname))}
	for i, san := range v.SubjectAltNames {
		switch san.Type {
		case gwv1.HostnameSubjectAltNameType:
			if san.Hostname == "" || san.URI != "" {
				tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), fmt.Sprintf("subjectAltNames[%d] of type Hostname needs a hostname and no uri", i), gen)
				return tp
			}
			u.SubjectAltNames = append(u.SubjectAltNames, snapshot.SubjectAltName{Hostname: strings.ToLower(string(san.Hostname))})
		case gwv1.URISubjectAltNameType:
			if san.URI == "" || san.Hostname != "" {
				tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), fmt.Sprintf("subjectAltNames[%d] of type URI needs a uri and no hostname", i), gen)
				return tp
			}
			u.SubjectAltNames = append(u.SubjectAltNames, snapshot.SubjectAltName{URI: string(san.URI)})
		default:
			tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), fmt.Sprintf("subjectAltNames type %q is not Hostname or URI", san.Type), gen)
			return tp
		}
	}
	if !validHostname(u.ServerName) || strings.HasPrefix(u.ServerName, "*") {
		tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), fmt.Sprintf("validation.hostname %q is not a hostname", v.Hostname), gen)
		return tp
	}
	switch {
	case v.WellKnownCACertificates != nil && *v.WellKnownCACertificates != "":
		if *v.WellKnownCACertificates != gwv1.WellKnownCACertificatesSystem {
			tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid),
				fmt.Sprintf("wellKnownCACertificates %q is not supported; use System", *v.WellKnownCACertificates), gen)
			return tp
		}
		if len(v.CACertificateRefs) > 0 {
			tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), "caCertificateRefs and wellKnownCACertificates are exclusive", gen)
			return tp
		}
		u.SystemRoots = true
	case len(v.CACertificateRefs) == 0:
		tp.accepted = status.Accepted(false, string(gwv1.PolicyReasonInvalid), "validation needs caCertificateRefs or wellKnownCACertificates", gen)
		return tp
	default:
		var bundle []string
		var problem *refProblem
		for _, ref := range v.CACertificateRefs {
			ca, pr := t.caBundle(p.Namespace, string(ref.Group), string(ref.Kind), string(ref.Name))
			if pr != nil {
				if problem == nil {
					problem = pr
				}
				continue
			}
			bundle = append(bundle, ca)
		}
		if problem != nil {
			tp.resolved = status.ResolvedRefs(false, problem.reason, problem.message, gen)
		}
		if len(bundle) == 0 {
			tp.accepted = status.Accepted(false, string(gwv1.BackendTLSPolicyReasonNoValidCACertificate),
				"no caCertificateRef is usable; connections to the backend fail", gen)
		}
		u.CAPEM = strings.Join(bundle, "")
	}
	tp.tls = u
	return tp
}

// caBundle reads the PEM CA bundle of a caCertificateRef (a ConfigMap or
// Secret of the policy's namespace, key ca.crt), or why it cannot.
func (t *translator) caBundle(ns, group, kind, name string) (string, *refProblem) {
	desc := fmt.Sprintf("caCertificateRef %s/%s %s", group, kind, name)
	var data string
	switch {
	case group == "" && kind == "ConfigMap":
		cm := t.ix.configMaps[nn{Namespace: ns, Name: name}]
		if cm == nil {
			return "", &refProblem{string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), desc + ": ConfigMap not found"}
		}
		data = cm.Data[caKey]
	case group == "" && kind == kindSecret:
		s := t.ix.secrets[nn{Namespace: ns, Name: name}]
		if s == nil {
			return "", &refProblem{string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), desc + ": Secret not found"}
		}
		data = string(s.Data[caKey])
	default:
		return "", &refProblem{string(gwv1.BackendTLSPolicyReasonInvalidKind), desc + ": only core ConfigMaps and Secrets hold CA certificates"}
	}
	if err := validCABundle(data); err != nil {
		return "", &refProblem{string(gwv1.BackendTLSPolicyReasonInvalidCACertificateRef), fmt.Sprintf("%s: key %s: %v", desc, caKey, err)}
	}
	if !strings.HasSuffix(data, "\n") {
		data += "\n"
	}
	return data, nil
}

// caKey is the key of a CA bundle in a ConfigMap or Secret.
const caKey = "ca.crt"

// validCABundle checks that data is PEM with at least one certificate and
// nothing else that does not parse.
func validCABundle(data string) error {
	rest := []byte(data)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a %s PEM block; only CERTIFICATE blocks belong in a CA bundle", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d does not parse: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no PEM certificate")
	}
	return nil
}

// tlsPolicyFor is the policy that applies to a Service port: the winner for
// its port name, else the winner for the whole Service; nil for none.
func (t *translator) tlsPolicyFor(svc *corev1.Service, sp *corev1.ServicePort) *tlsPolicy {
	if sp.Name != "" {
		if tp := t.tlsWinners[tlsTarget{ns: svc.Namespace, svc: svc.Name, section: sp.Name}]; tp != nil {
			return tp
		}
	}
	return t.tlsWinners[tlsTarget{ns: svc.Namespace, svc: svc.Name}]
}

// applyTLSPolicy gives an endpoint set of a Service port the TLS of the
// policy that covers it, and remembers every policy of the Service for the
// set (their ancestors are the Gateways whose routes use it).
func (t *translator) applyTLSPolicy(es *snapshot.EndpointSet, svc *corev1.Service, sp *corev1.ServicePort) {
	if tp := t.tlsPolicyFor(svc, sp); tp != nil && tp.tls != nil {
		u := *tp.tls
		u.SubjectAltNames = append([]snapshot.SubjectAltName(nil), u.SubjectAltNames...)
		es.TLS = &u
	}
	if pols := t.tlsByService[key(&svc.ObjectMeta)]; len(pols) > 0 {
		if t.setPolicies == nil {
			t.setPolicies = map[string][]*tlsPolicy{}
		}
		t.setPolicies[es.Name] = pols
	}
}

// noteTLSAncestors records gi as an ancestor of the policies whose endpoint
// sets a route it serves uses.
func (t *translator) noteTLSAncestors(gi *gatewayInfo, r *snapshot.Route) {
	if len(t.setPolicies) == 0 {
		return
	}
	for _, b := range r.Backends {
		t.noteTLSAncestor(gi, b.EndpointSet)
	}
	for _, m := range r.Mirrors {
		t.noteTLSAncestor(gi, m.EndpointSet)
	}
}

func (t *translator) noteTLSAncestor(gi *gatewayInfo, set string) {
	for _, tp := range t.setPolicies[set] {
		tp.ancestors[key(&gi.gw.ObjectMeta)] = true
	}
}

// tlsPolicyStatuses fills the status of every policy with an ancestor.
func (t *translator) tlsPolicyStatuses() {
	for _, tp := range t.tlsPolicies {
		if len(tp.ancestors) == 0 {
			continue
		}
		anc := make([]nn, 0, len(tp.ancestors))
		for k := range tp.ancestors {
			anc = append(anc, k)
		}
		sort.Slice(anc, func(i, j int) bool { return nnLess(anc[i], anc[j]) })
		st := PolicyStatus{NamespacedName: key(&tp.p.ObjectMeta), Generation: tp.p.Generation}
		for _, a := range anc {
			group, kind, ns := gwv1.Group(gatewayGroup), gwv1.Kind(kindGateway), gwv1.Namespace(a.Namespace)
			conds := []metav1.Condition{tp.accepted, tp.resolved}
			sortConds(conds)
			st.Status.Ancestors = append(st.Status.Ancestors, gwv1.PolicyAncestorStatus{
				AncestorRef:    gwv1.ParentReference{Group: &group, Kind: &kind, Namespace: &ns, Name: gwv1.ObjectName(a.Name)},
				ControllerName: gwv1.GatewayController(names.ControllerName),
				Conditions:     conds,
			})
		}
		t.out.BackendTLSPolicies = append(t.out.BackendTLSPolicies, st)
	}
}
