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
	"strings"
	"testing"
	"time"

	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// viewsInput is a Gateway with two listeners, a good HTTPRoute to a
// Service with one ready endpoint, and a route whose backend Service does
// not exist; one proxy acked generation 1 and refuses the next snapshot.
const viewsInput = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: coxswain}
spec: {controllerName: coxswain-labs.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: apps, generation: 1}
spec:
  gatewayClassName: coxswain
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - {name: other, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: good, namespace: apps}
spec:
  parentRefs: [{name: web, sectionName: http}]
  hostnames: [good.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}, method: GET}]
    backendRefs: [{name: api, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: apps}
spec:
  parentRefs: [{name: web}]
  hostnames: [broken.example.com]
  rules:
  - backendRefs: [{name: missing, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: apps}
spec:
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-1
  namespace: apps
  labels: {kubernetes.io/service-name: api}
addressType: IPv4
ports: [{port: 8080}]
endpoints:
- addresses: [10.1.0.7]
  conditions: {ready: true}
`

func viewsFixture(t *testing.T) Input {
	t.Helper()
	res, err := translator.Decode([]byte(viewsInput), translator.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := translator.Translate(res)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	acked := now.Add(-time.Minute)
	return Input{
		Result: out, Revision: 7, Now: now, Leader: true, Discovery: true,
		Proxies: []discovery.Proxy{{
			NodeID: "proxy-a", Scope: "shared", AckedVersion: "v1", LastAck: &acked, SVIDExpiry: now.Add(time.Hour),
			Gateways: []snapshot.GatewayRef{{Namespace: "apps", Name: "web", Generation: 1}},
			Rejected: &discovery.ProxyRejection{Version: "v2", Detail: "bind 80: address already in use"},
		}},
		DataPlane: func(string, string, int64) discovery.GatewayState {
			return discovery.GatewayState{Published: true, Scope: snapshot.SharedPool(), Proxies: 1, Ready: 0}
		},
	}
}

func TestRoutingNamesSourcesAndEndpoints(t *testing.T) {
	v := Routing(viewsFixture(t), "apps/web")
	var found bool
	for _, s := range v.Scopes {
		for _, l := range s.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, r := range vh.Routes {
					if r.Source != (ObjectRef{Kind: "HTTPRoute", Namespace: "apps", Name: "good"}) {
						continue
					}
					found = true
					if vh.Hostname != "good.example.com" || r.Match != "PathPrefix /api GET" || len(r.Backends) != 1 ||
						r.Backends[0].Service != "apps/api" || strings.Join(r.Backends[0].Endpoints, ",") != "10.1.0.7:8080" {
						t.Errorf("route good: host %s %+v", vh.Hostname, r)
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("route good not in the routing view: %+v", v)
	}
	if got := Routing(viewsFixture(t), "apps/other"); len(got.Scopes) != 0 {
		t.Errorf("a Gateway filter that matches nothing kept %d scopes", len(got.Scopes))
	}
}

func TestProblemsListBrokenRouteNackAndUnprogrammedGateway(t *testing.T) {
	v := Problems(viewsFixture(t))
	want := map[string]bool{
		"HTTPRoute apps/broken ResolvedRefs BackendNotFound": false,
		"Proxy proxy-a Nack SnapshotRejected":                false,
		"Gateway apps/web Programmed Pending":                false,
	}
	for _, p := range v.Problems {
		k := p.Object.String() + " " + p.Type + " " + p.Reason
		if _, ok := want[k]; ok {
			want[k] = true
		}
		if p.Object.Name == "good" {
			t.Errorf("the good route is listed: %+v", p)
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("problem %q missing from %+v", k, v.Problems)
		}
	}
}

func TestTopologyJoinsProxiesGatewaysListenersRoutesServices(t *testing.T) {
	v := Topology(viewsFixture(t))
	edges := map[string]bool{}
	for _, e := range v.Edges {
		edges[e.From+" -> "+e.To+" "+e.Label] = true
	}
	for _, e := range []string{
		"proxy:proxy-a -> gateway:apps/web gen 1",
		"gateway:apps/web -> gateway:apps/web/http ",
		"gateway:apps/web/http -> route:HTTPRoute:apps/good ",
		"gateway:apps/web/http -> route:HTTPRoute:apps/broken ",
		"gateway:apps/web/other -> route:HTTPRoute:apps/broken ",
		"route:HTTPRoute:apps/good -> service:apps/api ",
	} {
		if !edges[e] {
			t.Errorf("edge %q missing; have %v", e, edges)
		}
	}
	if edges["gateway:apps/web/other -> route:HTTPRoute:apps/good "] {
		t.Error("a route with sectionName http is drawn on listener other")
	}
	ok := map[string]bool{}
	for _, n := range v.Nodes {
		ok[n.ID] = n.OK
	}
	if !ok["route:HTTPRoute:apps/good"] || ok["route:HTTPRoute:apps/broken"] || !ok["service:apps/api"] || ok["proxy:proxy-a"] {
		t.Errorf("node health: %v", ok)
	}
}

func TestFleetShowsSVIDLifetime(t *testing.T) {
	v := Fleet(viewsFixture(t))
	if len(v.Proxies) != 1 || v.Proxies[0].SVIDExpiresIn != "1h0m0s" || !v.Leader {
		t.Fatalf("fleet: %+v", v)
	}
}
