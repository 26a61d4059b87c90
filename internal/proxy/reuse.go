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

package proxy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// A compile keeps what the state in force compiled from the same input:
// an endpoint set, and a virtual host with its routes, are taken over as
// they are rather than compiled again, so the cost of a swap follows what
// changed rather than what exists. Snapshots are immutable (discovery's
// Assembler hands unchanged resources over as the very values it decoded
// last time), so "the same input" is judged by identity: the same lists
// and pointers, and equal scalars. A snapshot built afresh shares nothing
// and compiles in full, as before.

// sameEndpointSetInput reports whether two endpoint set inputs are known
// to be equal without looking inside their lists and pointers.
// TestEndpointSetFieldsAreReuses fails when EndpointSet gains a field this
// does not compare.
func sameEndpointSetInput(a, b *snapshot.EndpointSet) bool {
	return a.Name == b.Name &&
		a.AppProtocol == b.AppProtocol &&
		a.LoadBalancer == b.LoadBalancer &&
		lists.Same(a.Endpoints, b.Endpoints) &&
		a.TLS == b.TLS &&
		a.Hash == b.Hash &&
		a.ConnectTimeout == b.ConnectTimeout &&
		a.IdleTimeout == b.IdleTimeout &&
		a.CircuitBreaker == b.CircuitBreaker &&
		a.Outlier == b.Outlier &&
		a.HealthCheck == b.HealthCheck
}

// sameVirtualHostInput is sameEndpointSetInput for virtual hosts
// (TestVirtualHostFieldsAreReuses).
func sameVirtualHostInput(a, b *snapshot.VirtualHost) bool {
	return a.Hostname == b.Hostname &&
		a.SingleLabelWildcard == b.SingleLabelWildcard &&
		lists.Same(a.Routes, b.Routes)
}

// reusableSet returns the previous state's compiled set of in when its
// input is the same and nothing else it was compiled from can have
// changed; nil otherwise. A set with upstream TLS is always compiled
// again: its configuration also reads the snapshot's certificates.
func reusableSet(in *snapshot.EndpointSet, old *endpointSet) *endpointSet {
	if old == nil || in.TLS != nil || (in != old.src && !sameEndpointSetInput(in, old.src)) {
		return nil
	}
	return old
}

// setLookup is one endpoint set a compiled virtual host's routes looked
// up, and what they found (nil for none).
type setLookup struct {
	name string
	set  *endpointSet
}

// set resolves an endpoint set name in the state being compiled, noting
// the lookup for the virtual host being compiled.
func (c *compiler) set(name string) *endpointSet {
	es := c.st.sets.get(name)
	if c.lookups != nil {
		*c.lookups = append(*c.lookups, setLookup{name, es})
	}
	return es
}

// previousListener returns the listener the state in force compiled on
// the same port, when every listener setting its routes and virtual hosts
// capture is the same as l's (compiled with externalPort and tls): name,
// ports, TLS and ClientTraffic (whose compiled policy the new listener
// then takes over, so that the routes it lends keep pointing at the one
// in force). Nil when nothing can be reused.
func (c *compiler) previousListener(l *snapshot.Listener, externalPort int32, tls bool) *listenerRouter {
	if c.prev == nil || c.prev.router == nil {
		return nil
	}
	old := c.prev.router.ports[l.Port]
	if old == nil || old.name != l.Name || old.externalPort != externalPort || old.tls != tls ||
		old.clientTrafficSrc != l.ClientTraffic {
		return nil
	}
	return old
}

// reusableVHost returns the virtual host old compiled from the same input
// as in, when every endpoint set its routes looked up resolves to the same
// compiled set in the new state; it registers the routes' metric handles
// in the new state, as compiling them would have. Nil when in must be
// compiled.
func (c *compiler) reusableVHost(in *snapshot.VirtualHost, old *listenerRouter) *vhost {
	if old == nil {
		return nil
	}
	vh := old.byHostname(in.Hostname)
	if vh == nil || (in != vh.src && !sameVirtualHostInput(in, vh.src)) {
		return nil
	}
	for _, l := range vh.sets {
		if c.st.sets.get(l.name) != l.set {
			return nil
		}
	}
	for _, r := range vh.routes {
		key := statsKey{r.listener, r.id}
		if _, ok := c.st.stats[key]; !ok {
			c.st.stats[key] = r.stats
		}
	}
	return vh
}

// byHostname is the virtual host a listener holds for exactly hostname
// (no wildcard matching), nil for none.
func (lr *listenerRouter) byHostname(h string) *vhost {
	switch {
	case h == "*":
		return lr.any
	case strings.HasPrefix(h, "*."):
		vh, _ := lr.wild.get(h[2:])
		return vh
	}
	vh, _ := lr.exact.get(h)
	return vh
}

// compactLookups is lookups with each name once (its results agree: one
// compile resolves a name to one set).
func compactLookups(lookups []setLookup) []setLookup {
	if len(lookups) < 2 {
		return lookups
	}
	slices.SortFunc(lookups, func(a, b setLookup) int { return strings.Compare(a.name, b.name) })
	return slices.Clip(slices.CompactFunc(lookups, func(a, b setLookup) bool { return a.name == b.name }))
}

// patchListener compiles l's virtual hosts into lr by patching old's,
// when few of them changed: old's indexes are copied, and only the hosts
// whose input is new, those gone and those whose routes looked up an
// endpoint set compiled anew (changedSets) are compiled or dropped. With
// 10,000 hosts on a listener and one changed, building the indexes anew
// was most of a swap. It reports false, having done nothing, when l's
// hosts are not in hostname order or more than a quarter of them changed
// (the full compile then runs); an error is a host that does not compile.
func (c *compiler) patchListener(l *snapshot.Listener, lr, old *listenerRouter) (bool, error) {
	hosts, prev := l.VirtualHosts, old.src
	if prev == nil || len(old.vhosts) != len(prev) {
		return false, nil
	}
	budget := len(hosts)/4 + 4
	if lists.Same(hosts, prev) {
		return c.patchSetUsers(l, lr, old, budget)
	}
	vhosts := make([]*vhost, len(hosts))
	var compileAt []int  // indexes in hosts of the hosts to compile
	var removed []string // hostnames of old's hosts gone
	i, j := 0, 0
	// shared says hosts[i-1] is prev[j-1] itself. Hosts are shared
	// between snapshots and never modified: the very host of the state
	// in force is taken without a look at it (reading each of 10,000
	// hosts scattered over the heap was most of the walk), and two of
	// them in a row are in prev's order, hostname order.
	shared := false
	for i < len(hosts) || j < len(prev) {
		if i < len(hosts) && j < len(prev) && hosts[i] == prev[j] {
			if i > 0 && !shared && hosts[i-1].Hostname >= hosts[i].Hostname {
				return false, nil
			}
			if ov := old.vhosts[j]; !c.looksUpChangedSet(ov) {
				vhosts[i] = ov
			} else {
				c.keepStats(ov)
				compileAt = append(compileAt, i)
			}
			i, j, shared = i+1, j+1, true
			if len(compileAt)+len(removed) > budget {
				return false, nil
			}
			continue
		}
		shared = false
		if i > 0 && i < len(hosts) && hosts[i-1].Hostname >= hosts[i].Hostname {
			return false, nil
		}
		switch {
		case j == len(prev) || (i < len(hosts) && hosts[i].Hostname < prev[j].Hostname):
			compileAt = append(compileAt, i)
			i++
		case i == len(hosts) || prev[j].Hostname < hosts[i].Hostname:
			removed = append(removed, prev[j].Hostname)
			j++
		default:
			ov := old.vhosts[j]
			if sameVirtualHostInput(hosts[i], prev[j]) && !c.looksUpChangedSet(ov) {
				vhosts[i] = ov
			} else {
				c.keepStats(ov)
				compileAt = append(compileAt, i)
			}
			i++
			j++
		}
		if len(compileAt)+len(removed) > budget {
			return false, nil
		}
	}
	compiled := make([]*vhost, len(compileAt))
	for k, at := range compileAt {
		vh, err := c.compileVHost(hosts[at], lr)
		if err != nil {
			return false, fmt.Errorf("listener %s host %q: %w", l.Name, hosts[at].Hostname, err)
		}
		compiled[k] = vh
	}
	lr.exact, lr.wild, lr.any = old.exact.patched(), old.wild.patched(), old.any
	for _, h := range removed {
		lr.drop(h)
	}
	for k, at := range compileAt {
		lr.put(compiled[k])
		vhosts[at] = compiled[k]
	}
	lr.src, lr.vhosts = hosts, vhosts
	return true, nil
}

// patchSetUsers is patchListener for the very host list old compiled (an
// endpoint refresh): only the hosts that look up an endpoint set compiled
// anew are compiled again, found through old's index of set users rather
// than by a look at every host (at 10,000 hosts, that look was most of a
// proxy's endpoint refresh).
func (c *compiler) patchSetUsers(l *snapshot.Listener, lr, old *listenerRouter, budget int) (bool, error) {
	users := old.setUsers()
	var at []int
	for name := range c.changedSets {
		at = append(at, users.hosts[name]...)
	}
	if len(at) > budget {
		return false, nil
	}
	slices.Sort(at)
	at = slices.Compact(at)
	hosts := l.VirtualHosts
	compiled := make([]*vhost, len(at))
	for k, i := range at {
		c.keepStats(old.vhosts[i])
		vh, err := c.compileVHost(hosts[i], lr)
		if err != nil {
			return false, fmt.Errorf("listener %s host %q: %w", l.Name, hosts[i].Hostname, err)
		}
		compiled[k] = vh
	}
	vhosts := slices.Clone(old.vhosts)
	lr.exact, lr.wild, lr.any = old.exact.patched(), old.wild.patched(), old.any
	for k, i := range at {
		lr.put(compiled[k])
		vhosts[i] = compiled[k]
	}
	lr.src, lr.vhosts = hosts, vhosts
	// The same hosts with the same routes look up the same sets.
	lr.users.Store(users)
	return true, nil
}

// setUsers indexes a listener's compiled hosts (lr.vhosts) by the names of
// the endpoint sets their routes looked up: hosts[name] lists the indexes
// of those that looked name up, in order. It is made from the hosts once,
// and handed on to a listener compiled from the very same host list.
type setUsers struct {
	hosts map[string][]int
}

// setUsers is lr's index of set users, made on first use. Only compiles,
// which are serialized, read or make it.
func (lr *listenerRouter) setUsers() *setUsers {
	if u := lr.users.Load(); u != nil {
		return u
	}
	u := &setUsers{hosts: map[string][]int{}}
	for i, vh := range lr.vhosts {
		for _, l := range vh.sets {
			u.hosts[l.name] = append(u.hosts[l.name], i)
		}
	}
	lr.users.Store(u)
	return u
}

// looksUpChangedSet reports whether any of vh's routes looked up an
// endpoint set that is not compiled to what it found (changedSets).
func (c *compiler) looksUpChangedSet(vh *vhost) bool {
	if len(c.changedSets) == 0 {
		return false
	}
	for _, l := range vh.sets {
		if c.changedSets[l.name] {
			return true
		}
	}
	return false
}

// keepStats registers the metric handles of vh's routes in the new state,
// for the same routes compiled again to keep them.
func (c *compiler) keepStats(vh *vhost) {
	for _, r := range vh.routes {
		key := statsKey{r.listener, r.id}
		if _, ok := c.st.stats[key]; !ok {
			c.st.stats[key] = r.stats
		}
	}
}

// unchangedListener reports whether old, the compatible listener of the
// state in force (previousListener), compiled the very hosts of l (the
// same list, as discovery's Assembler hands over an untouched listener's)
// and none of them looks up an endpoint set compiled anew: then old is
// l's compiled form as it is (compiled listeners are never modified). An
// HTTPS listener is compiled again: its certificates are the state's.
func (c *compiler) unchangedListener(l *snapshot.Listener, old *listenerRouter) bool {
	if old.tls || old.src == nil && len(l.VirtualHosts) > 0 || !lists.Same(l.VirtualHosts, old.src) || len(old.vhosts) != len(old.src) {
		return false
	}
	if len(c.changedSets) > 0 {
		users := old.setUsers()
		for name := range c.changedSets {
			if len(users.hosts[name]) > 0 {
				return false
			}
		}
	}
	return true
}
