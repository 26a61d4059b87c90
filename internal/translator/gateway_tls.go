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
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// A Gateway's spec.tls: frontend client certificate validation for its
// HTTPS listeners (default, overridden per port), and the client
// certificate its proxies present to backends that speak TLS
// (BackendTLSPolicy).

// frontendValidation applies spec.tls.frontend to an HTTPS listener li of
// gw: it resolves the CA bundle of the listener's port into
// li.clientValidation, or sets ResolvedRefs (some references unusable) and
// Accepted (none usable: the listener is not served) as the spec says. It
// reports whether the listener can still be served.
func (t *translator) frontendValidation(gw *gwv1.Gateway, li *listenerInfo) bool {
	v := frontendConfig(gw, li.spec.Port)
	if v == nil {
		return true
	}
	gen := li.owner.generation
	var bundle []string
	var problem *refProblem
	for _, ref := range v.CACertificateRefs {
		ca, pr := t.frontendCA(gw, ref)
		if pr != nil {
			if problem == nil {
				problem = pr
			}
			continue
		}
		bundle = append(bundle, ca)
	}
	if problem != nil {
		li.resolved = status.ResolvedRefs(false, problem.reason, problem.message, gen)
	}
	if len(bundle) == 0 {
		li.accepted = status.Accepted(false, string(gwv1.ListenerReasonNoValidCACertificate),
			"no caCertificateRef of the Gateway's client certificate validation for this port is usable", gen)
		return false
	}
	li.clientValidation = &snapshot.ClientValidation{
		CAPEM:                 strings.Join(bundle, ""),
		AllowInsecureFallback: v.Mode == gwv1.AllowInsecureFallback,
	}
	return true
}

// frontendConfig is the client certificate validation of a Gateway port:
// its perPort entry, else the default; nil for none.
func frontendConfig(gw *gwv1.Gateway, port gwv1.PortNumber) *gwv1.FrontendTLSValidation {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return nil
	}
	f := gw.Spec.TLS.Frontend
	for i := range f.PerPort {
		if f.PerPort[i].Port == port {
			return f.PerPort[i].TLS.Validation
		}
	}
	return f.Default.Validation
}

// insecureFrontend reports whether any frontend validation of gw allows
// insecure fallback (the Gateway's InsecureFrontendValidationMode
// condition).
func insecureFrontend(gw *gwv1.Gateway) bool {
	if gw.Spec.TLS == nil || gw.Spec.TLS.Frontend == nil {
		return false
	}
	f := gw.Spec.TLS.Frontend
	if v := f.Default.Validation; v != nil && v.Mode == gwv1.AllowInsecureFallback {
		return true
	}
	for i := range f.PerPort {
		if v := f.PerPort[i].TLS.Validation; v != nil && v.Mode == gwv1.AllowInsecureFallback {
			return true
		}
	}
	return false
}

// frontendCA reads one caCertificateRef of a frontend validation: a core
// ConfigMap or Secret (key ca.crt) of the Gateway's namespace, or of
// another that grants it.
func (t *translator) frontendCA(gw *gwv1.Gateway, ref gwv1.ObjectReference) (string, *refProblem) {
	ns := gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	g, k := string(ref.Group), string(ref.Kind)
	if g != "" || (k != "ConfigMap" && k != kindSecret) {
		return "", &refProblem{string(gwv1.ListenerReasonInvalidCACertificateKind),
			fmt.Sprintf("caCertificateRef %s/%s %s: only core ConfigMaps and Secrets hold CA certificates", g, k, ref.Name)}
	}
	if ns != gw.Namespace && !t.granted(gatewayGroup, kindGateway, gw.Namespace, "", k, ns, string(ref.Name)) {
		return "", &refProblem{status.ReasonRefNotPermitted,
			fmt.Sprintf("caCertificateRef %s %s/%s: no ReferenceGrant in namespace %s allows it", k, ns, ref.Name, ns)}
	}
	ca, pr := t.caBundle(ns, g, k, string(ref.Name))
	if pr != nil {
		// caBundle speaks BackendTLSPolicy reasons; a listener's are these.
		pr.reason = string(gwv1.ListenerReasonInvalidCACertificateRef)
	}
	return ca, pr
}

// backendClientCertificate resolves spec.tls.backend.clientCertificateRef
// of gw into gi.backendCert (a snapshot certificate name), or the problem
// for the Gateway's ResolvedRefs condition.
func (t *translator) backendClientCertificate(gi *gatewayInfo) {
	gw := gi.gw
	if gw.Spec.TLS == nil || gw.Spec.TLS.Backend == nil || gw.Spec.TLS.Backend.ClientCertificateRef == nil {
		return
	}
	ref := gw.Spec.TLS.Backend.ClientCertificateRef
	gi.backendTLSSet = true
	ns := gw.Namespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	g, k := "", kindSecret
	if ref.Group != nil {
		g = string(*ref.Group)
	}
	if ref.Kind != nil {
		k = string(*ref.Kind)
	}
	desc := fmt.Sprintf("tls.backend.clientCertificateRef %s/%s", ns, ref.Name)
	switch {
	case g != "" || k != kindSecret:
		gi.backendCertProblem = &refProblem{string(gwv1.GatewayReasonInvalidClientCertificateRef), fmt.Sprintf("%s: kind %s/%s is not a core Secret", desc, g, k)}
	case ns != gw.Namespace && !t.granted(gatewayGroup, kindGateway, gw.Namespace, "", kindSecret, ns, string(ref.Name)):
		gi.backendCertProblem = &refProblem{status.ReasonRefNotPermitted, desc + ": no ReferenceGrant in namespace " + ns + " allows it"}
	default:
		id, err := t.certificate(ns, string(ref.Name))
		if err != nil {
			gi.backendCertProblem = &refProblem{string(gwv1.GatewayReasonInvalidClientCertificateRef), desc + ": " + err.Error()}
			return
		}
		gi.backendCert = id
	}
}

// gatewayTLSConditions are the Gateway conditions spec.tls adds:
// ResolvedRefs when it names a backend client certificate, and
// InsecureFrontendValidationMode when a frontend validation allows
// insecure fallback.
func (g *gatewayInfo) gatewayTLSConditions(gen int64) []metav1.Condition {
	var out []metav1.Condition
	if g.backendTLSSet {
		if p := g.backendCertProblem; p != nil {
			out = append(out, status.ResolvedRefs(false, p.reason, p.message, gen))
		} else {
			out = append(out, status.ResolvedRefs(true, string(gwv1.GatewayReasonResolvedRefs), "all references resolved", gen))
		}
	}
	if insecureFrontend(g.gw) {
		out = append(out, metav1.Condition{
			Type: string(gwv1.GatewayConditionInsecureFrontendValidationMode), Status: metav1.ConditionTrue,
			Reason:             string(gwv1.GatewayReasonConfigurationChanged),
			Message:            "a client certificate validation allows connections without a valid certificate (AllowInsecureFallback)",
			ObservedGeneration: gen,
		})
	}
	return out
}

// withClientCertificate is r as gi's proxies send it: when gi presents a
// backend client certificate, every endpoint set of r that speaks TLS is
// replaced by a copy that presents it (a Service shared by Gateways with
// different client certificates gets one set per certificate).
func (t *translator) withClientCertificate(sb *scopeBuilder, gi *gatewayInfo, r *snapshot.Route) *snapshot.Route {
	if gi.backendCert == "" {
		return r
	}
	var out *snapshot.Route
	for i, b := range r.Backends {
		es := t.set(b.EndpointSet)
		if es == nil || es.TLS == nil {
			continue
		}
		if out == nil {
			cp := *r
			cp.Backends = append([]snapshot.Backend(nil), r.Backends...)
			out = &cp
		}
		out.Backends[i].EndpointSet = t.clientCertSet(es, gi.backendCert)
	}
	if out == nil {
		return r
	}
	sb.certs[gi.backendCert] = true
	return out
}

// clientCertSet is the copy of TLS endpoint set es that presents
// certificate cert, made once. (A set remakeSet made has no TLS, so its
// source, not in t.sources, is never looked up here.)
func (t *translator) clientCertSet(es *snapshot.EndpointSet, cert string) string {
	name := es.Name + "#client=" + cert
	if t.set(name) == nil {
		cp := *es
		u := *es.TLS
		u.ClientCertificate = cert
		cp.TLS = &u
		cp.Name = name
		t.endpointSets[name] = &cp
		if src, ok := t.sources[es.Name]; ok {
			t.recordSource(name, src)
		}
		if pols := t.setPolicies[es.Name]; len(pols) > 0 {
			t.setPolicies[name] = pols
		}
	}
	return name
}
