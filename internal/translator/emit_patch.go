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
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// A Gateway port's HTTP listener with 10,000 routes attached emitted,
// sorted and built 10,000 virtual hosts at every translation, though a
// route change touches the few hosts that route names. When a Memo runs,
// the environment is unchanged and the listener's emission was plain (no
// policy, client certificate or BackendTLSPolicy rewrites or notes, no
// GRPCRoute), emitPatched finds the attachments that changed since the
// last translation and builds only the virtual hosts they name, patching
// them into the last translation's list. TestMemoEqualsTranslate checks
// the result against a full translation, and TestEmitPatchedEqualsTranslate
// drives it with many routes and few changes.

// emission is how the servable listeners of one Gateway port emitted a
// snapshot listener's hosts: each listener's ord and its attachments, in
// emission order. It is kept (builtListener.emit) only for a plain
// emission: every entry emitted as compiled and no GRPCRoute.
type emission struct {
	ords []int
	atts [][]attachment
	// uses are the endpoint sets of the routes emitted, each once, when
	// listed (nil: not yet): an emission whose attachments are all the
	// last one's records them rather than reading every route. They are
	// listed the second time in a row an emission is the same, so that a
	// listener whose routes change at every translation never pays for
	// the list.
	uses []setUse
	// one is atts's room for a port of one listener, and built the
	// listener emitPatched patches when no host changed: two allocations
	// were one.
	one   [1][]attachment
	built builtListener
}

// emissionOf is an emission of listeners ords with room for their n
// attachment lists.
func emissionOf(ords []int, n int) *emission {
	e := &emission{ords: ords}
	if n == 1 {
		e.atts = e.one[:]
	} else {
		e.atts = make([][]attachment, n)
	}
	return e
}

// plainEnvironment reports whether nothing of the environment rewrites or
// notes the routes gi's listeners emit: no client certificate for TLS
// backends, no policy, and no BackendTLSPolicy or backend policy to note
// ancestors for.
func (t *translator) plainEnvironment(gi *gatewayInfo) bool {
	return gi.backendCert == "" && len(t.policyWinners) == 0 && len(t.setPolicies) == 0 && len(t.setBackendPolicy) == 0
}

// plainRoute reports whether cr's entries are emitted as compiled in a
// plain environment (no ExtensionRef policies, no h2c marking).
func plainRoute(cr *compiledRoute) bool {
	return cr.kind == kindHTTPRoute && len(cr.ext) == 0
}

// newEmission is the emission of serv, or nil when it cannot be patched
// next time (a listener without an ord, or an attachment that is not
// plain).
func (t *translator) newEmission(gi *gatewayInfo, serv []*listenerInfo) *emission {
	if t.memo == nil || t.memo.built == nil || !t.plainEnvironment(gi) {
		return nil
	}
	e := emissionOf(make([]int, len(serv)), len(serv))
	for i, li := range serv {
		if li.ord == 0 {
			return nil
		}
		routes := t.state(li).routes
		for j := range routes {
			if !plainRoute(routes[j].cr) {
				return nil
			}
		}
		e.ords[i], e.atts[i] = li.ord, routes
	}
	return e
}

// emitPatched emits serv into lb (fresh: nothing emitted into it yet) by
// patching the hosts the last translation built for it, when that was a
// plain emission of the same listeners and few of their attachments
// changed; it reports false, having done nothing, otherwise.
func (t *translator) emitPatched(sb *scopeBuilder, gi *gatewayInfo, lb *listenerBuilder, serv []*listenerInfo) bool {
	if t.memo == nil || !t.memo.sameEnv || lb.vhosts != nil || lb.patched != nil || !t.plainEnvironment(gi) {
		return false
	}
	last := lb.last
	if last == nil || last.emit == nil || len(last.emit.ords) != len(serv) || last.from == nil {
		return false
	}
	for i, li := range serv {
		if li.ord == 0 || li.ord != last.emit.ords[i] {
			return false
		}
	}
	// The hosts of the attachments that are not the last translation's
	// (made on the first: most listeners have none).
	var affected map[string]bool
	budget := len(last.hosts)/4 + 4
	same := true // every attachment is the last translation's
	changed := func(a *attachment) bool {
		same = false
		if !plainRoute(a.cr) {
			return false
		}
		if affected == nil {
			affected = map[string]bool{}
		}
		for _, h := range a.hosts {
			affected[h] = true
		}
		return len(affected) <= budget
	}
	for i, li := range serv {
		if !diffAttachments(last.emit.atts[i], t.state(li).routes, changed) {
			return false
		}
	}

	// From here on, what emitHTTPListeners does, for the affected hosts.
	var claims map[string]bool
	if len(affected) > 0 {
		claims = make(map[string]bool, len(serv))
	}
	for _, li := range serv {
		if claims != nil {
			claim := li.hostname
			if claim == "" {
				claim = "*"
			}
			claims[claim] = true
		}
		t.emitCerts(sb, lb, li)
		if li.clientValidation != nil && lb.clientValidation == nil {
			lb.clientValidation = li.clientValidation
		}
	}
	if same && last.emit.uses != nil {
		// The very attachments, so the very hosts and endpoint sets: the
		// last translation's listener is this one's, its emission now
		// holding this translation's attachment lists (with the same
		// attachments; the next translation refills the last one's). At
		// 1,000 Gateways, a new one for each was the most a route change
		// allocated.
		for i := range last.emit.uses {
			sb.useSet(&last.emit.uses[i])
		}
		for i, li := range serv {
			last.emit.atts[i] = t.state(li).routes
		}
		lb.emit, lb.patched = last.emit, last
		t.memo.patched++
		t.memo.carried++
		return true
	}
	lb.emit = emissionOf(last.emit.ords, len(serv))
	for i, li := range serv {
		lb.emit.atts[i] = t.state(li).routes
	}
	var entries map[string][]entry
	isAffected := func(string) bool { return false }
	var affectedBits uint64 // hostBits of the affected hosts
	if len(affected) > 0 {
		entries = make(map[string][]entry, len(affected))
		isAffected = hostSet(affected)
		for h := range affected {
			affectedBits |= hostBit(h)
		}
	}
	var uses usesList // listed when every attachment is the last one's
	if same {
		uses = usesList{names: map[string]bool{}, list: []setUse{}}
	}
	for _, li := range serv {
		for _, att := range t.state(li).routes {
			cr := att.cr
			var emitted bool
			if len(serv) == 1 && att.bits&affectedBits == 0 {
				// The port's one listener, and no affected host: its
				// hosts are all emitted, and none is looked at (a list of
				// its own for each of 10,000 routes, scattered over the
				// heap).
				emitted = len(att.hosts) > 0
			} else {
				emitted = listAffected(serv, li, &att, isAffected, entries)
			}
			if emitted && uses.names != nil {
				uses.add(cr)
			}
			if emitted && cr.usedBy != sb.id {
				sb.useCompiled(cr)
				cr.usedBy = sb.id
			}
		}
	}
	lb.emit.uses = uses.list
	hosts := make([]string, 0, len(affected))
	for h := range affected {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)

	if len(hosts) == 0 {
		// No host changed: the last translation's hosts, as they are
		// (a snapshot is never changed once built, so two may share them).
		lb.emit.built = builtListener{hosts: last.hosts, names: last.names, from: last.from}
		lb.patched = &lb.emit.built
	} else {
		lb.patched = t.patchHosts(last, hosts, entries, claims)
	}
	lb.patched.emit = lb.emit
	t.memo.patched++
	return true
}

// usesList lists the endpoint sets of compiled routes, each once
// (emission.uses).
type usesList struct {
	names map[string]bool
	list  []setUse
}

// add lists cr's sets not listed yet.
func (l *usesList) add(cr *compiledRoute) {
	if cr.uses == nil {
		cr.uses = usesOf(cr)
	}
	for _, u := range cr.uses {
		if !l.names[u.name] {
			l.names[u.name] = true
			l.list = append(l.list, u)
		}
	}
}

// listAffected adds the entries of att, an attachment of listener li of
// the port's listeners serv, to entries for each of its hosts li serves
// that isAffected; it reports whether li serves any of its hosts.
func listAffected(serv []*listenerInfo, li *listenerInfo, att *attachment, isAffected func(string) bool, entries map[string][]entry) (emitted bool) {
	for _, h := range att.hosts {
		host := h
		if host == "*" {
			host = ""
		}
		if len(serv) > 1 && best(serv, host) != li {
			continue
		}
		emitted = true
		if isAffected(h) {
			// Listed, with its entries (a route may have none).
			es := entries[h]
			for i := range att.cr.keys {
				es = append(es, att.cr.entry(i))
			}
			entries[h] = es
		}
	}
	return emitted
}

// maxScannedHosts is the most hosts hostSet looks through one by one:
// a change names a host or two, and comparing a hostname with those is
// quicker than hashing it, which emitPatched did for every host of a
// listener with 10,000 routes.
const maxScannedHosts = 8

// hostSet reports membership in set.
func hostSet(set map[string]bool) func(string) bool {
	if len(set) > maxScannedHosts {
		return func(h string) bool { return set[h] }
	}
	list := make([]string, 0, len(set))
	for h := range set {
		list = append(list, h)
	}
	return func(h string) bool { return slices.Contains(list, h) }
}

// patchHosts is last's hosts with those named by hosts (sorted) built
// anew from their entries (a host some attachment lists, with or without
// entries, or a listener's claim; any other is dropped).
func (t *translator) patchHosts(last *builtListener, hosts []string, entries map[string][]entry, claims map[string]bool) *builtListener {
	b := &builtListener{hosts: make([]*snapshot.VirtualHost, 0, len(last.hosts)+len(hosts)), from: last.from}
	i := 0 // the next of last's hosts to copy
	for _, h := range hosts {
		n, _ := slices.BinarySearchFunc(last.hosts[i:], h, func(vh *snapshot.VirtualHost, h string) int { return strings.Compare(vh.Hostname, h) })
		b.hosts = append(b.hosts, last.hosts[i:i+n]...)
		i += n
		// Where h is in last, if it is: hostRoutes looks there, not
		// through every host before it (at 10,000 hosts, a twentieth of
		// a route change's CPU).
		at := i
		if i < len(last.hosts) && last.hosts[i].Hostname == h {
			i++
		}
		es, listed := entries[h]
		if !listed && !claims[h] {
			continue
		}
		var routes []snapshot.Route
		if len(es) > 0 {
			routes = t.hostRoutes(last, b.from, &at, h, es)
		}
		b.hosts = append(b.hosts, virtualHost(last, at, h, false, routes))
	}
	b.hosts = append(b.hosts, last.hosts[i:]...)
	b.from.prune(b.hosts)
	return b
}

// diffAttachments walks old and cur, a listener's attachments of two
// translations (each in emission order: by kind, then namespace and
// name), and calls changed for every attachment that is not in both as
// the same compiled route with the same hosts: one removed, one added, or
// both of a route that changed. It stops, reporting false, when changed
// does.
func diffAttachments(old, cur []attachment, changed func(*attachment) bool) bool {
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case i < len(old) && j < len(cur) && old[i].cr == cur[j].cr && sameHosts(old[i].hosts, cur[j].hosts):
			i++
			j++
		case j == len(cur) || (i < len(old) && attachedBefore(old[i].cr, cur[j].cr)):
			if !changed(&old[i]) {
				return false
			}
			i++
		case i == len(old) || attachedBefore(cur[j].cr, old[i].cr):
			if !changed(&cur[j]) {
				return false
			}
			j++
		default: // one route, changed
			if !changed(&old[i]) || !changed(&cur[j]) {
				return false
			}
			i++
			j++
		}
	}
	return true
}

// sameHosts reports whether a and b list the same hostnames: at once when
// they are the same list (a Memo reattaches an unchanged route with the
// hosts it kept), else by comparing them.
func sameHosts(a, b []string) bool {
	return lists.Same(a, b) || slices.Equal(a, b)
}

// attachedBefore reports whether a route of a comes before b's in a
// listener's attachments: by kind, then namespace and name.
func attachedBefore(a, b *compiledRoute) bool {
	if ka, kb := kindRank(a.kind), kindRank(b.kind); ka != kb {
		return ka < kb
	}
	if a.meta.Namespace != b.meta.Namespace {
		return a.meta.Namespace < b.meta.Namespace
	}
	return a.meta.Name < b.meta.Name
}

// kindRank is the order processRoutes attaches route kinds in.
func kindRank(kind string) int {
	switch kind {
	case kindHTTPRoute:
		return 0
	case kindGRPCRoute:
		return 1
	case kindTLSRoute:
		return 2
	case kindTCPRoute:
		return 3
	}
	return 4
}
