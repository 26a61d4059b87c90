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
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// state is everything one applied snapshot compiles to. It is immutable
// once published; requests load it with one atomic load.
type state struct {
	version string
	router  *Router
	sets    map[string]*endpointSet
	certs   map[string]*parsedCert
	stats   map[string]*routeStats
	// listeners is the set of ports to bind, with whether each is TLS.
	listeners map[int32]bool
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
	backends        []backend
	cumWeights      []int64
	totalWeight     int64
	timeouts        snapshot.Timeouts
	maxBody         int64
	accessLogOff    bool
	stats           *routeStats
}

type parsedCert struct {
	certPEM, keyPEM string
	cert            *tls.Certificate
}

// certSet selects a certificate by SNI: exact, then the longest wildcard
// suffix, then the default. Several certificates bound to the same
// hostname (an HTTPS listener with more than one certificateRef shares the
// listener's hostname) are told apart by their own names: the first whose
// SANs cover the SNI wins, else the first of them.
type certSet struct {
	exact map[string][]*tls.Certificate
	wild  map[string][]*tls.Certificate
	def   []*tls.Certificate
}

func (c *certSet) get(serverName string) *tls.Certificate {
	h := strings.ToLower(strings.TrimSuffix(serverName, "."))
	if h != "" {
		if crts, ok := c.exact[h]; ok {
			return pickBySAN(crts, h)
		}
		for i := 1; i < len(h); i++ {
			if h[i] == '.' {
				if crts, ok := c.wild[h[i+1:]]; ok {
					return pickBySAN(crts, h)
				}
			}
		}
	}
	return pickBySAN(c.def, h)
}

// pickBySAN returns the first certificate whose leaf covers serverName,
// else the first one (nil for none).
func pickBySAN(crts []*tls.Certificate, serverName string) *tls.Certificate {
	if len(crts) == 0 {
		return nil
	}
	if len(crts) > 1 && serverName != "" {
		for _, crt := range crts {
			if crt.Leaf != nil && crt.Leaf.VerifyHostname(serverName) == nil {
				return crt
			}
		}
	}
	return crts[0]
}

// compile validates a snapshot and builds its state. prev (may be nil)
// lends parsed certificates, endpoint load-balancer state and metric
// handles so they survive swaps.
func compile(s *snapshot.Snapshot, prev *state, m *metrics) (*state, error) {
	if err := snapshot.Validate(s); err != nil {
		return nil, err
	}
	version, err := snapshot.Version(s)
	if err != nil {
		return nil, err
	}
	st := &state{
		version:   version,
		router:    &Router{ports: make(map[int32]*listenerRouter, len(s.Listeners))},
		sets:      make(map[string]*endpointSet, len(s.EndpointSets)),
		certs:     make(map[string]*parsedCert, len(s.Certificates)),
		stats:     map[string]*routeStats{},
		listeners: make(map[int32]bool, len(s.Listeners)),
	}
	for i := range s.EndpointSets {
		var old *endpointSet
		if prev != nil {
			old = prev.sets[s.EndpointSets[i].Name]
		}
		st.sets[s.EndpointSets[i].Name] = newEndpointSet(&s.EndpointSets[i], old)
	}
	for _, c := range s.Certificates {
		if prev != nil {
			if pc := prev.certs[c.Name]; pc != nil && pc.certPEM == c.CertPEM && pc.keyPEM == c.KeyPEM {
				st.certs[c.Name] = pc
				continue
			}
		}
		crt, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("certificate %q: %w", c.Name, err)
		}
		if crt.Leaf == nil && len(crt.Certificate) > 0 {
			// SNI selection among certificates sharing a hostname reads the leaf.
			if leaf, err := x509.ParseCertificate(crt.Certificate[0]); err == nil {
				crt.Leaf = leaf
			}
		}
		st.certs[c.Name] = &parsedCert{certPEM: c.CertPEM, keyPEM: c.KeyPEM, cert: &crt}
	}
	for li := range s.Listeners {
		l := &s.Listeners[li]
		ext := l.ExternalPort
		if ext == 0 {
			ext = l.Port
		}
		lr := &listenerRouter{
			name:         l.Name,
			port:         l.Port,
			externalPort: ext,
			tls:          l.Protocol == snapshot.ProtocolHTTPS,
			exact:        map[string]*vhost{},
			wild:         map[string]*vhost{},
		}
		lr.notFound = &route{id: "", listener: l.Name, port: l.Port, stats: st.routeStats(prev, m, l.Name, "")}
		if lr.tls {
			cs := &certSet{exact: map[string][]*tls.Certificate{}, wild: map[string][]*tls.Certificate{}}
			for _, sc := range l.TLS.Certificates {
				crt := st.certs[sc.Certificate].cert
				switch {
				case sc.Hostname == "":
					cs.def = append(cs.def, crt)
				case strings.HasPrefix(sc.Hostname, "*."):
					cs.wild[sc.Hostname[2:]] = append(cs.wild[sc.Hostname[2:]], crt)
				default:
					cs.exact[sc.Hostname] = append(cs.exact[sc.Hostname], crt)
				}
			}
			lr.certs = cs
		}
		for vi := range l.VirtualHosts {
			vh, err := st.compileVHost(&l.VirtualHosts[vi], lr, prev, m)
			if err != nil {
				return nil, fmt.Errorf("listener %s host %q: %w", l.Name, l.VirtualHosts[vi].Hostname, err)
			}
			switch h := vh.hostname; {
			case h == "*":
				lr.any = vh
			case strings.HasPrefix(h, "*."):
				lr.wild[h[2:]] = vh
			default:
				lr.exact[h] = vh
			}
		}
		st.router.ports[l.Port] = lr
		st.listeners[l.Port] = lr.tls
	}
	return st, nil
}

func (st *state) routeStats(prev *state, m *metrics, listener, id string) *routeStats {
	key := listener + "\x00" + id
	if rs := st.stats[key]; rs != nil {
		return rs
	}
	var rs *routeStats
	if prev != nil {
		rs = prev.stats[key]
	}
	if rs == nil {
		rs = m.newRouteStats(listener, id)
	}
	st.stats[key] = rs
	return rs
}

func (st *state) compileVHost(in *snapshot.VirtualHost, lr *listenerRouter, prev *state, m *metrics) (*vhost, error) {
	vh := &vhost{
		hostname:    in.Hostname,
		singleLabel: in.SingleLabelWildcard && strings.HasPrefix(in.Hostname, "*."),
		routes:      make([]*route, 0, len(in.Routes)),
		exact:       map[string][]int32{},
		prefix:      map[string][]int32{},
	}
	for i := range in.Routes {
		r, err := st.compileRoute(&in.Routes[i], lr, prev, m)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", in.Routes[i].ID, err)
		}
		idx := int32(len(vh.routes))
		vh.routes = append(vh.routes, r)
		switch {
		case r.path == nil:
			vh.prefix[""] = append(vh.prefix[""], idx)
		case r.path.Type == snapshot.PathExact:
			vh.exact[r.path.Value] = append(vh.exact[r.path.Value], idx)
		case r.path.Type == snapshot.PathPrefix:
			vh.prefix[r.prefix] = append(vh.prefix[r.prefix], idx)
			if len(r.prefix) > vh.maxPrefix {
				vh.maxPrefix = len(r.prefix)
			}
		default:
			vh.regex = append(vh.regex, idx)
		}
	}
	return vh, nil
}

func (st *state) compileRoute(in *snapshot.Route, lr *listenerRouter, prev *state, m *metrics) (*route, error) {
	r := &route{
		id:           in.ID,
		listener:     lr.name,
		port:         lr.port,
		extPort:      lr.externalPort,
		tls:          lr.tls,
		method:       in.Match.Method,
		path:         in.Match.Path,
		reqHdr:       compileHeaderMod(in.RequestHeaders),
		respHdr:      compileHeaderMod(in.ResponseHeaders),
		redirect:     in.Redirect,
		rewrite:      in.Rewrite,
		cors:         compileCORS(in.CORS),
		direct:       in.DirectResponse,
		maxBody:      in.MaxRequestBodyBytes,
		accessLogOff: in.AccessLogOff,
		stats:        st.routeStats(prev, m, lr.name, in.ID),
	}
	if in.Timeouts != nil {
		r.timeouts = *in.Timeouts
	}
	if p := in.Match.Path; p != nil {
		switch p.Type {
		case snapshot.PathPrefix:
			r.prefix = normalizePrefix(p.Value)
		case snapshot.PathRegularExpression:
			re, err := regexp.Compile("^(?:" + p.Value + ")$")
			if err != nil {
				return nil, err
			}
			r.pathRE = re
		}
	}
	for _, h := range in.Match.Headers {
		hm := headerMatch{name: http.CanonicalHeaderKey(h.Name), exact: h.Value}
		if h.Type == snapshot.MatchRegularExpression {
			re, err := regexp.Compile(h.Value)
			if err != nil {
				return nil, err
			}
			hm.re = re
		}
		r.headers = append(r.headers, hm)
	}
	for _, q := range in.Match.QueryParams {
		qm := queryMatch{name: q.Name, exact: q.Value}
		if q.Type == snapshot.MatchRegularExpression {
			re, err := regexp.Compile(q.Value)
			if err != nil {
				return nil, err
			}
			qm.re = re
		}
		r.query = append(r.query, qm)
	}
	for _, mi := range in.Mirrors {
		r.mirrors = append(r.mirrors, mirror{set: st.sets[mi.EndpointSet], num: mi.Numerator, denom: mi.Denominator})
	}
	for _, b := range in.Backends {
		cb := backend{invalid: b.Invalid, reqHdr: compileHeaderMod(b.RequestHeaders), respHdr: compileHeaderMod(b.ResponseHeaders)}
		if !b.Invalid {
			cb.set = st.sets[b.EndpointSet]
			if cb.set == nil {
				return nil, fmt.Errorf("unknown endpoint set %q", b.EndpointSet)
			}
		}
		r.totalWeight += int64(b.Weight)
		r.backends = append(r.backends, cb)
		r.cumWeights = append(r.cumWeights, r.totalWeight)
	}
	return r, nil
}

// ports returns the sorted listener ports of a state.
func (st *state) ports() []int32 {
	out := make([]int32, 0, len(st.listeners))
	for p := range st.listeners {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
