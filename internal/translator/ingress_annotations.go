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
	opts := &ingressOpts{sslCode: defaultSSLRedirectCode}
	var defaults map[string]string
	if params != nil {
		defaults = params.Spec.DefaultAnnotations
		if params.Spec.AccessLog != nil && !*params.Spec.AccessLog {
			opts.accessLogOff = true
		}
	}
	get := func(k string) (string, bool) {
		full := ingressv1alpha1.AnnotationPrefix + k
		if v, ok := ing.Annotations[full]; ok {
			return v, true
		}
		if v, ok := defaults[full]; ok {
			return v, true
		}
		v, ok := defaults[k]
		return v, ok
	}
	invalid := func(k, v, why string) {
		t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidAnnotation,
			fmt.Sprintf("annotation %s%s=%q is invalid: %s; using the default", ingressv1alpha1.AnnotationPrefix, k, v, why))
	}
	boolAnn := func(k string) bool {
		v, ok := get(k)
		if !ok {
			return false
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			invalid(k, v, "want true or false")
			return false
		}
		return b
	}
	redirectCode := func(k string, def int, allowed ...int) int {
		v, ok := get(k)
		if !ok {
			return def
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err == nil {
			for _, a := range allowed {
				if n == a {
					return n
				}
			}
		}
		invalid(k, v, fmt.Sprintf("want one of %v", allowed))
		return def
	}
	opts.useRegex = boolAnn(annUseRegex)
	opts.sslRedirect = boolAnn(annSSLRedirect)
	opts.sslCode = redirectCode(annSSLRedirectCode, defaultSSLRedirectCode, 301, 302, 307, 308)
	if v, ok := get(annRewriteTarget); ok {
		v = strings.TrimSpace(v)
		if v == "" || strings.ContainsAny(v, " \t\r\n\x00") || (!opts.useRegex && !strings.HasPrefix(v, "/")) {
			invalid(annRewriteTarget, v, "want a path starting with /")
		} else {
			opts.rewrite = v
		}
	}
	opts.req = headerAnnotations(get, invalid, annRequestHeaderSet, annRequestHeaderAdd, annRequestHeaderRemove)
	opts.resp = headerAnnotations(get, invalid, annResponseHeaderSet, annResponseHeaderAdd, annResponseHeaderRemove)
	for _, d := range []struct {
		k   string
		dst *snapshot.Duration
	}{{annReadTimeout, &opts.read}, {annSendTimeout, &opts.send}} {
		if v, ok := get(d.k); ok {
			dur, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil || dur <= 0 {
				invalid(d.k, v, "want a positive Go duration such as 30s")
				continue
			}
			*d.dst = snapshot.Duration(dur)
		}
	}
	if v, ok := get(annMaxBodySize); ok {
		n, err := parseSize(v)
		if err != nil {
			invalid(annMaxBodySize, v, err.Error())
		} else {
			opts.maxBody = n
		}
	}
	// redirect-*: any key present builds a redirect.
	var rd snapshot.Redirect
	any := false
	if v, ok := get(annRedirectScheme); ok {
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "http" || v == "https" {
			rd.Scheme, any = v, true
		} else {
			invalid(annRedirectScheme, v, "want http or https")
		}
	}
	if v, ok := get(annRedirectHostname); ok {
		h := strings.ToLower(strings.TrimSpace(v))
		if validHostname(h) && !strings.HasPrefix(h, "*") {
			rd.Hostname, any = h, true
		} else {
			invalid(annRedirectHostname, v, "want a DNS name")
		}
	}
	if v, ok := get(annRedirectPort); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err == nil && n >= 1 && n <= 65535 {
			rd.Port, any = int32(n), true
		} else {
			invalid(annRedirectPort, v, "want a port 1-65535")
		}
	}
	if v, ok := get(annRedirectPath); ok {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \t\r\n\x00") {
			rd.Path, any = &snapshot.PathModifier{Type: snapshot.ReplaceFullPath, Value: v}, true
		} else {
			invalid(annRedirectPath, v, "want a path starting with /")
		}
	}
	// redirect-status-code alone redirects nowhere and is ignored.
	rd.StatusCode = redirectCode(annRedirectStatusCode, defaultRedirectCode, 301, 302, 303, 307, 308)
	if any {
		opts.redirect = &rd
	}
	return opts
}

func headerAnnotations(get func(string) (string, bool), invalid func(k, v, why string), setK, addK, removeK string) *snapshot.HeaderModifier {
	hm := &snapshot.HeaderModifier{}
	for _, x := range []struct {
		k   string
		dst *[]snapshot.Header
	}{{setK, &hm.Set}, {addK, &hm.Add}} {
		v, ok := get(x.k)
		if !ok {
			continue
		}
		var hs []snapshot.Header
		bad := ""
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			name, val, found := strings.Cut(line, ":")
			name, val = strings.TrimSpace(name), strings.TrimSpace(val)
			if !found || !validHeader(name, val) {
				bad = fmt.Sprintf("line %q is not \"Name: Value\"", line)
				break
			}
			hs = append(hs, snapshot.Header{Name: name, Value: val})
		}
		if bad != "" {
			invalid(x.k, v, bad)
			continue
		}
		*x.dst = hs
	}
	if v, ok := get(removeK); ok {
		var names []string
		bad := false
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" {
				continue
			}
			if !snapshot.ValidToken(n) {
				bad = true
				break
			}
			names = append(names, n)
		}
		if bad {
			invalid(removeK, v, "want a comma-separated list of header names")
		} else {
			hm.Remove = names
		}
	}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		return nil
	}
	return hm
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
