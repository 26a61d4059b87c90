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
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// state is everything one applied snapshot compiles to. It is immutable
// once published; requests load it with one atomic load.
type state struct {
	version string
	router  *router
	sets    endpointSets
	certs   map[string]*parsedCert
	stats   map[statsKey]*routeStats
	// listeners is the set of sockets to bind, with the kind of each;
	// sameListeners says it is the state before's, the very map (a
	// snapshot with its listeners at the same addresses, of the same
	// kinds): nothing to bind or unbind.
	listeners     map[listenerAddr]listenerKind
	sameListeners bool
	// streams are the compiled TLS, TCP and UDP listeners (stream.go);
	// router holds the HTTP and HTTPS ones.
	streams map[listenerAddr]*streamListener
	// source is the snapshot compiled (never mutated after Apply) and
	// applied when it was published, for /debug/snapshot (debug.go).
	source  *snapshot.Snapshot
	applied time.Time
}

// route is one compiled snapshot route.
type route struct {
	id       string
	listener string
	port     int32
	extPort  int32
	tls      bool

	method  string
	headers []headerMatch
	query   []queryMatch
	path    *snapshot.PathMatch
	prefix  string
	pathRE  *regexp.Regexp

	reqHdr, respHdr *headerMod
	redirect        *snapshot.Redirect
	rewrite         *snapshot.URLRewrite
	mirrors         []mirror
	cors            *corsPolicy
	direct          *snapshot.DirectResponse
	weightedBackends
	timeouts     snapshot.Timeouts
	retry        *retryPolicy
	maxBody      int64
	accessLogOff bool
	// omitClientCert keeps X-SSL-Client-Cert out (OmitClientCertificate).
	omitClientCert bool
	// requireClientCert: RequireClientCertificate (policies.go).
	requireClientCert bool
	stats             *routeStats
	// policies are the policy layer's filters (policies.go).
	policies routePolicies
}

// compile validates a snapshot and builds its state. prev (may be nil)
// lends parsed certificates, endpoint load-balancer state and metric
// handles so they survive swaps.
func compile(s *snapshot.Snapshot, prev *state, m *metrics) (*state, error) {
	return compileEnv(s, "", prev, m, nil)
}

// compileEnv is compile with the policy filters' long-lived state (nil in
// tests that need none: remote JWKS, global rate limits and external
// authorization then fail as their policies say). A non-empty version
// names a snapshot its source has validated already (discovery, which
// computed that version while reassembling it); otherwise the snapshot is
// validated here and named by snapshot.Version.
func compileEnv(s *snapshot.Snapshot, version string, prev *state, m *metrics, env *policyEnv) (*state, error) {
	if version == "" {
		if err := snapshot.Validate(s); err != nil {
			return nil, err
		}
		v, err := snapshot.Version(s)
		if err != nil {
			return nil, err
		}
		version = v
	}
	certs, err := compileCerts(s.Certificates, prev)
	if err != nil {
		return nil, err
	}
	var validated *snapshot.Snapshot
	if prev != nil {
		validated = prev.source
	}
	if err := validateBackendPolicies(s, validated); err != nil {
		return nil, err
	}
	sets, changedSets := compileEndpointSets(s.EndpointSets, prev, certs)
	st := &state{
		version: version,
		source:  s,
		router:  &router{ports: make(map[int32]*listenerRouter, len(s.Listeners))},
		sets:    sets,
		certs:   certs,
		stats:   make(map[statsKey]*routeStats, statsHint(prev)),
		streams: map[listenerAddr]*streamListener{},
	}
	if sameListenerAddrs(s, prev) {
		// At 1,000 Gateways of the shared pool, 1,000 listeners: a map of
		// them, and binding, unbinding and listing their ports, at every
		// route change.
		st.listeners, st.sameListeners = prev.listeners, true
	} else {
		st.listeners = make(map[listenerAddr]listenerKind, len(s.Listeners))
	}
	c := &compiler{st: st, prev: prev, m: m, env: env, changedSets: changedSets}
	for li := range s.Listeners {
		l := &s.Listeners[li]
		addr := addrOf(l)
		if !st.sameListeners {
			st.listeners[addr] = kindOf(l.Protocol)
		}
		if l.Protocol.Stream() {
			sl, err := c.compileStreamListener(l)
			if err != nil {
				return nil, err
			}
			st.streams[addr] = sl
			continue
		}
		lr, err := c.compileListener(l)
		if err != nil {
			return nil, err
		}
		st.router.ports[l.Port] = lr
	}
	return st, nil
}

// sameListenerAddrs reports whether s's listeners are at the addresses,
// and of the kinds, of the listeners of prev (its map, which a caller
// that modifies a snapshot it applied cannot change).
func sameListenerAddrs(s *snapshot.Snapshot, prev *state) bool {
	if prev == nil || prev.listeners == nil || len(prev.listeners) != len(s.Listeners) {
		return false
	}
	for i := range s.Listeners {
		l := &s.Listeners[i]
		if k, ok := prev.listeners[addrOf(l)]; !ok || k != kindOf(l.Protocol) {
			return false
		}
	}
	return true // no address twice in a valid snapshot: the same set
}

// compiler compiles the listeners of one snapshot into st, with the state
// in force (prev, may be nil) lending its metric handles.
type compiler struct {
	st   *state
	prev *state
	m    *metrics
	env  *policyEnv
	// lookups, while a virtual host compiles, collects the endpoint sets
	// its routes look up (set, reuse.go).
	lookups *[]setLookup
	// changedSets names the endpoint sets not compiled to prev's
	// (compileEndpointSets).
	changedSets map[string]bool
}

// compileListener compiles one listener: its certificates by SNI and its
// virtual hosts by hostname.
func (c *compiler) compileListener(l *snapshot.Listener) (*listenerRouter, error) {
	ext := l.ExternalPort
	if ext == 0 {
		ext = l.Port
	}
	tls := l.Protocol == snapshot.ProtocolHTTPS
	old := c.previousListener(l, ext, tls)
	if old != nil && c.unchangedListener(l, old) {
		// Taken as it is, with nothing made for it first: at 2,000
		// listeners a router and a not-found route each were 600 KB a
		// change. Its not-found route's metric handles go on.
		if key := (statsKey{l.Name, ""}); c.st.stats[key] == nil {
			c.st.stats[key] = old.notFound.stats
		}
		return old, nil
	}
	lr := &listenerRouter{
		name:         l.Name,
		port:         l.Port,
		externalPort: ext,
		tls:          tls,
	}
	lr.notFound = &route{id: "", listener: l.Name, port: l.Port, stats: c.routeStats(l.Name, "")}
	lr.clientTrafficSrc = l.ClientTraffic
	if old != nil {
		lr.clientTraffic = old.clientTraffic
	} else {
		ct, err := compileClientTraffic(l.ClientTraffic)
		if err != nil {
			return nil, fmt.Errorf("listener %s: clientTraffic: %w", l.Name, err)
		}
		lr.clientTraffic = ct
	}
	if lr.tls {
		lr.certs = compileCertSet(l.TLS.Certificates, c.st.certs)
		lr.hosts = compileListenerHosts(l.TLS.Certificates)
		if cv := l.TLS.ClientValidation; cv != nil {
			lr.clientTLS = compileClientValidation(cv, lr)
		} else {
			lr.sniClientTLS = compileSNIClientValidation(l.TLS.Certificates, lr)
		}
	}
	if old != nil {
		if patched, err := c.patchListener(l, lr, old); err != nil {
			return nil, err
		} else if patched {
			return lr, nil
		}
	}
	if old != nil {
		// Sized like the last: at 10,000 hosts, growing them was a
		// quarter of a listener's compile.
		lr.exact, lr.wild = newHostTable(old.exact.n), newHostTable(old.wild.n)
	} else {
		lr.exact, lr.wild = newHostTable(0), newHostTable(0)
	}
	lr.vhosts = make([]*vhost, len(l.VirtualHosts))
	for vi, in := range l.VirtualHosts {
		vh := c.reusableVHost(in, old)
		if vh == nil {
			var err error
			if vh, err = c.compileVHost(in, lr); err != nil {
				return nil, fmt.Errorf("listener %s host %q: %w", l.Name, in.Hostname, err)
			}
		}
		lr.put(vh)
		lr.vhosts[vi] = vh
	}
	if slices.IsSortedFunc(l.VirtualHosts, func(a, b *snapshot.VirtualHost) int { return strings.Compare(a.Hostname, b.Hostname) }) {
		lr.src = l.VirtualHosts
	}
	return lr, nil
}

// put indexes vh by its hostname.
func (lr *listenerRouter) put(vh *vhost) {
	switch h := vh.hostname; {
	case h == "*":
		lr.any = vh
	case strings.HasPrefix(h, "*."):
		lr.wild.put(h[2:], vh)
	default:
		lr.exact.put(h, vh)
	}
}

// drop removes the virtual host of hostname h from the index.
func (lr *listenerRouter) drop(h string) {
	switch {
	case h == "*":
		lr.any = nil
	case strings.HasPrefix(h, "*."):
		lr.wild.del(h[2:])
	default:
		lr.exact.del(h)
	}
}

// statsKey names a route's metric handles: its listener and route ID.
type statsKey struct{ listener, id string }

// statsHint sizes a state's stats map like the one before it: a 10,000
// route snapshot spent a third of its compile growing the map.
func statsHint(prev *state) int {
	if prev == nil {
		return 0
	}
	return len(prev.stats)
}

// routeStats returns the metric handles of a (listener, route), from the
// state in force when it had them.
func (c *compiler) routeStats(listener, id string) *routeStats {
	key := statsKey{listener, id}
	if rs := c.st.stats[key]; rs != nil {
		return rs
	}
	var rs *routeStats
	if c.prev != nil {
		rs = c.prev.stats[key]
	}
	if rs == nil {
		rs = c.m.newRouteStats(listener, id)
	}
	c.st.stats[key] = rs
	return rs
}

// compileVHost compiles a virtual host's routes and indexes them by path
// match kind (router.go).
func (c *compiler) compileVHost(in *snapshot.VirtualHost, lr *listenerRouter) (*vhost, error) {
	vh := &vhost{
		src:         in,
		hostname:    in.Hostname,
		singleLabel: in.SingleLabelWildcard && strings.HasPrefix(in.Hostname, "*."),
		routes:      make([]*route, 0, len(in.Routes)),
	}
	var lookups []setLookup
	c.lookups = &lookups
	defer func() { c.lookups = nil }()
	for i := range in.Routes {
		r, err := c.compileRoute(&in.Routes[i], lr)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", in.Routes[i].ID, err)
		}
		idx := len(vh.routes)
		vh.routes = append(vh.routes, r)
		switch {
		case r.path == nil:
			vh.prefix.add("", idx)
		case r.path.Type == snapshot.PathExact:
			vh.exact.add(r.path.Value, idx)
		case r.path.Type == snapshot.PathPrefix:
			vh.prefix.add(r.prefix, idx)
			if len(r.prefix) > vh.maxPrefix {
				vh.maxPrefix = len(r.prefix)
			}
		default:
			vh.regex = append(vh.regex, idx)
		}
	}
	vh.sets = compactLookups(lookups)
	return vh, nil
}

// compileRoute compiles one route; each filter's compile half lives next
// to its apply half (headers.go, cors.go, mirror.go, balance.go; the match
// in router.go).
func (c *compiler) compileRoute(in *snapshot.Route, lr *listenerRouter) (*route, error) {
	r := &route{
		id:                in.ID,
		listener:          lr.name,
		port:              lr.port,
		extPort:           lr.externalPort,
		tls:               lr.tls,
		method:            in.Match.Method,
		path:              in.Match.Path,
		reqHdr:            compileHeaderMod(in.RequestHeaders),
		respHdr:           compileHeaderMod(in.ResponseHeaders),
		redirect:          in.Redirect,
		rewrite:           in.Rewrite,
		cors:              compileCORS(in.CORS),
		direct:            in.DirectResponse,
		maxBody:           in.MaxRequestBodyBytes,
		accessLogOff:      in.AccessLogOff,
		omitClientCert:    in.OmitClientCertificate,
		requireClientCert: in.RequireClientCertificate,
		stats:             c.routeStats(lr.name, in.ID),
	}
	if in.Timeouts != nil {
		r.timeouts = *in.Timeouts
	}
	r.retry = compileRetry(in.Retry)
	if err := compileRewrite(in.Rewrite, in.Redirect); err != nil {
		return nil, err
	}
	if err := r.compileMatch(&in.Match); err != nil {
		return nil, err
	}
	if err := c.compilePolicies(in, r, lr); err != nil {
		return nil, err
	}
	r.mirrors = compileMirrors(in.Mirrors, c.set)
	if err := r.compileBackends(in.Backends, c.set); err != nil {
		return nil, err
	}
	return r, nil
}

// addrs returns the listener sockets of a state, sorted by port, a
// port's TCP socket before its UDP one.
func (st *state) addrs() []listenerAddr {
	out := make([]listenerAddr, 0, len(st.listeners))
	for a := range st.listeners {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].port != out[j].port {
			return out[i].port < out[j].port
		}
		return !out[i].udp && out[j].udp
	})
	return out
}
