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
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// TopologyView is /api/v1/topology: proxies → Gateways → listeners →
// routes → Services, as a graph the dashboard draws in columns.
type TopologyView struct {
	Revision uint64 `json:"revision"`
	Nodes    []Node `json:"nodes"`
	Edges    []Edge `json:"edges"`
}

// Node is one box; Column orders them left to right (0 proxies,
// 1 Gateways, 2 listeners, 3 routes, 4 Services).
type Node struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Label  string `json:"label"`
	Column int    `json:"column"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Edge joins two nodes; Label is e.g. the generation a proxy acked.
type Edge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Label string `json:"label,omitempty"`
}

// The topology columns.
const (
	columnProxy = iota
	columnGateway
	columnListener
	columnRoute
	columnService
)

type topology struct {
	v        TopologyView
	nodes    map[string]int
	edges    map[Edge]bool
	problems map[ObjectRef]bool
}

func (t *topology) node(n Node) {
	if i, ok := t.nodes[n.ID]; ok {
		t.v.Nodes[i].OK = t.v.Nodes[i].OK && n.OK
		return
	}
	t.nodes[n.ID] = len(t.v.Nodes)
	t.v.Nodes = append(t.v.Nodes, n)
}

func (t *topology) edge(from, to, label string) {
	if _, ok := t.nodes[from]; !ok {
		return
	}
	if _, ok := t.nodes[to]; !ok {
		return
	}
	e := Edge{From: from, To: to, Label: label}
	if !t.edges[e] {
		t.edges[e] = true
		t.v.Edges = append(t.v.Edges, e)
	}
}

// Topology builds the topology view.
func Topology(in Input) TopologyView {
	t := &topology{v: TopologyView{Revision: in.Revision, Nodes: []Node{}, Edges: []Edge{}}, nodes: map[string]int{}, edges: map[Edge]bool{}}
	if in.Result == nil {
		return t.v
	}
	res := in.Result
	problems := map[ObjectRef]bool{}
	for _, p := range Problems(in).Problems {
		problems[p.Object] = true
	}
	t.problems = problems
	// Gateways and their listeners, with their protocols from the spec
	// the status does not carry: read them off the listener statuses'
	// supported kinds.
	listeners := map[string][]gwv1.ListenerStatus{}
	for _, g := range res.Gateways {
		obj := ObjectRef{Kind: "Gateway", Namespace: g.Namespace, Name: g.Name}
		id := "gateway:" + g.Namespace + "/" + g.Name
		detail := fmt.Sprintf("generation %d, scope %s", g.Generation, g.Scope.String())
		if in.DataPlane != nil && in.Leader {
			st := in.DataPlane(g.Namespace, g.Name, g.Generation)
			detail += fmt.Sprintf(", %d/%d proxies ready", st.Ready, st.Proxies)
		}
		t.node(Node{ID: id, Kind: "Gateway", Label: g.Namespace + "/" + g.Name, Column: columnGateway, OK: !problems[obj], Detail: detail})
		listeners[g.Namespace+"/"+g.Name] = g.Status.Listeners
		for _, l := range g.Status.Listeners {
			lid := id + "/" + string(l.Name)
			ok := true
			for _, c := range l.Conditions {
				if _, bad := conditionProblem(obj, "", c); bad {
					ok = false
				}
			}
			t.node(Node{ID: lid, Kind: "Listener", Label: string(l.Name), Column: columnListener, OK: ok, Detail: fmt.Sprintf("%d routes attached", l.AttachedRoutes)})
			t.edge(id, lid, "")
		}
	}
	// Proxies, with the generation of each Gateway they acked.
	for _, p := range in.Proxies {
		id := "proxy:" + p.NodeID
		detail := "scope " + p.Scope
		if p.AckedVersion == "" {
			detail += ", nothing acked yet"
		} else if !p.InSync {
			detail += ", behind the published snapshot"
		}
		t.node(Node{ID: id, Kind: "Proxy", Label: p.NodeID, Column: columnProxy, OK: p.InSync && p.Rejected == nil, Detail: detail})
		for _, g := range p.Gateways {
			t.edge(id, "gateway:"+g.Namespace+"/"+g.Name, fmt.Sprintf("gen %d", g.Generation))
		}
	}
	// Routes, attached to listeners through their accepted parents.
	for _, kr := range []struct {
		kind string
		rs   []translator.RouteStatus
	}{{"HTTPRoute", res.HTTPRoutes}, {"GRPCRoute", res.GRPCRoutes}, {"TLSRoute", res.TLSRoutes}, {"TCPRoute", res.TCPRoutes}, {"UDPRoute", res.UDPRoutes}} {
		for _, r := range kr.rs {
			obj := ObjectRef{Kind: kr.kind, Namespace: r.Namespace, Name: r.Name}
			rid := routeNodeID(obj)
			t.node(Node{ID: rid, Kind: kr.kind, Label: r.Namespace + "/" + r.Name, Column: columnRoute, OK: !problems[obj]})
			for _, p := range r.Parents {
				if c := findCondition(p.Conditions, string(gwv1.RouteConditionAccepted)); c == nil || c.Status != metav1.ConditionTrue {
					continue
				}
				ns := r.Namespace
				if p.ParentRef.Namespace != nil {
					ns = string(*p.ParentRef.Namespace)
				}
				gw := ns + "/" + string(p.ParentRef.Name)
				for _, l := range listeners[gw] {
					if p.ParentRef.SectionName != nil && string(*p.ParentRef.SectionName) != string(l.Name) {
						continue
					}
					if p.ParentRef.SectionName == nil && !takesKind(l, kr.kind) {
						continue
					}
					t.edge("gateway:"+gw+"/"+string(l.Name), rid, "")
				}
			}
		}
	}
	// Services, from the backends of the compiled routes (Ingresses too).
	for _, s := range res.Snapshots {
		ready := map[string]int{}
		for _, es := range s.EndpointSets {
			ready[serviceOf(es.Name)] += len(es.Endpoints)
		}
		for _, l := range s.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, r := range vh.Routes {
					t.routeServices(r.ID, r.Backends, ready)
				}
			}
			for _, r := range l.StreamRoutes {
				t.routeServices(r.ID, r.Backends, ready)
			}
		}
	}
	sort.SliceStable(t.v.Nodes, func(i, j int) bool {
		if t.v.Nodes[i].Column != t.v.Nodes[j].Column {
			return t.v.Nodes[i].Column < t.v.Nodes[j].Column
		}
		return t.v.Nodes[i].ID < t.v.Nodes[j].ID
	})
	return t.v
}

// routeServices adds the Services a compiled route forwards to. An
// Ingress has no status to make its node from: it gets one here.
func (t *topology) routeServices(routeID string, backends []snapshot.Backend, ready map[string]int) {
	src := routeSource(routeID)
	rid := routeNodeID(src)
	if src.Kind == "Ingress" {
		t.node(Node{ID: rid, Kind: "Ingress", Label: src.Namespace + "/" + src.Name, Column: columnRoute, OK: !t.problems[src]})
	}
	for _, b := range backends {
		if b.EndpointSet == "" {
			continue
		}
		svc := serviceOf(b.EndpointSet)
		n := ready[svc]
		t.node(Node{ID: "service:" + svc, Kind: "Service", Label: svc, Column: columnService, OK: n > 0, Detail: fmt.Sprintf("%d ready endpoints", n)})
		t.edge(rid, "service:"+svc, "")
	}
}

func routeNodeID(r ObjectRef) string { return "route:" + r.Kind + ":" + r.Namespace + "/" + r.Name }

// takesKind reports whether the listener's status lists kind among the
// route kinds it supports.
func takesKind(l gwv1.ListenerStatus, kind string) bool {
	for _, k := range l.SupportedKinds {
		if string(k.Kind) == kind {
			return true
		}
	}
	return false
}
