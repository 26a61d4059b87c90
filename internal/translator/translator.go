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
	"cmp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// Decisions this package makes where the specs leave a choice:
//
//   - Precedence inside a virtual host follows the HTTPRoute spec (Exact
//     path, longest PathPrefix, method, most headers, most query params,
//     oldest route, "<ns>/<name>", rule and match order). Regular
//     expressions, whose rank the spec leaves open, come after every
//     PathPrefix (longest pattern first) on Gateway and Ingress listeners
//     alike: Exact > longest PathPrefix > RegularExpression, the order the
//     proxy issue fixes. GRPCRoute methods become paths; a GRPCRoute regex
//     ranks before prefixes so a catch-all gRPC rule cannot shadow it.
//   - A route with any unsupported value (bad regex, unknown filter,
//     ReplacePrefixMatch without a PathPrefix match, invalid header, ...)
//     is Accepted=False UnsupportedValue on every parent and not served at
//     all: never half-applied.
//   - Conflicted listeners (same port: different protocols, or the same
//     hostname) are Accepted=False and Conflicted=True with the conflict
//     reason and are not served; routes still count in attachedRoutes.
//   - HTTPS listeners with any unusable certificateRef are not served
//     (ResolvedRefs=False, Programmed=False).
//   - Listener isolation: a route hostname is served only by the most
//     specific listener on the port that matches it.
//   - Ingress "*.example.com" matches exactly one label
//     (snapshot.VirtualHost.SingleLabelWildcard); Gateway wildcards match
//     one or more. Ingress rewrite-target is ReplacePrefixMatch for Prefix
//     paths, ReplaceFullPath for Exact, ReplaceRegex for use-regex paths;
//     "$n" targets apply only to regex paths. ssl-redirect is opt-in and
//     applies only to hosts with a valid certificate in the same Ingress.
//     A missing Service or port answers 503. defaultBackend (oldest wins)
//     is the last route of every Ingress virtual host.
//   - An endpoint set used by a served GRPCRoute is h2c for every user.
//   - RouteStatus is emitted only for routes with at least one parentRef
//     to a Gateway of our classes; the writer should drop our stale
//     entries from routes that have none.

// Names used in references.
const (
	gatewayGroup  = "gateway.networking.k8s.io"
	kindGateway   = "Gateway"
	kindHTTPRoute = "HTTPRoute"
	kindGRPCRoute = "GRPCRoute"
	kindTLSRoute  = "TLSRoute"
	kindTCPRoute  = "TCPRoute"
	kindUDPRoute  = "UDPRoute"

	kindReferenceGrant   = "ReferenceGrant"
	kindListenerSet      = "ListenerSet"
	kindBackendTLSPolicy = "BackendTLSPolicy"
	kindService          = "Service"
	kindSecret           = "Secret"
	kindIngress          = "Ingress"
)

type nn = types.NamespacedName

// named reports whether a namespaced object has a namespace and a name;
// objects without are ignored (an apiserver never returns them).
func named(m *metav1.ObjectMeta) bool { return m.Namespace != "" && m.Name != "" }

func key(m *metav1.ObjectMeta) nn { return nn{Namespace: m.Namespace, Name: m.Name} }

// olderFirst orders objects by creationTimestamp, then namespace/name.
func olderFirst(a, b *metav1.ObjectMeta) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func byName(a, b *metav1.ObjectMeta) bool { return compareNames(a, b) < 0 }

// compareNames orders objects by namespace, then name.
func compareNames(a, b *metav1.ObjectMeta) int { return compareNN(key(a), key(b)) }

// compareNN orders names by namespace, then name.
func compareNN(a, b nn) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// translator carries the state of one Translate call.
type translator struct {
	res *Resources
	ix  *index
	out *Result
	// memo, when set, reuses compiled routes across translations (memo.go).
	memo *memoPass

	classes  map[string]*classInfo
	gateways map[nn]*gatewayInfo
	gwOrder  []*gatewayInfo
	// listenerSets of our Gateways by name, and in precedence order.
	listenerSets map[nn]*listenerSetInfo
	lsOrder      []*listenerSetInfo
	// byOrd lists every listener by its ord (from 1), and states what
	// this translation's routes made of each, by the same index.
	byOrd  []*listenerInfo
	states []listenerState

	// endpointSets is every endpoint set any route resolved, by name, but
	// those remakeSet made (set finds every one).
	endpointSets map[string]*snapshot.EndpointSet
	setNames     map[setKey]string
	// poolSets is the shared pool's scope builder's sets, empty.
	poolSets map[string]bool
	// sources is the source of each endpoint set made (recordSource) but
	// those remakeSet made (scratch.remade), and freshSources how many
	// recordSource recorded.
	sources      map[string]endpointSource
	freshSources int
	// scratch holds the endpoint sets of endpointSets.
	scratch *scratch
	// certs is every valid certificate, by "<ns>/<name>".
	certs map[string]*snapshot.Certificate
	// badCerts says why each unusable certificate is, by "<ns>/<name>".
	badCerts map[string]error

	scopes map[snapshot.Scope]*scopeBuilder

	// BackendTLSPolicies (backendtlspolicy.go): every policy in precedence
	// order, the winner per Service and sectionName, every policy of a
	// Service, and the policies of the Service behind each endpoint set.
	tlsPolicies  []*tlsPolicy
	tlsWinners   map[tlsTarget]*tlsPolicy
	tlsByService map[nn][]*tlsPolicy
	setPolicies  map[string][]*tlsPolicy

	icParamsSeen map[string]bool

	// The policy layer (policies.go): every policy by kind and name, in
	// compile order (oldest first per kind), the winner of each attachment
	// point, and the backend policy of each endpoint set.
	policies         []*policy
	policyByRef      map[policyRef]*policy
	policyWinners    map[policyTarget]*policy
	policyLosers     map[policyTarget][]*policy
	setBackendPolicy map[string]*policy
}

// Translate computes the snapshots and desired status for one gathered set
// of objects. It never panics on malformed input and never reads anything
// but res.
func Translate(res *Resources) *Result {
	if res == nil {
		res = &Resources{}
	}
	return translate(res, nil)
}

// translate is Translate with an optional Memo pass.
func translate(res *Resources, memo *memoPass) *Result {
	sc := memo.scratchFor(res)
	t := &translator{
		memo:         memo,
		res:          res,
		ix:           memo.index(res, sc),
		out:          &Result{},
		endpointSets: sc.endpointSets,
		setNames:     sc.setNames,
		poolSets:     sc.poolSets,
		sources:      sc.sources,
		scratch:      sc,
		certs:        map[string]*snapshot.Certificate{},
		badCerts:     map[string]error{},
		scopes:       map[snapshot.Scope]*scopeBuilder{},
	}
	t.scope(snapshot.SharedPool())
	t.processGatewayClasses()
	t.processGateways()
	t.processBackendTLSPolicies()
	t.processPolicies()
	t.processRoutes()
	t.buildGatewayScopes()
	t.processIngresses()
	t.policyStatuses()
	t.parametersStatuses()
	t.finish()
	t.out.endpointSources = memo.keepSources(t.sources, t.freshSources, t.scratch.remade)
	t.out.endpointSlices = res.EndpointSlices
	return t.out
}

func (t *translator) event(kind, ns, name, typ, reason, msg string) {
	t.out.Events = append(t.out.Events, Event{Kind: kind, Namespace: ns, Name: name, Type: typ, Reason: reason, Message: msg})
}

func (t *translator) warn(kind, ns, name, reason, msg string) {
	t.event(kind, ns, name, corev1.EventTypeWarning, reason, msg)
}

func (t *translator) finish() {
	keys := make([]snapshot.Scope, 0, len(t.scopes))
	for s := range t.scopes {
		keys = append(keys, s)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		t.out.Snapshots = append(t.out.Snapshots, t.scopes[k].build(t))
	}
	sort.SliceStable(t.out.GatewayClasses, func(i, j int) bool { return t.out.GatewayClasses[i].Name < t.out.GatewayClasses[j].Name })
	// Gateways were processed in this order already: checking that is a
	// tenth of a stable sort. Routes are listed in it by processRouteKind,
	// which walks them sorted.
	sortStableByName(t.out.Gateways, func(g GatewayStatus) nn { return g.NamespacedName })
	sort.SliceStable(t.out.BackendTLSPolicies, func(i, j int) bool {
		return nnLess(t.out.BackendTLSPolicies[i].NamespacedName, t.out.BackendTLSPolicies[j].NamespacedName)
	})
	sort.SliceStable(t.out.ListenerSets, func(i, j int) bool {
		return nnLess(t.out.ListenerSets[i].NamespacedName, t.out.ListenerSets[j].NamespacedName)
	})
	sort.SliceStable(t.out.Ingresses, func(i, j int) bool {
		return nnLess(t.out.Ingresses[i].NamespacedName, t.out.Ingresses[j].NamespacedName)
	})
	sort.SliceStable(t.out.Events, func(i, j int) bool {
		a, b := t.out.Events[i], t.out.Events[j]
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Message, b.Message)) < 0
	})
	// Identical events (e.g. the same conflict seen twice) once.
	ev := t.out.Events[:0]
	for _, e := range t.out.Events {
		if n := len(ev); n > 0 && e == ev[n-1] {
			continue
		}
		ev = append(ev, e)
	}
	t.out.Events = ev
}

// sortStableByName sorts list stably by name, unless it is in that order.
func sortStableByName[E any](list []E, name func(E) nn) {
	compare := func(a, b E) int {
		x, y := name(a), name(b)
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	}
	if !slices.IsSortedFunc(list, compare) {
		slices.SortStableFunc(list, compare)
	}
}

func nnLess(a, b nn) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
