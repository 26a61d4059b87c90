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

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/portalloc"
)

// byteSource turns fuzz bytes into bounded choices; exhausted input
// yields zeros, so every byte string builds a valid object graph.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next() byte {
	if s.i >= len(s.b) {
		return 0
	}
	c := s.b[s.i]
	s.i++
	return c
}

func (s *byteSource) n(limit int) int { return int(s.next()) % limit }

func pick[T any](s *byteSource, xs ...T) T { return xs[s.n(len(xs))] }

var (
	fzNamespaces = []string{"default", "infra", "team-a", "team-b"}
	fzHosts      = []string{"", "*", "a.example.com", "*.example.com", "b.a.example.com", "*.a.example.com", "example.org", "UPPER.example.com", "bad host", "*.com"}
	fzPaths      = []string{"/", "/api", "/api/", "/api/v1", "", "nope", "/(bad", "/x/[a-z]+", ".*"}
	fzNames      = []string{"app", "web", "api", "missing", ""}
	fzPorts      = []int32{80, 443, 8080, 0, 70000, 53}
)

// structuredResources builds a cluster from fuzz bytes: classes, Gateways
// (shared and dedicated), listeners of every protocol, routes with every
// match, filter and backend shape, grants, Services with and without
// endpoints, Secrets valid and not, Ingresses with annotations.
func structuredResources(data []byte) *Resources {
	s := &byteSource{b: data}
	res := &Resources{}
	res.GatewayClasses = append(res.GatewayClasses, &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "coxswain"},
		Spec:       gwv1.GatewayClassSpec{ControllerName: pick(s, gwv1.GatewayController(names.ControllerName), "other/controller")},
	})
	if s.n(3) == 0 {
		ns := gwv1.Namespace(pick(s, fzNamespaces...))
		res.GatewayClasses[0].Spec.ParametersRef = &gwv1.ParametersReference{Group: gwv1.Group(pick(s, names.ParametersGroup, "x")), Kind: gwv1.Kind(pick(s, names.ParametersKind, "Y")), Name: pick(s, "p", "q"), Namespace: &ns}
	}
	for _, ns := range fzNamespaces {
		fzNamespace(s, res, ns)
	}
	for g := s.n(4); g > 0; g-- {
		res.Gateways = append(res.Gateways, fzGateway(s, g))
	}
	for r := s.n(8); r > 0; r-- {
		res.HTTPRoutes = append(res.HTTPRoutes, fzHTTPRoute(s, r))
	}
	if s.n(2) == 0 {
		res.IngressClasses = append(res.IngressClasses, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "coxswain",
			Annotations: map[string]string{AnnotationDefaultClass: pick(s, "true", "false")}}, Spec: networkingv1.IngressClassSpec{Controller: names.ControllerName}})
	}
	for i := s.n(4); i > 0; i-- {
		res.Ingresses = append(res.Ingresses, fzIngress(s, i))
	}
	for a := s.n(3); a > 0; a-- {
		res.InternalPorts = append(res.InternalPorts, portalloc.Assignment{Key: portalloc.Key{Namespace: pick(s, fzNamespaces...), Name: fmt.Sprintf("gw%d", s.n(4)), Port: pick(s, fzPorts...)}, Internal: pick(s, int32(30000), 30001, 1)})
	}
	return res
}

// fzNamespace adds a Namespace with its Services, Secret and grants.
func fzNamespace(s *byteSource, res *Resources, ns string) {
	res.Namespaces = append(res.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": pick(s, "a", "b")}}})
	if s.n(2) == 0 {
		res.GatewayParameters = append(res.GatewayParameters, &gatewayv1alpha1.CoxswainGatewayParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}})
	}
	for _, name := range fzNames[:3] {
		fzService(s, res, ns, name)
	}
	res.Secrets = append(res.Secrets, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
		Type:       pick(s, corev1.SecretTypeTLS, corev1.SecretTypeOpaque),
		Data:       map[string][]byte{corev1.TLSCertKey: pick(s, testFile("tls.crt"), []byte("junk")), corev1.TLSPrivateKeyKey: testFile("tls.key")},
	})
	if s.n(2) == 0 {
		res.ReferenceGrants = append(res.ReferenceGrants, &gwv1beta1.ReferenceGrant{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"},
			Spec: gwv1beta1.ReferenceGrantSpec{
				From: []gwv1beta1.ReferenceGrantFrom{{Group: gatewayGroup, Kind: gwv1.Kind(pick(s, kindHTTPRoute, kindGRPCRoute, kindGateway)), Namespace: gwv1.Namespace(pick(s, fzNamespaces...))}},
				To:   []gwv1beta1.ReferenceGrantTo{{Kind: gwv1.Kind(pick(s, kindService, kindSecret))}},
			},
		})
	}
}

// fzService maybe adds a Service with its EndpointSlice.
func fzService(s *byteSource, res *Resources, ns, name string) {
	if s.n(4) == 0 {
		return
	}
	appProto := pick(s, "", "kubernetes.io/h2c", "kubernetes.io/ws", "https")
	sp := corev1.ServicePort{Name: pick(s, "http", ""), Port: pick(s, fzPorts...)}
	if appProto != "" {
		sp.AppProtocol = &appProto
	}
	res.Services = append(res.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{sp}}})
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: pick(s, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeFQDN),
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(sp.Name), Port: ptr.To(pick(s, int32(8080), 0, -1, 65536))}},
	}
	for e := s.n(4); e > 0; e-- {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{pick(s, "10.0.0.1", "10.0.0.2", "fd00::1", "not-an-ip")},
			Conditions: discoveryv1.EndpointConditions{Ready: pick(s, ptr.To(true), ptr.To(false), nil)},
		})
	}
	res.EndpointSlices = append(res.EndpointSlices, sl)
}

// fzGateway builds Gateway number g with its listeners.
func fzGateway(s *byteSource, g int) *gwv1.Gateway {
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: pick(s, fzNamespaces...), Name: fmt.Sprintf("gw%d", g), Generation: int64(s.n(3))},
		Spec: gwv1.GatewaySpec{GatewayClassName: pick(s, gwv1.ObjectName("coxswain"), "nope")}}
	if s.n(3) == 0 {
		gw.Spec.Infrastructure = &gwv1.GatewayInfrastructure{ParametersRef: &gwv1.LocalParametersReference{Group: names.ParametersGroup, Kind: names.ParametersKind, Name: pick(s, "p", "q")}}
	}
	for l := s.n(5) + 1; l > 0; l-- {
		ln := gwv1.Listener{Name: gwv1.SectionName(fmt.Sprintf("l%d", s.n(4))), Port: gwv1.PortNumber(pick(s, fzPorts...)),
			Protocol: pick(s, gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType, gwv1.TCPProtocolType)}
		if h := pick(s, fzHosts...); h != "" {
			ln.Hostname = ptr.To(gwv1.Hostname(h))
		}
		if s.n(2) == 0 {
			ref := gwv1.SecretObjectReference{Name: "tls"}
			if s.n(2) == 0 {
				ref.Namespace = ptr.To(gwv1.Namespace(pick(s, fzNamespaces...)))
			}
			ln.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{ref}}
		}
		from := pick(s, gwv1.NamespacesFromAll, gwv1.NamespacesFromSame, gwv1.NamespacesFromSelector)
		ln.AllowedRoutes = &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from, Selector: pick(s, nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})}}
		if s.n(3) == 0 {
			ln.AllowedRoutes.Kinds = []gwv1.RouteGroupKind{{Kind: pick(s, gwv1.Kind(kindHTTPRoute), kindGRPCRoute, "TCPRoute")}}
		}
		gw.Spec.Listeners = append(gw.Spec.Listeners, ln)
	}
	return gw
}

// fzHTTPRoute builds HTTPRoute number r with its parentRefs, hostnames and rules.
func fzHTTPRoute(s *byteSource, r int) *gwv1.HTTPRoute {
	hr := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: pick(s, fzNamespaces...), Name: fmt.Sprintf("r%d", r),
		CreationTimestamp: metav1.Unix(int64(s.n(3)), 0)}}
	for p := s.n(3) + 1; p > 0; p-- {
		pr := gwv1.ParentReference{Name: gwv1.ObjectName(fmt.Sprintf("gw%d", s.n(4)))}
		if s.n(2) == 0 {
			pr.Namespace = ptr.To(gwv1.Namespace(pick(s, fzNamespaces...)))
		}
		if s.n(3) == 0 {
			pr.SectionName = ptr.To(gwv1.SectionName(fmt.Sprintf("l%d", s.n(4))))
		}
		if s.n(3) == 0 {
			pr.Port = ptr.To(gwv1.PortNumber(pick(s, fzPorts...)))
		}
		hr.Spec.ParentRefs = append(hr.Spec.ParentRefs, pr)
	}
	for h := s.n(3); h > 0; h-- {
		hr.Spec.Hostnames = append(hr.Spec.Hostnames, gwv1.Hostname(pick(s, fzHosts...)))
	}
	for ru := s.n(3) + 1; ru > 0; ru-- {
		hr.Spec.Rules = append(hr.Spec.Rules, fzHTTPRule(s))
	}
	return hr
}

// fzHTTPRule builds a rule with every match, filter and backend shape.
func fzHTTPRule(s *byteSource) gwv1.HTTPRouteRule {
	rule := gwv1.HTTPRouteRule{}
	for m := s.n(3); m > 0; m-- {
		pt := pick(s, gwv1.PathMatchExact, gwv1.PathMatchPathPrefix, gwv1.PathMatchRegularExpression)
		rule.Matches = append(rule.Matches, gwv1.HTTPRouteMatch{
			Path:    &gwv1.HTTPPathMatch{Type: &pt, Value: ptr.To(pick(s, fzPaths...))},
			Method:  pick(s, nil, ptr.To(gwv1.HTTPMethodGet)),
			Headers: pick(s, nil, []gwv1.HTTPHeaderMatch{{Name: "x", Value: pick(s, "a", "(")}}),
		})
	}
	switch s.n(6) {
	case 0:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
			Scheme: pick(s, nil, ptr.To("https"), ptr.To("ftp")), StatusCode: pick(s, nil, ptr.To(301), ptr.To(200)),
			Path: pick(s, nil, &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/x")})}})
	case 1:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
			Path: &gwv1.HTTPPathModifier{Type: pick(s, gwv1.PrefixMatchHTTPPathModifier, gwv1.FullPathHTTPPathModifier), ReplacePrefixMatch: ptr.To("/y"), ReplaceFullPath: ptr.To("/z")}}})
	case 2:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
			BackendRef: gwv1.BackendObjectReference{Name: gwv1.ObjectName(pick(s, fzNames...)), Port: ptr.To(gwv1.PortNumber(pick(s, fzPorts...)))},
			Percent:    pick(s, nil, ptr.To(int32(50)), ptr.To(int32(0)), ptr.To(int32(100))),
			Fraction:   pick(s, nil, &gwv1.Fraction{Numerator: int32(s.n(5)) - 1, Denominator: ptr.To(int32(s.n(5)) - 1)})}})
	case 3:
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
			Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(pick(s, "X-A", "bad name", "")), Value: pick(s, "v", "a\r\nb")}}}})
	}
	for b := s.n(4); b > 0; b-- {
		br := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
			Name: gwv1.ObjectName(pick(s, fzNames...)), Port: pick(s, nil, ptr.To(gwv1.PortNumber(pick(s, fzPorts...))))},
			Weight: pick(s, nil, ptr.To(int32(0)), ptr.To(int32(-1)), ptr.To(int32(7)))}}
		if s.n(3) == 0 {
			br.Namespace = ptr.To(gwv1.Namespace(pick(s, fzNamespaces...)))
		}
		if s.n(5) == 0 {
			br.Kind = ptr.To(gwv1.Kind("Bucket"))
		}
		rule.BackendRefs = append(rule.BackendRefs, br)
	}
	return rule
}

// fzIngress builds Ingress number i with annotations, TLS, a default backend and rules.
func fzIngress(s *byteSource, i int) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: pick(s, fzNamespaces...), Name: fmt.Sprintf("i%d", i),
		CreationTimestamp: metav1.Unix(int64(s.n(3)), 0), Annotations: map[string]string{}}}
	for a := s.n(4); a > 0; a-- {
		ing.Annotations["ingress.coxswain-labs.dev/"+pick(s, annUseRegex, annRewriteTarget, annSSLRedirect, annMaxBodySize, annRequestHeaderSet, annRedirectPort, annRedirectScheme, annReadTimeout)] =
			pick(s, "true", "/$1", "10m", "X: y", "443", "https", "1s", "bad value\n")
	}
	if s.n(2) == 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{pick(s, fzHosts...)}, SecretName: pick(s, "tls", "none")}}
	}
	if s.n(3) == 0 {
		ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: pick(s, fzNames...), Port: networkingv1.ServiceBackendPort{Number: pick(s, fzPorts...)}}}
	}
	for r := s.n(3); r > 0; r-- {
		rule := networkingv1.IngressRule{Host: pick(s, fzHosts...), IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}}
		for p := s.n(3) + 1; p > 0; p-- {
			pt := pick(s, networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific)
			rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{Path: pick(s, fzPaths...), PathType: &pt,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: pick(s, fzNames...), Port: networkingv1.ServiceBackendPort{Number: pick(s, fzPorts...)}}}})
		}
		ing.Spec.Rules = append(ing.Spec.Rules, rule)
	}
	return ing
}
