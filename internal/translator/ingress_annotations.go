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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	ingressv1alpha1 "github.com/coxswain-go/coxswain/api/ingress/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// Ingress annotations and their handling.
const (
	AnnotationIngressClass  = "kubernetes.io/ingress.class"
	AnnotationDefaultClass  = "ingressclass.kubernetes.io/is-default-class"
	annRewriteTarget        = "rewrite-target"
	annUseRegex             = "use-regex"
	annSSLRedirect          = "ssl-redirect"
	annSSLRedirectCode      = "ssl-redirect-code"
	annRequestHeaderSet     = "request-header-set"
	annRequestHeaderAdd     = "request-header-add"
	annRequestHeaderRemove  = "request-header-remove"
	annResponseHeaderSet    = "response-header-set"
	annResponseHeaderAdd    = "response-header-add"
	annResponseHeaderRemove = "response-header-remove"
	annReadTimeout          = "read-timeout"
	annSendTimeout          = "send-timeout"
	annMaxBodySize          = "max-body-size"
	annRedirectScheme       = "redirect-scheme"
	annRedirectHostname     = "redirect-hostname"
	annRedirectPort         = "redirect-port"
	annRedirectPath         = "redirect-path"
	annRedirectStatusCode   = "redirect-status-code"
	defaultSSLRedirectCode  = 308
	defaultRedirectCode     = 302
)

type ingressOpts struct {
	rewrite      string
	useRegex     bool
	sslRedirect  bool
	sslCode      int
	req, resp    *snapshot.HeaderModifier
	read, send   snapshot.Duration
	maxBody      int64
	redirect     *snapshot.Redirect
	accessLogOff bool
	// tlsHosts are the hosts this Ingress has a valid certificate for;
	// tlsAll is set by a valid tls entry without hosts. ssl-redirect only
	// applies to them, so it never points at an HTTPS host we cannot serve.
	tlsHosts map[string]bool
	tlsAll   bool
	// policies apply the policy annotations (ingress_policies.go).
	policies []func(*snapshot.Route)
	// clientCA verifies client certificates on the Ingress's TLS hosts
	// (auth-tls-secret); nil for none.
	clientCA *snapshot.ClientValidation
}

// ingressParams resolves IngressClass.spec.parameters. A broken reference
// is ignored (the class works without defaults) and reported once as a
// Warning Event on the IngressClass.
func (t *translator) ingressParams(ic *networkingv1.IngressClass) *ingressv1alpha1.CoxswainIngressClassParameters {
	p := ic.Spec.Parameters
	if p == nil {
		return nil
	}
	if t.icParamsSeen == nil {
		t.icParamsSeen = map[string]bool{}
	}
	bad := func(msg string) *ingressv1alpha1.CoxswainIngressClassParameters {
		if !t.icParamsSeen[ic.Name] {
			t.icParamsSeen[ic.Name] = true
			t.warn("IngressClass", "", ic.Name, status.ReasonInvalidParameters, "spec.parameters "+msg+"; class defaults are not applied")
		}
		return nil
	}
	if p.APIGroup == nil || *p.APIGroup != names.IngressParametersGroup || p.Kind != names.IngressParametersKind {
		return bad("must refer to " + names.IngressParametersGroup + "/" + names.IngressParametersKind)
	}
	if p.Scope == nil || *p.Scope != networkingv1.IngressClassParametersReferenceScopeNamespace || p.Namespace == nil {
		return bad("must have scope Namespace and a namespace")
	}
	cp := t.ix.icParams[nn{Namespace: *p.Namespace, Name: p.Name}]
	if cp == nil {
		return bad(fmt.Sprintf("%s/%s not found", *p.Namespace, p.Name))
	}
	return cp
}

// ingressOptions reads ingress.coxswain-labs.dev/* annotations, filling
// keys the Ingress does not set from the class defaults. Invalid values
// produce an InvalidAnnotation Warning Event and fall back to the default.
func (t *translator) ingressOptions(ing *networkingv1.Ingress, params *ingressv1alpha1.CoxswainIngressClassParameters) *ingressOpts {
	a := &annotationReader{t: t, ing: ing}
	opts := &ingressOpts{}
	if params != nil {
		a.defaults = params.Spec.DefaultAnnotations
		opts.accessLogOff = params.Spec.AccessLog != nil && !*params.Spec.AccessLog
	}
	opts.useRegex = a.flag(annUseRegex)
	opts.sslRedirect = a.flag(annSSLRedirect)
	opts.sslCode = a.redirectCode(annSSLRedirectCode, defaultSSLRedirectCode, 301, 302, 307, 308)
	opts.rewrite = a.rewriteTarget(opts.useRegex)
	opts.req = a.headers(annRequestHeaderSet, annRequestHeaderAdd, annRequestHeaderRemove)
	opts.resp = a.headers(annResponseHeaderSet, annResponseHeaderAdd, annResponseHeaderRemove)
	opts.read = a.duration(annReadTimeout)
	opts.send = a.duration(annSendTimeout)
	opts.maxBody = a.size(annMaxBodySize)
	opts.redirect = a.redirect()
	a.policies(opts)
	return opts
}

// annotationReader reads the ingress.coxswain-labs.dev/* annotations of one
// Ingress, each falling back to the class's defaultAnnotations (by full or
// short key). Every reader method reports an invalid value by Event and
// returns the default.
type annotationReader struct {
	t        *translator
	ing      *networkingv1.Ingress
	defaults map[string]string
}

// get is the value of annotation k (short key), and whether it is set.
func (a *annotationReader) get(k string) (string, bool) {
	full := ingressv1alpha1.AnnotationPrefix + k
	if v, ok := a.ing.Annotations[full]; ok {
		return v, true
	}
	if v, ok := a.defaults[full]; ok {
		return v, true
	}
	v, ok := a.defaults[k]
	return v, ok
}

// invalid reports an invalid value v of annotation k.
func (a *annotationReader) invalid(k, v, why string) {
	a.report(k, v, why, "using the default")
}

// refuse reports an invalid value v of an authentication annotation k,
// whose Ingress then answers 503.
func (a *annotationReader) refuse(k, v, why string) {
	a.report(k, v, why, "the Ingress answers 503")
}

func (a *annotationReader) report(k, v, why, outcome string) {
	a.t.warn(kindIngress, a.ing.Namespace, a.ing.Name, status.EventInvalidAnnotation,
		fmt.Sprintf("annotation %s%s=%q is invalid: %s; %s", ingressv1alpha1.AnnotationPrefix, k, v, why, outcome))
}

// flag reads a true/false annotation; unset is false.
func (a *annotationReader) flag(k string) bool {
	v, ok := a.get(k)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		a.invalid(k, v, "want true or false")
		return false
	}
	return b
}

// redirectCode reads a redirect status code, one of allowed.
func (a *annotationReader) redirectCode(k string, def int, allowed ...int) int {
	v, ok := a.get(k)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err == nil && slices.Contains(allowed, n) {
		return n
	}
	a.invalid(k, v, fmt.Sprintf("want one of %v", allowed))
	return def
}

// rewriteTarget reads rewrite-target: a path, or with use-regex any
// replacement (it may start with a "$n" reference).
func (a *annotationReader) rewriteTarget(useRegex bool) string {
	v, ok := a.get(annRewriteTarget)
	if !ok {
		return ""
	}
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, " \t\r\n\x00") || (!useRegex && !strings.HasPrefix(v, "/")) {
		a.invalid(annRewriteTarget, v, "want a path starting with /")
		return ""
	}
	return v
}

// duration reads a positive Go duration; unset is 0.
func (a *annotationReader) duration(k string) snapshot.Duration {
	v, ok := a.get(k)
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || dur <= 0 {
		a.invalid(k, v, "want a positive Go duration such as 30s")
		return 0
	}
	return snapshot.Duration(dur)
}

// size reads a byte count (parseSize); unset is 0.
func (a *annotationReader) size(k string) int64 {
	v, ok := a.get(k)
	if !ok {
		return 0
	}
	n, err := parseSize(v)
	if err != nil {
		a.invalid(k, v, err.Error())
		return 0
	}
	return n
}

// redirect reads redirect-*: any valid key of scheme, hostname, port and
// path builds a redirect. redirect-status-code alone redirects nowhere and
// is ignored (but still checked).
func (a *annotationReader) redirect() *snapshot.Redirect {
	var rd snapshot.Redirect
	set := false
	if v, ok := a.get(annRedirectScheme); ok {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "http" || v == "https" {
			rd.Scheme, set = v, true
		} else {
			a.invalid(annRedirectScheme, v, "want http or https")
		}
	}
	if v, ok := a.get(annRedirectHostname); ok {
		h := strings.ToLower(strings.TrimSpace(v))
		if validHostname(h) && !strings.HasPrefix(h, "*") {
			rd.Hostname, set = h, true
		} else {
			a.invalid(annRedirectHostname, v, "want a DNS name")
		}
	}
	if v, ok := a.get(annRedirectPort); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err == nil && n >= 1 && n <= 65535 {
			rd.Port, set = int32(n), true
		} else {
			a.invalid(annRedirectPort, v, "want a port 1-65535")
		}
	}
	if v, ok := a.get(annRedirectPath); ok {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \t\r\n\x00") {
			rd.Path, set = &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: v}, true
		} else {
			a.invalid(annRedirectPath, v, "want a path starting with /")
		}
	}
	rd.StatusCode = a.redirectCode(annRedirectStatusCode, defaultRedirectCode, 301, 302, 303, 307, 308)
	if !set {
		return nil
	}
	return &rd
}

// headers reads the set, add and remove annotations of one header
// modifier; nil when it does nothing.
func (a *annotationReader) headers(setK, addK, removeK string) *snapshot.HeaderModifier {
	hm := &snapshot.HeaderModifier{Set: a.headerLines(setK), Add: a.headerLines(addK), Remove: a.headerNames(removeK)}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		return nil
	}
	return hm
}

// headerLines reads "Name: Value" lines; any invalid line voids them all.
func (a *annotationReader) headerLines(k string) []snapshot.Header {
	v, ok := a.get(k)
	if !ok {
		return nil
	}
	var hs []snapshot.Header
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, found := strings.Cut(line, ":")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !found || !validHeader(name, val) {
			a.invalid(k, v, fmt.Sprintf("line %q is not \"Name: Value\"", line))
			return nil
		}
		hs = append(hs, snapshot.Header{Name: name, Value: val})
	}
	return hs
}

// headerNames reads a comma-separated list of header names; any invalid
// name voids them all.
func (a *annotationReader) headerNames(k string) []string {
	v, ok := a.get(k)
	if !ok {
		return nil
	}
	var list []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !snapshot.ValidToken(n) {
			a.invalid(k, v, "want a comma-separated list of header names")
			return nil
		}
		list = append(list, n)
	}
	return list
}

var sizeRE = regexp.MustCompile(`^([0-9]+)([kKmMgG]?)$`)

// parseSize reads a byte count with an optional binary k/m/g suffix.
func parseSize(v string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0, fmt.Errorf("want a size such as 512k, 10m or 1g")
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size is too large")
	}
	shift := map[string]uint{"": 0, "k": 10, "m": 20, "g": 30}[strings.ToLower(m[2])]
	if n > (1<<62)>>shift {
		return 0, fmt.Errorf("size is too large")
	}
	return n << shift, nil
}
