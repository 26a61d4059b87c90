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

package admin

import (
	"net"
	"strconv"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// RoutingView is /api/v1/routing: per scope, what its proxies are told to
// serve, with every route's source object and its backends' endpoints.
type RoutingView struct {
	Revision uint64         `json:"revision"`
	Scopes   []ScopeRouting `json:"scopes"`
}

// ScopeRouting is one snapshot.
type ScopeRouting struct {
	Scope     string                `json:"scope"`
	Gateways  []snapshot.GatewayRef `json:"gateways,omitempty"`
	Listeners []ListenerRouting     `json:"listeners"`
}

// ListenerRouting is one bound port.
type ListenerRouting struct {
	Name         string            `json:"name"`
	Port         int32             `json:"port"`
	ExternalPort int32             `json:"externalPort,omitempty"`
	Protocol     string            `json:"protocol"`
	VirtualHosts []VirtualHostView `json:"virtualHosts,omitempty"`
	StreamRoutes []RouteView       `json:"streamRoutes,omitempty"`
}

// VirtualHostView is one hostname of an HTTP(S) listener.
type VirtualHostView struct {
	Hostname string      `json:"hostname"`
	Routes   []RouteView `json:"routes"`
}

// RouteView is one compiled route.
type RouteView struct {
	ID     string    `json:"id"`
	Source ObjectRef `json:"source"`
	// Match is a one-line summary ("PathPrefix /api GET header:x-env"),
	// or the SNI of a stream route.
	Match string `json:"match,omitempty"`
	// Action is "forward", "redirect", "direct <code>", "passthrough" or
	// "terminate".
	Action   string        `json:"action"`
	Policies []string      `json:"policies,omitempty"`
	Backends []BackendView `json:"backends,omitempty"`
}

// BackendView is one weighted backend and the endpoints its proxies use.
type BackendView struct {
	Service     string   `json:"service,omitempty"`
	EndpointSet string   `json:"endpointSet,omitempty"`
	Weight      int32    `json:"weight"`
	Invalid     bool     `json:"invalid,omitempty"`
	Endpoints   []string `json:"endpoints"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is "Kind ns/name".
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// routeKinds maps the first segment of a route ID to its kind.
var routeKinds = map[string]string{
	"httproute": "HTTPRoute", "grpcroute": "GRPCRoute", "tlsroute": "TLSRoute",
	"tcproute": "TCPRoute", "udproute": "UDPRoute", "ingress": "Ingress",
}

// routeSource reads the source object out of a route ID
// ("httproute/<ns>/<name>:<rule>").
func routeSource(id string) ObjectRef {
	kind, rest, ok := strings.Cut(id, "/")
	if !ok {
		return ObjectRef{Kind: "Unknown", Name: id}
	}
	ns, rest, _ := strings.Cut(rest, "/")
	name, _, _ := strings.Cut(rest, ":")
	k := routeKinds[kind]
	if k == "" {
		k = kind
	}
	return ObjectRef{Kind: k, Namespace: ns, Name: name}
}

// serviceOf is "ns/name" of an endpoint set "<ns>/<service>:<port>".
func serviceOf(endpointSet string) string {
	if i := strings.LastIndexByte(endpointSet, ':'); i > 0 {
		return endpointSet[:i]
	}
	return endpointSet
}

// Routing builds the routing view; gateway ("ns/name", optional) keeps
// only the scopes serving that Gateway and, in them, its listeners.
func Routing(in Input, gateway string) RoutingView {
	v := RoutingView{Revision: in.Revision, Scopes: []ScopeRouting{}}
	if in.Result == nil {
		return v
	}
	for _, s := range in.Result.Snapshots {
		if gateway != "" && !servesGateway(s, gateway) {
			continue
		}
		sets := map[string]*snapshot.EndpointSet{}
		for _, es := range s.EndpointSets {
			sets[es.Name] = es
		}
		sr := ScopeRouting{Scope: s.Scope.String(), Gateways: s.Gateways, Listeners: []ListenerRouting{}}
		for _, l := range s.Listeners {
			if gateway != "" && !listenerOf(l, gateway) {
				continue
			}
			sr.Listeners = append(sr.Listeners, listenerRouting(l, sets))
		}
		v.Scopes = append(v.Scopes, sr)
	}
	return v
}

func servesGateway(s *snapshot.Snapshot, gateway string) bool {
	for _, g := range s.Gateways {
		if g.Namespace+"/"+g.Name == gateway {
			return true
		}
	}
	return false
}

// listenerOf reports whether a listener belongs to the Gateway: its name
// is "gateway/<ns>/<name>/<port>".
func listenerOf(l snapshot.Listener, gateway string) bool {
	return strings.HasPrefix(l.Name, "gateway/"+gateway+"/")
}

func listenerRouting(l snapshot.Listener, sets map[string]*snapshot.EndpointSet) ListenerRouting {
	lr := ListenerRouting{Name: l.Name, Port: l.Port, ExternalPort: l.ExternalPort, Protocol: string(l.Protocol)}
	for _, vh := range l.VirtualHosts {
		vv := VirtualHostView{Hostname: vh.Hostname, Routes: []RouteView{}}
		for i := range vh.Routes {
			vv.Routes = append(vv.Routes, httpRouteView(&vh.Routes[i], sets))
		}
		lr.VirtualHosts = append(lr.VirtualHosts, vv)
	}
	for _, sr := range l.StreamRoutes {
		action := "forward"
		if l.Protocol == snapshot.ProtocolTLS {
			action = "passthrough"
			if sr.Terminate {
				action = "terminate"
			}
		}
		lr.StreamRoutes = append(lr.StreamRoutes, RouteView{
			ID: sr.ID, Source: routeSource(sr.ID), Match: sr.Hostname, Action: action, Backends: backendViews(sr.Backends, sets),
		})
	}
	return lr
}

func httpRouteView(r *snapshot.Route, sets map[string]*snapshot.EndpointSet) RouteView {
	rv := RouteView{ID: r.ID, Source: routeSource(r.ID), Match: matchSummary(r.Match), Action: "forward", Backends: backendViews(r.Backends, sets)}
	switch {
	case r.Redirect != nil:
		rv.Action = "redirect"
	case r.DirectResponse != nil:
		rv.Action = "direct " + strconv.Itoa(r.DirectResponse.StatusCode)
	}
	for _, p := range []struct {
		on   bool
		name string
	}{
		{r.IPAccess != nil, "IpAccessControl"}, {r.RateLimit != nil, "RateLimit"}, {r.BasicAuth != nil, "BasicAuth"},
		{r.JWT != nil, "JwtAuth"}, {r.ExtAuth != nil, "CoxswainExternalAuth"}, {r.Compression != nil, "Compression"},
		{r.MaxRequestBodyBytes > 0, "RequestSizeLimit"}, {r.Retry != nil, "Retry"}, {r.CORS != nil, "CORS"},
	} {
		if p.on {
			rv.Policies = append(rv.Policies, p.name)
		}
	}
	return rv
}

func matchSummary(m snapshot.Match) string {
	var parts []string
	if m.Path != nil {
		parts = append(parts, string(m.Path.Type)+" "+m.Path.Value)
	}
	if m.Method != "" {
		parts = append(parts, m.Method)
	}
	for _, h := range m.Headers {
		parts = append(parts, "header:"+h.Name)
	}
	for _, q := range m.QueryParams {
		parts = append(parts, "query:"+q.Name)
	}
	return strings.Join(parts, " ")
}

func backendViews(bs []snapshot.Backend, sets map[string]*snapshot.EndpointSet) []BackendView {
	out := make([]BackendView, 0, len(bs))
	for _, b := range bs {
		bv := BackendView{EndpointSet: b.EndpointSet, Weight: b.Weight, Invalid: b.Invalid, Endpoints: []string{}}
		if b.EndpointSet != "" {
			bv.Service = serviceOf(b.EndpointSet)
		}
		if es := sets[b.EndpointSet]; es != nil {
			for _, e := range es.Endpoints {
				bv.Endpoints = append(bv.Endpoints, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
			}
		}
		out = append(out, bv)
	}
	return out
}
