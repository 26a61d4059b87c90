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
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

// The ports of the shared pool's Ingress listeners.
const (
	ingressHTTPPort  = 80
	ingressHTTPSPort = 443
)

// ingressRoute is one Ingress path compiled for both listeners.
type ingressRoute struct {
	http, https *snapshot.Route
	host        string
	single      bool
	key         precKey
}

func (t *translator) processIngresses() {
	classes := map[string]*networkingv1.IngressClass{}
	var defaults []string
	for _, ic := range t.res.IngressClasses {
		if ic == nil || ic.Spec.Controller != names.ControllerName {
			continue
		}
		if _, dup := classes[ic.Name]; dup {
			continue
		}
		classes[ic.Name] = ic
		if ic.Annotations[AnnotationDefaultClass] == "true" {
			defaults = append(defaults, ic.Name)
		}
	}
	if len(classes) == 0 {
		return
	}
	sort.Strings(defaults)
	ings := make([]*networkingv1.Ingress, 0, len(t.res.Ingresses))
	for _, ing := range t.res.Ingresses {
		if ing != nil && named(&ing.ObjectMeta) {
			ings = append(ings, ing)
		}
	}
	sort.SliceStable(ings, func(i, j int) bool { return olderFirst(&ings[i].ObjectMeta, &ings[j].ObjectMeta) })

	sb := t.scope(snapshot.SharedPool())
	lbHTTP := sb.listener(ingressHTTPPort, "ingress/80", snapshot.ProtocolHTTP, 0)
	lbHTTP.regexLast = true
	lbHTTPS := &listenerBuilder{l: snapshot.Listener{Name: "ingress/443", Port: ingressHTTPSPort, Protocol: snapshot.ProtocolHTTPS}, vhosts: map[string]*vhostBuilder{}, regexLast: true}
	sniSeen := map[snapshot.SNICertificate]bool{}
	taken := map[string]nn{}
	var routes []ingressRoute
	var defaultRoute *ingressRoute
	var defaultOwner nn
	lbStatus := t.ingressLoadBalancer()
	seen := map[nn]bool{}

	for _, ing := range ings {
		k := key(&ing.ObjectMeta)
		if seen[k] {
			continue
		}
		seen[k] = true
		class := ""
		switch {
		case ing.Spec.IngressClassName != nil:
			class = *ing.Spec.IngressClassName
		case ing.Annotations[AnnotationIngressClass] != "":
			class = ing.Annotations[AnnotationIngressClass]
		case len(defaults) > 0:
			class = defaults[0]
		}
		ic := classes[class]
		if ic == nil {
			continue
		}
		seen[k] = true
		opts := t.ingressOptions(ing, t.ingressParams(ic))
		t.out.Ingresses = append(t.out.Ingresses, IngressStatus{NamespacedName: k, LoadBalancer: lbStatus})

		for _, tl := range ing.Spec.TLS {
			if tl.SecretName == "" {
				continue
			}
			cert, msg := t.certificate(ing.Namespace, tl.SecretName)
			if msg != "" {
				t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidTLSSecret,
					fmt.Sprintf("tls secret %s/%s: %s; hosts %v are not served over HTTPS by it", ing.Namespace, tl.SecretName, msg, tl.Hosts))
				continue
			}
			hosts := tl.Hosts
			if len(hosts) == 0 {
				hosts = []string{""}
				opts.tlsAll = true
			}
			for _, h := range hosts {
				h = strings.ToLower(h)
				if h != "" && !validHostname(h) {
					continue
				}
				if h != "" {
					if opts.tlsHosts == nil {
						opts.tlsHosts = map[string]bool{}
					}
					opts.tlsHosts[h] = true
				}
				sc := snapshot.SNICertificate{Hostname: h, Certificate: cert}
				if !sniSeen[sc] {
					sniSeen[sc] = true
					lbHTTPS.sni = append(lbHTTPS.sni, sc)
					sb.certs[cert] = true
				}
			}
		}

		if db := ing.Spec.DefaultBackend; db != nil {
			r := t.ingressRoute(ing, opts, db, fmt.Sprintf("ingress/%s/%s:default", ing.Namespace, ing.Name), nil, "*")
			if defaultRoute == nil {
				key := precKey{lastResort: true}
				key.finalize()
				defaultRoute = &ingressRoute{http: r.http, https: r.https, key: key}
				defaultOwner = k
			} else {
				t.warn(kindIngress, ing.Namespace, ing.Name, status.EventRouteConflict,
					fmt.Sprintf("defaultBackend is ignored: Ingress %s/%s is older and already sets one", defaultOwner.Namespace, defaultOwner.Name))
			}
		}

		for ri := range ing.Spec.Rules {
			rule := &ing.Spec.Rules[ri]
			host := strings.ToLower(rule.Host)
			if host == "" {
				host = "*"
			} else if !validHostname(host) {
				t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidPath, fmt.Sprintf("rule %d: host %q is invalid; rule ignored", ri, rule.Host))
				continue
			}
			if rule.HTTP == nil {
				continue
			}
			for pi := range rule.HTTP.Paths {
				p := &rule.HTTP.Paths[pi]
				m, ok := t.ingressPath(ing, opts, ri, pi, p)
				if !ok {
					continue
				}
				ck := host + "\x00" + string(m.Type) + "\x00" + m.Value
				if owner, ok := taken[ck]; ok {
					if owner != k {
						t.warn(kindIngress, ing.Namespace, ing.Name, status.EventRouteConflict,
							fmt.Sprintf("host %q path %s %q is already served by the older Ingress %s/%s", host, m.Type, m.Value, owner.Namespace, owner.Name))
					}
					continue
				}
				taken[ck] = k
				r := t.ingressRoute(ing, opts, &p.Backend, fmt.Sprintf("ingress/%s/%s:%d.%d", ing.Namespace, ing.Name, ri, pi), m, host)
				r.host = host
				r.single = strings.HasPrefix(host, "*.")
				r.key = matchKey(&r.http.Match, false)
				r.key.created, r.key.namespace, r.key.name, r.key.kind = ing.CreationTimestamp, ing.Namespace, ing.Name, kindIngress
				r.key.rule, r.key.match = ri, pi
				r.key.finalize()
				routes = append(routes, r)
			}
		}
	}

	for i := range routes {
		r := &routes[i]
		for _, pair := range []struct {
			lb *listenerBuilder
			rt *snapshot.Route
		}{{lbHTTP, r.http}, {lbHTTPS, r.https}} {
			vh := pair.lb.vhost(r.host)
			vh.single = r.single
			vh.entries = append(vh.entries, entry{route: pair.rt, key: &r.key})
			sb.use(pair.rt)
		}
	}
	if defaultRoute != nil {
		for _, pair := range []struct {
			lb *listenerBuilder
			rt *snapshot.Route
		}{{lbHTTP, defaultRoute.http}, {lbHTTPS, defaultRoute.https}} {
			pair.lb.vhost("*")
			for _, vh := range pair.lb.vhosts {
				vh.entries = append(vh.entries, entry{route: pair.rt, key: &defaultRoute.key})
			}
			sb.use(pair.rt)
		}
	}
	if len(lbHTTPS.sni) > 0 {
		sb.listeners[ingressHTTPSPort] = lbHTTPS
	}
}

// ingressPath converts one Ingress path to a snapshot path match.
func (t *translator) ingressPath(ing *networkingv1.Ingress, opts *ingressOpts, ri, pi int, p *networkingv1.HTTPIngressPath) (*snapshot.PathMatch, bool) {
	typ := networkingv1.PathTypeImplementationSpecific
	if p.PathType != nil {
		typ = *p.PathType
	}
	val := p.Path
	if val == "" {
		val = "/"
	}
	bad := func(msg string) (*snapshot.PathMatch, bool) {
		t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidPath, fmt.Sprintf("rule %d path %d %q: %s; path ignored", ri, pi, p.Path, msg))
		return nil, false
	}
	if typ == networkingv1.PathTypeImplementationSpecific && opts.useRegex {
		if _, err := regexp.Compile(val); err != nil {
			return bad("invalid regular expression: " + err.Error())
		}
		return &snapshot.PathMatch{Type: snapshot.PathRegularExpression, Value: val}, true
	}
	if !strings.HasPrefix(val, "/") {
		return bad("path must start with /")
	}
	switch typ {
	case networkingv1.PathTypeExact:
		return &snapshot.PathMatch{Type: snapshot.PathExact, Value: val}, true
	case networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific:
		if len(val) > 1 {
			val = strings.TrimRight(val, "/")
			if val == "" {
				val = "/"
			}
		}
		return &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: val}, true
	}
	return bad(fmt.Sprintf("pathType %q is not supported", typ))
}

// ingressRoute builds the HTTP and HTTPS variants of one Ingress path.
func (t *translator) ingressRoute(ing *networkingv1.Ingress, opts *ingressOpts, b *networkingv1.IngressBackend, id string, m *snapshot.PathMatch, host string) ingressRoute {
	r := snapshot.Route{ID: id, RequestHeaders: opts.req, ResponseHeaders: opts.resp, MaxRequestBodyBytes: opts.maxBody, AccessLogOff: opts.accessLogOff}
	r.Match.Path = m
	if opts.read != 0 || opts.send != 0 {
		r.Timeouts = &snapshot.Timeouts{UpstreamRead: opts.read, UpstreamSend: opts.send}
	}
	// "$n" references only make sense for regular expression paths.
	if opts.rewrite != "" && m != nil && (m.Type == snapshot.PathRegularExpression || !strings.Contains(opts.rewrite, "$")) {
		pm := &snapshot.PathModifier{Value: opts.rewrite}
		switch m.Type {
		case snapshot.PathRegularExpression:
			pm.Type = snapshot.ReplaceRegex
		case snapshot.PathExact:
			pm.Type = snapshot.ReplaceFullPath
		default:
			pm.Type = snapshot.ReplacePrefixMatch
		}
		r.Rewrite = &snapshot.URLRewrite{Path: pm}
	}
	if opts.redirect != nil {
		// redirect-* answers every request; the backend is not used.
	} else if set, ok := t.ingressBackend(ing, b); ok {
		r.Backends = []snapshot.Backend{{EndpointSet: set, Weight: 1}}
	} else {
		r.DirectResponse = &snapshot.DirectResponse{StatusCode: 503}
	}
	if opts.redirect != nil {
		r.Redirect = opts.redirect
		r.Backends, r.DirectResponse, r.Rewrite = nil, nil, nil
	}
	https := r
	http := r
	if opts.sslRedirect && opts.redirect == nil && (opts.tlsAll || opts.tlsHosts[host]) {
		http.Redirect = &snapshot.Redirect{Scheme: "https", StatusCode: opts.sslCode}
	}
	return ingressRoute{http: &http, https: &https}
}

// ingressBackend resolves a Service backend in the Ingress's namespace.
// A missing Service or port answers 503, like a Service without endpoints.
func (t *translator) ingressBackend(ing *networkingv1.Ingress, b *networkingv1.IngressBackend) (string, bool) {
	if b.Resource != nil || b.Service == nil {
		t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidBackend, "only Service backends are supported; answering 503")
		return "", false
	}
	svc := t.ix.services[nn{Namespace: ing.Namespace, Name: b.Service.Name}]
	if svc == nil {
		return "", false
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		if (b.Service.Port.Name != "" && sp.Name == b.Service.Port.Name) || (b.Service.Port.Name == "" && sp.Port == b.Service.Port.Number) {
			proto, ok := appProtocol(sp.AppProtocol, false)
			if !ok {
				proto = snapshot.AppProtocolHTTP
			}
			return t.endpointSet(svc, sp, proto), true
		}
	}
	return "", false
}
