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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// ingressBuild is the state of one translation of every Ingress of our
// classes into the shared pool's two Ingress listeners.
type ingressBuild struct {
	t           *translator
	sb          *scopeBuilder
	http, https *listenerBuilder
	sniSeen     map[snapshot.SNICertificate]bool
	// taken is the Ingress (the oldest) serving each host and path.
	taken        map[string]nn
	routes       []ingressRoute
	defaultRoute *ingressRoute
	defaultOwner nn
	// hostCA is the client certificate validation of each TLS host, from
	// the oldest Ingress with auth-tls-secret serving it.
	hostCA map[string]*snapshot.ClientValidation
}

// processIngresses translates every Ingress of our classes, oldest first
// (the oldest wins a host and path), into the shared pool.
func (t *translator) processIngresses() {
	classes, defaults := t.ingressClasses()
	if len(classes) == 0 {
		return
	}
	b := t.newIngressBuild()
	lbStatus := t.ingressLoadBalancer()
	seen := map[nn]bool{}
	for _, ing := range olderIngressesFirst(t.res.Ingresses) {
		k := key(&ing.ObjectMeta)
		if seen[k] {
			continue
		}
		seen[k] = true
		ic := classes[ingressClassName(ing, defaults)]
		if ic == nil {
			continue
		}
		opts := t.ingressOptions(ing, t.ingressParams(ic))
		t.out.Ingresses = append(t.out.Ingresses, IngressStatus{NamespacedName: k, LoadBalancer: lbStatus})
		b.addTLS(ing, opts)
		b.addDefaultBackend(ing, opts)
		b.addRules(ing, opts)
	}
	b.emit()
}

// ingressClasses is our IngressClasses by name, and the names of those
// marked default, sorted.
func (t *translator) ingressClasses() (map[string]*networkingv1.IngressClass, []string) {
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
	sort.Strings(defaults)
	return classes, defaults
}

// ingressClassName is the class an Ingress asks for: spec.ingressClassName,
// else the legacy annotation, else the first default class.
func ingressClassName(ing *networkingv1.Ingress, defaults []string) string {
	switch {
	case ing.Spec.IngressClassName != nil:
		return *ing.Spec.IngressClassName
	case ing.Annotations[AnnotationIngressClass] != "":
		return ing.Annotations[AnnotationIngressClass]
	case len(defaults) > 0:
		return defaults[0]
	}
	return ""
}

// olderIngressesFirst is the named Ingresses, oldest first.
func olderIngressesFirst(all []*networkingv1.Ingress) []*networkingv1.Ingress {
	ings := make([]*networkingv1.Ingress, 0, len(all))
	for _, ing := range all {
		if ing != nil && named(&ing.ObjectMeta) {
			ings = append(ings, ing)
		}
	}
	sort.SliceStable(ings, func(i, j int) bool { return olderFirst(&ings[i].ObjectMeta, &ings[j].ObjectMeta) })
	return ings
}

// newIngressBuild starts the Ingress listeners: HTTP on 80 in the shared
// pool now, HTTPS on 443 once it has a certificate (see emit).
func (t *translator) newIngressBuild() *ingressBuild {
	sb := t.scope(snapshot.SharedPool())
	b := &ingressBuild{
		t:       t,
		sb:      sb,
		http:    sb.listener(ingressHTTPPort, "ingress/80", snapshot.ProtocolHTTP, 0),
		https:   &listenerBuilder{l: snapshot.Listener{Name: "ingress/443", Port: ingressHTTPSPort, Protocol: snapshot.ProtocolHTTPS}, vhosts: map[string]*vhostBuilder{}},
		sniSeen: map[snapshot.SNICertificate]bool{},
		taken:   map[string]nn{},
		hostCA:  map[string]*snapshot.ClientValidation{},
	}
	if ct := t.ingressClientTraffic(); ct != nil {
		b.http.l.ClientTraffic, b.https.l.ClientTraffic = ct, ct
	}
	return b
}

// addTLS adds the certificates of an Ingress's tls entries to the HTTPS
// listener and records in opts the hosts they cover (for ssl-redirect).
func (b *ingressBuild) addTLS(ing *networkingv1.Ingress, opts *ingressOpts) {
	for _, tl := range ing.Spec.TLS {
		if tl.SecretName == "" {
			continue
		}
		cert, err := b.t.certificate(ing.Namespace, tl.SecretName)
		if err != nil {
			b.t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidTLSSecret,
				fmt.Sprintf("tls secret %s/%s: %v; hosts %v are not served over HTTPS by it", ing.Namespace, tl.SecretName, err, tl.Hosts))
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
			if opts.clientCA != nil && b.hostCA[h] == nil {
				b.hostCA[h] = opts.clientCA
			}
			sc := snapshot.SNICertificate{Hostname: h, Certificate: cert}
			if !b.sniSeen[sc] {
				b.sniSeen[sc] = true
				b.https.sni = append(b.https.sni, sc)
				b.sb.certs[cert] = true
			}
		}
	}
}

// addDefaultBackend compiles an Ingress's defaultBackend; only the oldest
// Ingress's is served.
func (b *ingressBuild) addDefaultBackend(ing *networkingv1.Ingress, opts *ingressOpts) {
	db := ing.Spec.DefaultBackend
	if db == nil {
		return
	}
	r := b.t.ingressRoute(ing, opts, db, fmt.Sprintf("ingress/%s/%s:default", ing.Namespace, ing.Name), nil, "*")
	if b.defaultRoute != nil {
		b.t.warn(kindIngress, ing.Namespace, ing.Name, status.EventRouteConflict,
			fmt.Sprintf("defaultBackend is ignored: Ingress %s/%s is older and already sets one", b.defaultOwner.Namespace, b.defaultOwner.Name))
		return
	}
	last := precRank{lastResort: true}.key(metav1.Time{}, "", "", "", 0, 0)
	b.defaultRoute = &ingressRoute{http: r.http, https: r.https, key: last}
	b.defaultOwner = key(&ing.ObjectMeta)
}

// addRules compiles every path of an Ingress's rules; a host and path an
// older Ingress serves is left to it.
func (b *ingressBuild) addRules(ing *networkingv1.Ingress, opts *ingressOpts) {
	for ri := range ing.Spec.Rules {
		rule := &ing.Spec.Rules[ri]
		host := strings.ToLower(rule.Host)
		if host == "" {
			host = "*"
		} else if !validHostname(host) {
			b.t.warn(kindIngress, ing.Namespace, ing.Name, status.EventInvalidPath, fmt.Sprintf("rule %d: host %q is invalid; rule ignored", ri, rule.Host))
			continue
		}
		if rule.HTTP == nil {
			continue
		}
		for pi := range rule.HTTP.Paths {
			b.addPath(ing, opts, host, ri, pi, &rule.HTTP.Paths[pi])
		}
	}
}

// addPath compiles path pi of rule ri of an Ingress, for host.
func (b *ingressBuild) addPath(ing *networkingv1.Ingress, opts *ingressOpts, host string, ri, pi int, p *networkingv1.HTTPIngressPath) {
	m, ok := b.t.ingressPath(ing, opts, ri, pi, p)
	if !ok {
		return
	}
	k := key(&ing.ObjectMeta)
	ck := host + "\x00" + string(m.Type) + "\x00" + m.Value
	if owner, ok := b.taken[ck]; ok {
		if owner != k {
			b.t.warn(kindIngress, ing.Namespace, ing.Name, status.EventRouteConflict,
				fmt.Sprintf("host %q path %s %q is already served by the older Ingress %s/%s", host, m.Type, m.Value, owner.Namespace, owner.Name))
		}
		return
	}
	b.taken[ck] = k
	r := b.t.ingressRoute(ing, opts, &p.Backend, fmt.Sprintf("ingress/%s/%s:%d.%d", ing.Namespace, ing.Name, ri, pi), m, host)
	r.host = host
	r.single = strings.HasPrefix(host, "*.")
	r.key = matchRank(&r.http.Match, false).key(ing.CreationTimestamp, ing.Namespace, ing.Name, kindIngress, ri, pi)
	b.routes = append(b.routes, r)
}

// emit puts every compiled path, then the defaultBackend (last in every
// virtual host), into both listeners; the HTTPS listener is served only
// with a certificate.
func (b *ingressBuild) emit() {
	for i := range b.routes {
		r := &b.routes[i]
		b.addEntry(b.http, r.host, r.single, r.http, &r.key)
		b.addEntry(b.https, r.host, r.single, r.https, &r.key)
	}
	if d := b.defaultRoute; d != nil {
		b.addDefault(b.http, d.http, &d.key)
		b.addDefault(b.https, d.https, &d.key)
	}
	for i := range b.https.sni {
		if cv := b.hostCA[b.https.sni[i].Hostname]; cv != nil {
			b.https.sni[i].ClientValidation = cv
		}
	}
	if len(b.https.sni) > 0 {
		b.sb.listeners[snapshot.ListenerKey(&b.https.l)] = b.https
	}
}

// addEntry adds one compiled path to a listener's virtual host for host.
func (b *ingressBuild) addEntry(lb *listenerBuilder, host string, single bool, rt *snapshot.Route, k *precKey) {
	vh := lb.vhost(host)
	vh.single = single
	vh.entries = append(vh.entries, entry{route: rt, key: k})
	b.sb.use(rt)
}

// addDefault adds the defaultBackend route to every virtual host of a
// listener, creating "*" if need be.
func (b *ingressBuild) addDefault(lb *listenerBuilder, rt *snapshot.Route, k *precKey) {
	lb.vhost("*")
	for _, vh := range lb.vhosts {
		vh.entries = append(vh.entries, entry{route: rt, key: k})
	}
	b.sb.use(rt)
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
		return &snapshot.PathMatch{Type: snapshot.PathPrefix, Value: trimPathPrefix(val)}, true
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
		// redirect-* answers every request: the backend is not used and
		// nothing is rewritten.
		r.Redirect, r.Rewrite = opts.redirect, nil
	} else if set, ok := t.ingressBackend(ing, b); ok {
		r.Backends = []snapshot.Backend{{EndpointSet: set, Weight: 1}}
	} else {
		r.DirectResponse = &snapshot.DirectResponse{StatusCode: 503}
	}
	for _, apply := range opts.policies {
		apply(&r)
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
