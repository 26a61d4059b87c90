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
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/status"
)

type setKey struct {
	ns, name string
	port     int32
	udp      bool
}

// setName is the name of the endpoint set of k: made of k alone.
func (k setKey) setName() string {
	name := k.ns + "/" + k.name + ":" + strconv.Itoa(int(k.port))
	if k.udp {
		name += "/udp"
	}
	return name
}

type resolved struct {
	set         string
	reason, msg string
}

// resolveBackend resolves an HTTPRoute or GRPCRoute backendRef to an
// endpoint set name, or a ResolvedRefs reason.
func (t *translator) resolveBackend(fromNS, fromKind string, ref gwv1.BackendObjectReference, grpc bool) resolved {
	svc, sp, bad := t.servicePort(fromNS, fromKind, ref, corev1.ProtocolTCP)
	if bad != nil {
		return *bad
	}
	proto, ok := appProtocol(sp.AppProtocol, grpc)
	if !ok {
		return resolved{reason: string(gwv1.RouteReasonUnsupportedProtocol), msg: fmt.Sprintf("backendRef %s/%s: appProtocol %q is not supported", svc.Namespace, svc.Name, *sp.AppProtocol)}
	}
	return resolved{set: t.endpointSet(svc, sp, proto)}
}

// resolveStreamBackend resolves a TLSRoute, TCPRoute or UDPRoute backendRef
// to the endpoint set of the Service port of that number and protocol (TCP,
// or UDP for a UDPRoute). The stream carries whatever the port's
// appProtocol names.
func (t *translator) resolveStreamBackend(fromNS, fromKind string, ref gwv1.BackendObjectReference, proto corev1.Protocol) resolved {
	svc, sp, bad := t.servicePort(fromNS, fromKind, ref, proto)
	if bad != nil {
		return *bad
	}
	// The set is shared with HTTP routes of the same Service port, so it
	// carries the appProtocol they would give it; a stream ignores it.
	ap, ok := appProtocol(sp.AppProtocol, false)
	if !ok || proto == corev1.ProtocolUDP {
		ap = snapshot.AppProtocolHTTP
	}
	return resolved{set: t.endpointSet(svc, sp, ap)}
}

// servicePort finds the Service port a backendRef names: a core Service in
// the route's namespace or one a ReferenceGrant allows, and its port of that
// number and protocol. It returns the ResolvedRefs problem otherwise.
func (t *translator) servicePort(fromNS, fromKind string, ref gwv1.BackendObjectReference, proto corev1.Protocol) (*corev1.Service, *corev1.ServicePort, *resolved) {
	g, k := "", kindService
	if ref.Group != nil {
		g = string(*ref.Group)
	}
	if ref.Kind != nil {
		k = string(*ref.Kind)
	}
	ns := fromNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	desc := func() string { return "backendRef " + ns + "/" + string(ref.Name) }
	if g != "" || k != kindService {
		return nil, nil, &resolved{reason: status.ReasonInvalidKind, msg: fmt.Sprintf("%s: kind %s/%s is not supported; use a core Service", desc(), g, k)}
	}
	if ns != fromNS && !t.granted(gatewayGroup, fromKind, fromNS, "", kindService, ns, string(ref.Name)) {
		return nil, nil, &resolved{reason: status.ReasonRefNotPermitted, msg: desc() + ": no ReferenceGrant in namespace " + ns + " allows it"}
	}
	svc := t.ix.services[nn{Namespace: ns, Name: string(ref.Name)}]
	if svc == nil {
		return nil, nil, &resolved{reason: status.ReasonBackendNotFound, msg: desc() + ": Service not found"}
	}
	if ref.Port == nil {
		return nil, nil, &resolved{reason: status.ReasonBackendNotFound, msg: desc() + ": port is required"}
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		p := sp.Protocol
		if p == "" {
			p = corev1.ProtocolTCP
		}
		if sp.Port == int32(*ref.Port) && p == proto {
			return svc, sp, nil
		}
	}
	what := "port"
	if proto != corev1.ProtocolTCP {
		what = string(proto) + " port"
	}
	return nil, nil, &resolved{reason: status.ReasonBackendNotFound, msg: fmt.Sprintf("%s: Service has no %s %d", desc(), what, *ref.Port)}
}

func appProtocol(p *string, grpc bool) (snapshot.AppProtocol, bool) {
	v := ""
	if p != nil {
		v = *p
	}
	switch v {
	case "", "http", "HTTP", "https", "HTTPS":
		// https: HTTP/1.1; TLS to the backend comes from a
		// BackendTLSPolicy, not from the appProtocol.
		if grpc {
			return snapshot.AppProtocolH2C, true
		}
		return snapshot.AppProtocolHTTP, true
	case string(snapshot.AppProtocolH2C), "h2c", "grpc":
		return snapshot.AppProtocolH2C, true
	case string(snapshot.AppProtocolWS):
		if grpc {
			return "", false
		}
		return snapshot.AppProtocolWS, true
	}
	return "", false
}

// endpointSet builds (once) the ready endpoints of one Service port. The
// AppProtocol comes from the Service port; a GRPCRoute that is actually
// served upgrades a plain set to h2c for every user (see markH2C): gRPC
// servers speak only HTTP/2.
func (t *translator) endpointSet(svc *corev1.Service, sp *corev1.ServicePort, proto snapshot.AppProtocol) string {
	udp := sp.Protocol == corev1.ProtocolUDP
	sk := setKey{svc.Namespace, svc.Name, sp.Port, udp}
	name, ok := t.setNames[sk]
	if !ok {
		name = sk.setName()
		t.setNames[sk] = name
	}
	t.recordSet(svc, sp, proto, name)
	if t.set(name) != nil {
		return name
	}
	proto0 := proto
	if proto == snapshot.AppProtocolH2C && grpcOnly(sp.AppProtocol) {
		proto = snapshot.AppProtocolHTTP // upgraded by markH2C once served
	}
	es := t.scratch.newSet()
	es.Name, es.AppProtocol = name, proto
	t.applyTLSPolicy(es, svc, sp)
	t.applyBackendPolicy(es, svc.Namespace, svc.Name, sp.Name)
	src := endpointSource{service: key(&svc.ObjectMeta), portName: sp.Name, protocol: sp.Protocol}
	var e *memoEndpoints
	es.Endpoints, e = t.readyEndpoints(name, t.ix.slices[src.service], src)
	if e != nil {
		e.madeGen, e.madeProto, e.madeApp = e.gen, proto0, es.AppProtocol
	}
	t.endpointSets[name] = es
	t.recordSource(name, src)
	return name
}

// readyEndpoints lists the ready addresses of the slices of a Service
// for the Service port src names, sorted by address and port, each once.
func readyEndpoints(slices []*discoveryv1.EndpointSlice, src endpointSource) []snapshot.Endpoint {
	type ep struct {
		a string
		p int32
	}
	var out []snapshot.Endpoint
	seen := map[ep]bool{}
	for _, sl := range slices {
		if sl.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		port := int32(-1)
		for _, p := range sl.Ports {
			pn := ""
			if p.Name != nil {
				pn = *p.Name
			}
			if pn == src.portName && p.Port != nil && sameProtocol(p.Protocol, src.protocol) {
				port = *p.Port
				break
			}
		}
		if port < 1 || port > 65535 {
			continue
		}
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if net.ParseIP(a) == nil {
					continue
				}
				k := ep{a, port}
				if seen[k] {
					continue
				}
				seen[k] = true
				out = append(out, snapshot.Endpoint{Address: a, Port: port})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Address != out[j].Address {
			return out[i].Address < out[j].Address
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// sameProtocol compares an EndpointSlice port's protocol with a Service
// port's, unset meaning TCP on both.
func sameProtocol(a *corev1.Protocol, b corev1.Protocol) bool {
	pa := corev1.ProtocolTCP
	if a != nil && *a != "" {
		pa = *a
	}
	if b == "" {
		b = corev1.ProtocolTCP
	}
	return pa == b
}

// grpcOnly reports whether a Service port's appProtocol leaves the choice
// to the route kind.
func grpcOnly(p *string) bool {
	return p == nil || *p == "" || *p == "http" || *p == "HTTP"
}

// markH2C upgrades the endpoint sets a served GRPCRoute uses to h2c.
func (t *translator) markH2C(r *snapshot.Route) {
	for _, b := range r.Backends {
		t.upgradeH2C(b.EndpointSet)
	}
	for _, m := range r.Mirrors {
		t.upgradeH2C(m.EndpointSet)
	}
}

// upgradeH2C makes endpoint set name (if any) h2c.
func (t *translator) upgradeH2C(name string) {
	if es := t.set(name); es != nil && es.AppProtocol != snapshot.AppProtocolH2C {
		t.setToChange(name).AppProtocol = snapshot.AppProtocolH2C
	}
}

// backendSpec is one backendRef with its per-backend filters.
type backendSpec struct {
	ref       gwv1.BackendObjectReference
	weight    *int32
	req, resp *snapshot.HeaderModifier
}

// applyBackends resolves backendRefs into weighted backends; a rule with
// nothing to send to answers 500.
func (t *translator) applyBackends(cr *compiledRoute, base *snapshot.Route, refs []backendSpec) {
	valid := 0
	if len(refs) > 0 {
		base.Backends = make([]snapshot.Backend, 0, len(refs))
	}
	for _, bs := range refs {
		w := int32(1)
		if bs.weight != nil {
			w = *bs.weight
		}
		if w < 0 {
			cr.fail("backend weight %d is negative", w)
			continue
		}
		b := t.resolveBackend(cr.meta.Namespace, cr.kind, bs.ref, cr.kind == kindGRPCRoute)
		if b.reason != "" {
			cr.unresolved(b.reason, b.msg)
			if w > 0 {
				base.Backends = append(base.Backends, snapshot.Backend{Weight: w, Invalid: true})
			}
			continue
		}
		if w == 0 {
			continue
		}
		valid++
		base.Backends = append(base.Backends, snapshot.Backend{EndpointSet: b.set, Weight: w, RequestHeaders: bs.req, ResponseHeaders: bs.resp})
	}
	if valid == 0 {
		base.Backends = nil
		base.DirectResponse = &snapshot.DirectResponse{StatusCode: 500}
	}
}
