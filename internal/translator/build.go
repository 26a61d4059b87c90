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
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// scopeBuilder accumulates one snapshot.
type scopeBuilder struct {
	scope snapshot.Scope
	// id is unique to this builder in the process (compiledRoute.usedBy).
	id uint64
	// listeners by snapshot.ListenerKey ("<port>", "<port>/udp").
	listeners map[string]*listenerBuilder
	// sets are the endpoint sets used, each marked when build lists it,
	// but those useSet recorded by their stamp (stamped, each once), which
	// setOrder adds to them when it needs them: at 10,000 Services,
	// writing each into the map at every route change was a twentieth of
	// the change. fromLast counts the stamped ones that the scope's last
	// builder (lastBy) recorded too, and so listed.
	sets     map[string]bool
	stamped  []string
	fromLast int
	lastBy   uint64
	certs    map[string]bool
	gateways []snapshot.GatewayRef
	// memo is the translation's (nil: none), scratch its scratch maps.
	memo    *memoPass
	scratch *scratch
}

type listenerBuilder struct {
	l snapshot.Listener
	// key is snapshot.ListenerKey(&l), once asked for (keyOf).
	key string
	// vhosts are the virtual hosts emitted (made on first use, sized by
	// hint); patched, when set, is every virtual host already built
	// (emitPatched), and emit how a Gateway's listeners emitted them.
	vhosts  map[string]*vhostBuilder
	hint    int
	patched *builtListener
	emit    *emission
	sni     []snapshot.SNICertificate
	// clientValidation of the port (HTTPS; the Gateway's frontend TLS).
	clientValidation *snapshot.ClientValidation
	// ordered marks the builder listed by orderedListeners.
	ordered bool
	// slot holds what translations build for the listener (nil: no
	// memo), and last what the last one built (nil: nothing).
	slot *listenerSlot
	last *builtListener
	// streams are the stream routes of a TLS, TCP or UDP listener by SNI
	// hostname ("" for TCP and UDP), each the oldest route claiming it
	// (made by the first claim: most listeners are HTTP).
	streams map[string]*streamClaim
}

// streamClaim is the route that serves one hostname of a stream listener.
type streamClaim struct {
	route snapshot.StreamRoute
	meta  *metav1.ObjectMeta
}

// claim gives hostname to route unless an older route holds it.
func (lb *listenerBuilder) claim(host string, route snapshot.StreamRoute, meta *metav1.ObjectMeta) {
	if c := lb.streams[host]; c != nil && olderFirst(c.meta, meta) {
		return
	}
	route.Hostname = host
	if lb.streams == nil {
		lb.streams = map[string]*streamClaim{}
	}
	lb.streams[host] = &streamClaim{route: route, meta: meta}
}

type vhostBuilder struct {
	host    string
	single  bool
	entries []entry
	// listed marks the host listed by sortedHosts.
	listed bool
}

// entry is one route in a virtual host with its precedence key.
type entry struct {
	route *snapshot.Route
	key   *precKey
	// of, when set, is the compiled route whose routes[at] route is, as
	// compiled (compiledRoute.entry): a virtual host may share that
	// route's list instead of copying it (ownList). Compiled routes are
	// never modified once made.
	of *compiledRoute
	at int
}

// ownList is the list of a compiled route that entries are, as compiled
// and in order, if they are: one entry (its route as a list of one), or
// every entry of one compiled route, whose routes are in precedence
// order (sortEntries). Else nil. At 10,000 routes of two rules each, a
// copy of each host's routes was 15 MB of the controller's heap.
func ownList(entries []entry) []snapshot.Route {
	if len(entries) == 0 || entries[0].of == nil {
		return nil
	}
	cr := entries[0].of
	if len(entries) == 1 {
		at := entries[0].at
		return cr.routes[at : at+1 : at+1]
	}
	if len(entries) != len(cr.routes) {
		return nil
	}
	for i := range entries {
		if entries[i].of != cr || entries[i].at != i {
			return nil
		}
	}
	return cr.routes[:len(cr.routes):len(cr.routes)]
}

// scopeIDs numbers scope builders.
var scopeIDs atomic.Uint64

func (t *translator) scope(s snapshot.Scope) *scopeBuilder {
	sb := t.scopes[s]
	if sb == nil {
		n := 0 // the shared pool: as many listeners as last time, when a Memo knows
		if t.memo != nil && s == snapshot.SharedPool() {
			n = t.memo.sizes.sharedListeners
		}
		sets := map[string]bool{}
		var stamped []string
		var listeners map[string]*listenerBuilder
		if s == snapshot.SharedPool() && t.poolSets != nil {
			sets, t.poolSets = t.poolSets, nil
			listeners, stamped = t.scratch.poolListeners, t.scratch.poolStamped[:0]
		}
		if listeners == nil {
			listeners = make(map[string]*listenerBuilder, n)
		}
		sb = &scopeBuilder{scope: s, id: scopeIDs.Add(1), listeners: listeners, sets: sets, stamped: stamped, certs: map[string]bool{}, memo: t.memo, scratch: t.scratch}
		if t.memo != nil {
			_, sb.lastBy = t.memo.setOrder(s)
		}
		t.scopes[s] = sb
	}
	return sb
}

func (sb *scopeBuilder) listener(port int32, name string, proto snapshot.Protocol, external int32) *listenerBuilder {
	l := snapshot.Listener{Name: name, Port: port, ExternalPort: external, Protocol: proto}
	k := snapshot.ListenerKey(&l)
	lb := sb.listeners[k]
	if lb == nil {
		lb = sb.scratch.newListenerBuilder()
		lb.l, lb.key, lb.slot = l, k, sb.memo.slotOf(sb.scope, k)
		if lb.slot != nil && lb.slot.built != nil {
			lb.last, lb.hint = lb.slot.built, len(lb.slot.built.hosts)
		}
		sb.listeners[k] = lb
	}
	return lb
}

// keyOf is the listener's key. A scope's listeners are built once per
// translation and looked up by key at each step: at 1,000 Gateways, making
// the key again at each was two allocations per Gateway.
func (lb *listenerBuilder) keyOf() string {
	if lb.key == "" {
		lb.key = snapshot.ListenerKey(&lb.l)
	}
	return lb.key
}

func (lb *listenerBuilder) vhost(host string) *vhostBuilder {
	if lb.vhosts == nil {
		lb.vhosts = make(map[string]*vhostBuilder, lb.hint)
	}
	vh := lb.vhosts[host]
	if vh == nil {
		vh = &vhostBuilder{host: host}
		lb.vhosts[host] = vh
	}
	return vh
}

// use records the endpoint sets a route refers to.
func (sb *scopeBuilder) use(r *snapshot.Route) {
	routeSets(r, func(name string) { sb.sets[name] = false })
}

// routeSets calls f with each endpoint set r refers to: its backends'
// (those that have one), its mirrors' and its external authorization's.
func routeSets(r *snapshot.Route, f func(name string)) {
	for _, b := range r.Backends {
		if b.EndpointSet != "" {
			f(b.EndpointSet)
		}
	}
	for _, m := range r.Mirrors {
		f(m.EndpointSet)
	}
	if r.ExtAuth != nil {
		f(r.ExtAuth.EndpointSet)
	}
}

// setUse is an endpoint set the entries of a compiled route use, and the
// Memo's endpoints of it when last looked up.
type setUse struct {
	name string
	ends *memoEndpoints
}

// useCompiled records the endpoint sets of cr's entries, as compiled: with
// a Memo, each set once per scope builder, found by the stamp on its
// endpoints rather than by name (a set made by this translation; any
// other is recorded by name, as use does).
func (sb *scopeBuilder) useCompiled(cr *compiledRoute) {
	p := sb.memo
	if p == nil {
		for i := range cr.keys {
			sb.use(&cr.routes[i])
		}
		return
	}
	if cr.uses == nil {
		cr.uses = usesOf(cr)
	}
	for i := range cr.uses {
		sb.useSet(&cr.uses[i])
	}
}

// useSet records the endpoint set u, once per scope builder (useCompiled;
// sb has a Memo).
func (sb *scopeBuilder) useSet(u *setUse) {
	p := sb.memo
	if !p.madeNow(u.ends) {
		u.ends = p.endpoints[u.name]
	}
	if p.madeNow(u.ends) {
		if u.ends.usedIn == sb.id {
			return
		}
		if sb.lastBy != 0 && u.ends.usedIn == sb.lastBy {
			sb.fromLast++
		}
		u.ends.usedIn = sb.id
		sb.stamped = append(sb.stamped, u.name)
		return
	}
	sb.sets[u.name] = false
}

// usesOf lists the endpoint sets of cr's entries (routeSets), each once
// (empty, not nil, when none).
func usesOf(cr *compiledRoute) []setUse {
	out := []setUse{}
	for i := range cr.keys {
		routeSets(&cr.routes[i], func(name string) {
			if !slices.ContainsFunc(out, func(u setUse) bool { return u.name == name }) {
				out = append(out, setUse{name: name})
			}
		})
	}
	return out
}

func (sb *scopeBuilder) useBackends(bs []snapshot.Backend) {
	for _, b := range bs {
		if b.EndpointSet != "" {
			sb.sets[b.EndpointSet] = false
		}
	}
}

// streamRoutes lists a stream listener's claimed routes by hostname and
// records their endpoint sets.
func (lb *listenerBuilder) streamRoutes(sb *scopeBuilder) []snapshot.StreamRoute {
	hosts := make([]string, 0, len(lb.streams))
	for h := range lb.streams {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []snapshot.StreamRoute
	for _, h := range hosts {
		r := lb.streams[h].route
		sb.useBackends(r.Backends)
		out = append(out, r)
	}
	return out
}

func (sb *scopeBuilder) build(t *translator) *snapshot.Snapshot {
	if t.memo != nil && sb.scope == snapshot.SharedPool() {
		t.memo.sizes.sharedListeners = len(sb.listeners)
	}
	s := &snapshot.Snapshot{Scope: sb.scope}
	lbs, keys := sb.orderedListeners(t.memo.listenerOrder(sb.scope))
	t.memo.keepListenerOrder(sb.scope, keys)
	if len(lbs) > 0 {
		s.Listeners = make([]snapshot.Listener, 0, len(lbs))
	}
	for _, lb := range lbs {
		l := lb.l
		if l.Protocol == snapshot.ProtocolHTTPS || (l.Protocol == snapshot.ProtocolTLS && len(lb.sni) > 0) {
			l.TLS = &snapshot.ListenerTLS{Certificates: lb.sni, ClientValidation: lb.clientValidation}
		}
		if l.Protocol.Stream() {
			l.StreamRoutes = lb.streamRoutes(sb)
			s.Listeners = append(s.Listeners, l)
			continue
		}
		built := lb.patched
		if built == nil {
			built = t.buildHosts(sb, lb)
		}
		// A listener's built hosts are its host order for the next
		// translation (hostOrder).
		t.memo.keepBuilt(lb.slot, built)
		l.VirtualHosts = built.hosts
		s.Listeners = append(s.Listeners, l)
	}
	sets, kept := sb.setOrder(t)
	t.memo.keepSetOrder(sb.scope, sets, sb.id)
	list := t.endpointSetList(t.memo.setList(sb.scope), sets, kept)
	s.EndpointSets = list.sets
	t.memo.keepSetList(sb.scope, list)
	names := make([]string, 0, len(sb.certs))
	for n := range sb.certs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if c := t.certs[n]; c != nil {
			s.Certificates = append(s.Certificates, *c)
		}
	}
	// Emitted in the Gateways' order, they are in order already.
	byName := func(a, b snapshot.GatewayRef) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}
	if !slices.IsSortedFunc(sb.gateways, byName) {
		slices.SortStableFunc(sb.gateways, byName)
	}
	s.Gateways = t.memo.gatewayList(sb.scope, sb.gateways)
	return s
}

// orderedListeners is sb's listener builders in snapshot.CompareListeners
// order, and their keys in that order. prev, the keys in order last time,
// is a hint: the listeners still there keep their order, and only new
// ones are sorted and merged in (at 1,000 Gateways, sorting every
// listener was a twelfth of a route change). The keys are prev itself
// when they are prev's.
func (sb *scopeBuilder) orderedListeners(prev []string) ([]*listenerBuilder, []string) {
	order := func(a, b *listenerBuilder) int { return snapshot.CompareListeners(&a.l, &b.l) }
	lbs := make([]*listenerBuilder, 0, len(sb.listeners))
	for _, k := range prev {
		if lb := sb.listeners[k]; lb != nil && !lb.ordered {
			lb.ordered = true
			lbs = append(lbs, lb)
		}
	}
	same := len(lbs) == len(prev)
	if len(lbs) < len(sb.listeners) {
		added := make([]*listenerBuilder, 0, len(sb.listeners)-len(lbs))
		for _, lb := range sb.listeners {
			if !lb.ordered {
				added = append(added, lb)
			}
		}
		slices.SortFunc(added, order)
		lbs, same = mergeSortedFunc(lbs, added, order), false
	}
	if !slices.IsSortedFunc(lbs, order) { // a hint out of order: not ours
		slices.SortFunc(lbs, order)
		same = false
	}
	if same {
		return lbs, prev
	}
	keys := make([]string, len(lbs))
	for i, lb := range lbs {
		keys[i] = lb.keyOf()
	}
	return lbs, keys
}

// setOrder is the names of the endpoint sets sb used, in order: the last
// translation's list of the scope when useSet found every set in it
// (sb.fromLast), which takes no look-up of each set; else sortedKeys.
//
// Each set useSet counted is a set this translation made whose Memo
// entry the scope's last builder recorded, so its name is in that
// builder's list. With sets the last translation made again (plainSets),
// a name has one Memo entry, so the sets counted are as many names:
// all of those used (every one stamped, none in sb.sets), and as many
// as the last list, they are that list.
//
// kept reports whether the order is the last translation's very list
// (endpointSetList then finds the sets by position).
func (sb *scopeBuilder) setOrder(t *translator) (order []string, kept bool) {
	defer sb.keepStamped()
	prev, _ := t.memo.setOrder(sb.scope)
	if sb.lastBy != 0 && len(sb.sets) == 0 && sb.fromLast == len(sb.stamped) && len(prev) == len(sb.stamped) && t.plainSets() {
		return prev, len(prev) > 0
	}
	for _, n := range sb.stamped {
		sb.sets[n] = false
	}
	order = sortedKeys(sb.sets, prev, func(listed bool) bool { return listed }, func(n string) { sb.sets[n] = true })
	return order, len(order) > 0 && len(prev) == len(order) && &order[0] == &prev[0]
}

// keepStamped hands the shared pool's list of stamped sets, emptied, to
// the next translation.
func (sb *scopeBuilder) keepStamped() {
	if sb.scope == snapshot.SharedPool() && sb.stamped != nil {
		clear(sb.stamped)
		sb.scratch.poolStamped, sb.stamped = sb.stamped[:0], nil
	}
}

// endpointSetList is the endpoint sets named that this translation made,
// in order: last, the list of the last translation, when they are the
// same sets (at 10,000 routes a new list at every route change was a
// seventh of what it allocated). Otherwise a set the same as last's of
// its name is last's (sets are never modified once a snapshot holds
// them), and the others are copied out of the scratch, into one array.
//
// The list comes with the Memo entry each set was remade from (ends, nil
// when none was), which lets the next translation of the same names
// (kept: the very names of last) find each set without a look-up by name
// (eachSetWithLast).
func (t *translator) endpointSetList(last setList, names []string, kept bool) setList {
	n, fresh, same := 0, 0, last.sets != nil
	sameEnds, anyEnds := same && len(last.ends) == len(last.sets), false
	t.eachSetWithLast(last, names, kept, func(es, prev *snapshot.EndpointSet, e *memoEndpoints) {
		if same && (n == len(last.sets) || last.sets[n] != prev) {
			same = false
		}
		if prev != nil {
			t.memo.noteListed(e, prev)
		}
		if sameEnds && (n == len(last.ends) || last.ends[n] != e) {
			sameEnds = false
		}
		if prev == nil {
			fresh++
		}
		anyEnds = anyEnds || e != nil
		n++
	})
	same = same && n == len(last.sets)
	if same && (sameEnds || !anyEnds) {
		if !sameEnds {
			last.ends = nil
		}
		return last
	}
	if n == 0 {
		return setList{}
	}
	var out setList
	var copies []snapshot.EndpointSet
	if !same {
		out.sets, copies = make([]*snapshot.EndpointSet, 0, n), make([]snapshot.EndpointSet, fresh)
	}
	if anyEnds {
		out.ends = make([]*memoEndpoints, 0, n)
	}
	t.eachSetWithLast(last, names, kept, func(es, prev *snapshot.EndpointSet, e *memoEndpoints) {
		if anyEnds {
			out.ends = append(out.ends, e)
		}
		if same {
			return
		}
		if prev == nil {
			copies[0] = *es
			prev, copies = &copies[0], copies[1:]
			t.memo.noteListed(e, prev)
		}
		out.sets = append(out.sets, prev)
	})
	if same {
		out.sets = last.sets
	}
	return out
}

// eachSetWithLast calls f with each endpoint set named that this
// translation made, in order, the set of last (in name order) the same
// as it (nil: none) and the Memo entry it was remade from (nil: none).
//
// When names are kept (the very names of last) and each had a set then,
// last's sets and entries are names' by position: a set remade from the
// same entry is found through it, without hashing its name (at 10,000
// Services, the look-ups were a tenth of a route change).
func (t *translator) eachSetWithLast(last setList, names []string, kept bool, f func(es, prev *snapshot.EndpointSet, e *memoEndpoints)) {
	aligned := kept && len(last.sets) == len(names) && len(last.ends) == len(names)
	j := 0
	for i, name := range names {
		var es *snapshot.EndpointSet
		var e *memoEndpoints
		if aligned {
			if es = t.memo.remadeFrom(last.ends[i]); es != nil && (es == last.sets[i] || es.Name == name) {
				e = last.ends[i]
			} else {
				es = nil
			}
		}
		if es == nil {
			es, e = t.setOf(name)
		}
		if es == nil {
			continue
		}
		var prev *snapshot.EndpointSet
		if aligned {
			j = i
		} else {
			for j < len(last.sets) && last.sets[j].Name < name {
				j++
			}
		}
		if j < len(last.sets) && snapshot.SameEndpointSet(last.sets[j], es) {
			prev = last.sets[j]
		}
		f(es, prev, e)
	}
}

// buildHosts builds the virtual hosts lb emitted, in hostname order, each
// sharing the route list of the last translation's host of its name when
// it was emitted from the same routes (hostRoutes).
func (t *translator) buildHosts(sb *scopeBuilder, lb *listenerBuilder) *builtListener {
	hosts := sortedHosts(lb.vhosts, hostOrder(lb.last))
	b := &builtListener{hosts: make([]*snapshot.VirtualHost, 0, len(hosts)), names: hosts, emit: lb.emit}
	last, at := lb.last, 0
	if t.memo != nil && t.memo.built != nil {
		b.from = &hostSources{}
		if last != nil && last.from != nil {
			b.from = last.from
		}
	}
	for _, h := range hosts {
		vb := lb.vhosts[h]
		var routes []snapshot.Route
		if len(vb.entries) > 0 {
			routes = t.hostRoutes(last, b.from, &at, h, vb.entries)
		}
		b.hosts = append(b.hosts, virtualHost(last, at, h, vb.single, routes))
	}
	if b.from != nil {
		b.from.prune(b.hosts)
	}
	return b
}

// virtualHost is the virtual host h with routes: last's host at at, the
// very one, when it is that host with the very same routes (hostRoutes
// hands an unchanged host's list on), else a new one. A listener's list
// of hosts is then pointers, most of them shared with the last
// translation's: at 10,000 hosts a list of the hosts themselves was half
// a megabyte a change, copied whole when one changed.
func virtualHost(last *builtListener, at int, h string, single bool, routes []snapshot.Route) *snapshot.VirtualHost {
	if last != nil && at < len(last.hosts) {
		if vh := last.hosts[at]; vh.Hostname == h && vh.SingleLabelWildcard == single && lists.Same(vh.Routes, routes) {
			return vh
		}
	}
	return &snapshot.VirtualHost{Hostname: h, SingleLabelWildcard: single, Routes: routes}
}

// hostnames lists the hostnames of hosts.
func hostnames(hosts []*snapshot.VirtualHost) []string {
	out := make([]string, len(hosts))
	for i, vh := range hosts {
		out[i] = vh.Hostname
	}
	return out
}

// sortedHosts is the hostnames of vhosts in order (sortedKeys), marking
// the builders listed.
func sortedHosts(vhosts map[string]*vhostBuilder, prev []string) []string {
	return sortedKeys(vhosts, prev, func(vb *vhostBuilder) bool { return vb.listed }, func(h string) { vhosts[h].listed = true })
}

// sortedKeys is the keys of m in order. prev, the keys last time (in
// order), is a hint: the ones still there keep their order, and only the
// new ones are sorted and merged in (at 10,000 hosts, sorting all of them
// was a tenth of a translation). When the keys are prev's, in order, the
// result is prev itself (callers only read it): at 10,000 endpoint sets a
// new list at every route change was a third of what it allocated.
// listed and mark read and set a key's mark in m, which starts unset.
func sortedKeys[V any](m map[string]V, prev []string, listed func(V) bool, mark func(string)) []string {
	var out []string // nil while prev's keys are all in m, each once
	for i, k := range prev {
		if v, ok := m[k]; ok && !listed(v) {
			mark(k)
			if out != nil {
				out = append(out, k)
			}
		} else if out == nil {
			out = append(make([]string, 0, len(m)), prev[:i]...)
		}
	}
	if out == nil {
		if len(prev) == len(m) && slices.IsSorted(prev) {
			return prev
		}
		out = append(make([]string, 0, len(m)), prev...)
	}
	if len(out) < len(m) {
		added := make([]string, 0, len(m)-len(out))
		for k, v := range m {
			if !listed(v) {
				added = append(added, k)
			}
		}
		for _, k := range added {
			mark(k)
		}
		slices.Sort(added)
		out = mergeSorted(out, added)
	}
	if !slices.IsSorted(out) { // a hint out of order: not ours
		slices.Sort(out)
	}
	return out
}

// mergeSorted is the strings of a and b, each in order, in order.
func mergeSorted(a, b []string) []string {
	return mergeSortedFunc(a, b, strings.Compare)
}

// mergeSortedFunc is the elements of a and b, each in order by compare,
// in order (a's first among equals); a itself when b is empty.
func mergeSortedFunc[E any](a, b []E, compare func(E, E) int) []E {
	if len(b) == 0 {
		return a
	}
	out := make([]E, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if compare(b[0], a[0]) < 0 {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}
