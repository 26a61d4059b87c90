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
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The Ingress annotations of the policy layer. retry, rate-limit,
// ip-access-control, compression, ext-auth and auth-jwt name a policy
// object of the Ingress's namespace (RetryPolicy, RateLimit,
// IpAccessControl, Compression, CoxswainExternalAuth, JwtAuth) whose
// settings apply to every path of the Ingress, as a policy's targetRefs
// would; auth-basic-secret names an htpasswd Secret. A reference that
// cannot be used raises InvalidAnnotation; the non-authentication ones
// then fall back (the Ingress serves without them), the authentication
// ones fail closed (503).
const (
	annRetry                  = "retry"
	annRateLimit              = "rate-limit"
	annIPAccessControl        = "ip-access-control"
	annCompression            = "compression"
	annExtAuth                = "ext-auth"
	annAuthBasicSecret        = "auth-basic-secret" //nolint:gosec // G101: an annotation key, not a credential
	annAuthJWT                = "auth-jwt"
	annAuthTLSSecret          = "auth-tls-secret" //nolint:gosec // G101: an annotation key, not a credential
	annAuthTLSVerifyDepth     = "auth-tls-verify-depth"
	annAuthTLSPassCertificate = "auth-tls-pass-certificate-to-upstream" //nolint:gosec // G101: an annotation key, not a credential
	annMirrorTarget           = "mirror-target"
	annTrustForwardedFor      = "trust-forwarded-for"
	annForwardedForHeader     = "forwarded-for-header"
	annForwardedForCIDRs      = "forwarded-for-trusted-cidrs"
	annPathNormalize          = "path-normalize"
)

// policyAnnotations map the reference annotations to their policy kinds.
var policyAnnotations = []struct {
	key, kind  string
	failClosed bool
}{
	{annRetry, gatewayv1alpha1.KindRetryPolicy, false},
	{annRateLimit, gatewayv1alpha1.KindRateLimit, false},
	{annIPAccessControl, gatewayv1alpha1.KindIPAccessControl, false},
	{annCompression, gatewayv1alpha1.KindCompression, false},
	{annExtAuth, gatewayv1alpha1.KindExternalAuth, true},
	{annAuthJWT, gatewayv1alpha1.KindJWTAuth, true},
}

// failClosedRoute makes a route answer 503: an authentication annotation
// that cannot be applied never lets requests through.
func failClosedRoute(r *snapshot.Route) {
	r.DirectResponse = &snapshot.DirectResponse{StatusCode: 503, Body: "authentication is misconfigured"}
}

// policies reads the policy annotations into opts.policies.
func (a *annotationReader) policies(opts *ingressOpts) {
	ns := a.ing.Namespace
	for _, pa := range policyAnnotations {
		v, ok := a.get(pa.key)
		if !ok {
			continue
		}
		name := strings.TrimSpace(v)
		p := a.t.policyByRef[policyRef{kind: pa.kind, ns: ns, name: name}]
		var why string
		switch {
		case p == nil:
			why = fmt.Sprintf("no %s %s/%s", pa.kind, ns, name)
		case p.invalid != "":
			why = fmt.Sprintf("%s %s/%s is invalid: %s", pa.kind, ns, name, p.invalid)
		case p.route == nil:
			why = pa.kind + " does not apply to routes"
		}
		switch {
		case why == "":
			opts.policies = append(opts.policies, p.route)
		case pa.failClosed:
			a.refuse(pa.key, v, why)
			opts.policies = append(opts.policies, failClosedRoute)
		default:
			a.invalid(pa.key, v, why)
		}
	}
	if v, ok := a.get(annAuthBasicSecret); ok {
		users, err := a.t.htpasswd(ns, strings.TrimSpace(v))
		if err != nil {
			a.refuse(annAuthBasicSecret, v, err.Error())
			opts.policies = append(opts.policies, failClosedRoute)
		} else {
			ba := snapshot.BasicAuth{Users: users}
			opts.policies = append(opts.policies, func(r *snapshot.Route) { v := ba; r.BasicAuth = &v })
		}
	}
	a.clientCertificates(opts)
	if m := a.mirrorTarget(); m != nil {
		opts.policies = append(opts.policies, func(r *snapshot.Route) { r.Mirrors = append(r.Mirrors, *m) })
	}
	if ci := a.clientIP(); ci != nil {
		opts.policies = append(opts.policies, func(r *snapshot.Route) { v := *ci; r.ClientIP = &v })
	}
	if v, ok := a.get(annPathNormalize); ok {
		var pn *snapshot.PathNormalization
		switch strings.TrimSpace(v) {
		case "base":
		case "merge-slashes":
			pn = &snapshot.PathNormalization{MergeSlashes: true}
		case "decode-and-merge-slashes":
			pn = &snapshot.PathNormalization{MergeSlashes: true, DecodeSlashes: true}
		default:
			a.invalid(annPathNormalize, v, "want base, merge-slashes or decode-and-merge-slashes")
		}
		if pn != nil {
			opts.policies = append(opts.policies, func(r *snapshot.Route) { v := *pn; r.PathNormalization = &v })
		}
	}
}

// mirrorTarget reads mirror-target: "svc[.namespace][:port]", a Service of
// the Ingress's namespace (the port may be left out when the Service has
// one).
func (a *annotationReader) mirrorTarget() *snapshot.Mirror {
	v, ok := a.get(annMirrorTarget)
	if !ok {
		return nil
	}
	ns := a.ing.Namespace
	hostPart, portPart, hasPort := strings.Cut(strings.TrimSpace(v), ":")
	svcName, svcNS, hasNS := strings.Cut(hostPart, ".")
	if hasNS && svcNS != ns {
		a.invalid(annMirrorTarget, v, "the Service must be in the Ingress's namespace "+ns)
		return nil
	}
	svc := a.t.ix.services[nn{Namespace: ns, Name: svcName}]
	if svc == nil {
		a.invalid(annMirrorTarget, v, "Service "+ns+"/"+svcName+" not found")
		return nil
	}
	var sp *corev1.ServicePort
	switch {
	case hasPort:
		n, err := strconv.Atoi(portPart)
		for i := range svc.Spec.Ports {
			if err == nil && svc.Spec.Ports[i].Port == int32(n) { //nolint:gosec // G109: compared, not converted back
				sp = &svc.Spec.Ports[i]
			}
		}
	case len(svc.Spec.Ports) == 1:
		sp = &svc.Spec.Ports[0]
	}
	if sp == nil {
		a.invalid(annMirrorTarget, v, "name one port of the Service")
		return nil
	}
	return &snapshot.Mirror{EndpointSet: a.t.endpointSet(svc, sp, snapshot.AppProtocolHTTP)}
}

// clientIP reads trust-forwarded-for, forwarded-for-header and
// forwarded-for-trusted-cidrs. Without trusted CIDRs the immediate peer is
// trusted to name the client (the header's last entry).
func (a *annotationReader) clientIP() *snapshot.ClientIPDetection {
	if !a.flag(annTrustForwardedFor) {
		for _, k := range []string{annForwardedForHeader, annForwardedForCIDRs} {
			if v, ok := a.get(k); ok {
				a.invalid(k, v, "needs "+annTrustForwardedFor+": \"true\"")
			}
		}
		return nil
	}
	ci := &snapshot.ClientIPDetection{}
	if v, ok := a.get(annForwardedForHeader); ok {
		if h := strings.TrimSpace(v); snapshot.ValidToken(h) {
			ci.Header = h
		} else {
			a.invalid(annForwardedForHeader, v, "want a header name")
		}
	}
	if v, ok := a.get(annForwardedForCIDRs); ok {
		c, err := cidrs(strings.Split(v, ","))
		if err != nil {
			a.invalid(annForwardedForCIDRs, v, err.Error())
		} else {
			ci.TrustedCIDRs = c
		}
	}
	if len(ci.TrustedCIDRs) == 0 {
		ci.TrustedCIDRs, ci.TrustedHops = []string{"0.0.0.0/0", "::/0"}, 1
	}
	return ci
}

// ingressClientTraffic is the Ingress listeners' ClientTraffic: PROXY
// protocol from the controller's trusted sources, when it accepts it.
func (t *translator) ingressClientTraffic() *snapshot.ClientTraffic {
	if len(t.res.IngressProxyProtocol) == 0 {
		return nil
	}
	c, err := cidrs(t.res.IngressProxyProtocol)
	if err != nil || len(c) == 0 {
		return nil // the controller validates its flags at start
	}
	return &snapshot.ClientTraffic{ProxyProtocol: &snapshot.ProxyProtocol{TrustedCIDRs: c}}
}

// defaultVerifyDepth is auth-tls-verify-depth's default, as nginx's: the
// client certificate is signed by a trusted CA directly.
const defaultVerifyDepth = 1

// clientCertificates reads auth-tls-secret (a Secret "name" or
// "namespace/name" of the Ingress's namespace with the CA bundle in
// ca.crt), auth-tls-verify-depth (1-10) and
// auth-tls-pass-certificate-to-upstream. The HTTPS handshakes of the
// Ingress's TLS hosts then ask for a client certificate and verify it; the
// Ingress's routes answer 400 to a request whose connection carries none
// (plain HTTP included, so a client cannot go around the check). A host
// shared with another Ingress gets the check for both: the most
// restrictive wins, the older Ingress's CA when two differ. A Secret that
// cannot be used fails closed (503).
func (a *annotationReader) clientCertificates(opts *ingressOpts) {
	v, ok := a.get(annAuthTLSSecret)
	if !ok {
		for _, k := range []string{annAuthTLSVerifyDepth, annAuthTLSPassCertificate} {
			if v, ok := a.get(k); ok {
				a.invalid(k, v, "needs "+annAuthTLSSecret)
			}
		}
		return
	}
	ns, name := a.ing.Namespace, strings.TrimSpace(v)
	if n, rest, cut := strings.Cut(name, "/"); cut {
		if n != ns {
			a.refuse(annAuthTLSSecret, v, "the Secret must be in the Ingress's namespace "+ns)
			opts.policies = append(opts.policies, failClosedRoute)
			return
		}
		name = rest
	}
	ca, problem := a.t.caBundle(ns, "", kindSecret, name)
	if problem != nil {
		a.refuse(annAuthTLSSecret, v, problem.message)
		opts.policies = append(opts.policies, failClosedRoute)
		return
	}
	depth := defaultVerifyDepth
	if d, ok := a.get(annAuthTLSVerifyDepth); ok {
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || n < 1 || n > 10 {
			a.invalid(annAuthTLSVerifyDepth, d, "want a number from 1 to 10")
		} else {
			depth = n
		}
	}
	opts.clientCA = &snapshot.ClientValidation{CAPEM: ca, VerifyDepth: int32(depth)}
	pass := a.flag(annAuthTLSPassCertificate)
	opts.policies = append(opts.policies, func(r *snapshot.Route) {
		r.RequireClientCertificate, r.OmitClientCertificate = true, !pass
	})
}
