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

package snapshot

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxDecodeBytes bounds a snapshot document (the discovery server→client
// cap).
const MaxDecodeBytes = 64 << 20

// Encode returns the canonical JSON encoding. Snapshots have no maps, so the
// same snapshot always encodes to the same bytes.
func Encode(s *Snapshot) ([]byte, error) {
	return json.Marshal(s)
}

// Version is the content hash of a snapshot: hex SHA-256 of Encode.
func Version(s *Snapshot) (string, error) {
	b, err := Encode(s)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Decode reads a snapshot from JSON or YAML, rejecting unknown fields, and
// validates it. A snapshot that fails here must never replace a good one.
func Decode(data []byte) (*Snapshot, error) {
	if len(data) > MaxDecodeBytes {
		return nil, fmt.Errorf("snapshot is %d bytes, above the %d byte limit", len(data), MaxDecodeBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("decode snapshot YAML: %w", err)
		}
		trimmed = j
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	s := &Snapshot{}
	if err := dec.Decode(s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode snapshot: trailing data after the document")
	}
	if err := Validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

// validHostname reports whether h is lowercase DNS labels joined by dots
// (each of letters, digits and inner hyphens), optionally after "*.": the
// regular expression hostnamePattern, without a regexp machine (a
// snapshot of 10,000 hosts spent 4 ms matching it; FuzzValidHostname
// checks they agree).
func validHostname(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for len(h) > 0 {
		label, rest, more := strings.Cut(h, ".")
		if !validLabel(label) || (more && rest == "") {
			return false
		}
		h = rest
	}
	return true
}

func validLabel(l string) bool {
	n := len(l)
	if n == 0 || !lowerAlnum(l[0]) || !lowerAlnum(l[n-1]) {
		return false
	}
	for i := 1; i < n-1; i++ {
		if c := l[i]; !lowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// Validate checks the invariants every consumer relies on: references
// resolve, names are unique, numbers are in range, regular expressions
// compile. It returns the first problem found.
func Validate(s *Snapshot) error { return validate(s, nil) }

// validated marks the parts of a snapshot an Assembler validated before,
// unchanged since and still valid (no endpoint set they name is gone):
// validate skips their own checks. hosts[i][j] is virtual host j of
// listener i, sets[i] endpoint set i. A listener with a hosts entry has
// unique hostnames by construction (one resource key each). Two sets
// marked one after the other were validated in that order, so they are
// in name order. sameCerts says the certificates are those of the
// snapshot validated before: a set marked then names none that is gone.
type validated struct {
	hosts     [][]bool
	sets      []bool
	sameCerts bool
}

func validate(s *Snapshot, known *validated) error {
	if s == nil {
		return fmt.Errorf("snapshot is nil")
	}
	switch s.Scope.Kind {
	case ScopeSharedPool:
	case ScopeGateway:
		if s.Scope.Namespace == "" || s.Scope.Name == "" {
			return fmt.Errorf("scope Gateway needs namespace and name")
		}
	default:
		return fmt.Errorf("scope kind %q is not SharedPool or Gateway", s.Scope.Kind)
	}
	sets := &endpointSetNames{sorted: s.EndpointSets}
	for i, es := range s.EndpointSets {
		if es == nil {
			return fmt.Errorf("endpointSets[%d] is null", i)
		}
		if known != nil && known.sets[i] && sets.byName == nil && (i == 0 || known.sets[i-1]) {
			// Validated, and after the set before it then too: not even
			// read (at 10,000 sets, a cache miss each).
			continue
		}
		if es.Name == "" {
			return fmt.Errorf("endpointSets[%d]: name is empty", i)
		}
		if sets.byName == nil && i > 0 && s.EndpointSets[i-1].Name >= es.Name {
			sets.index(i)
		}
		if sets.byName != nil {
			if sets.byName[es.Name] {
				return fmt.Errorf("endpointSets[%d]: duplicate name %q", i, es.Name)
			}
			sets.byName[es.Name] = true
		}
		if known != nil && known.sets[i] {
			continue
		}
		if err := validateUpstreamTLS(es.TLS); err != nil {
			return fmt.Errorf("endpointSets[%d] (%s): tls: %w", i, es.Name, err)
		}
		for j, ep := range es.Endpoints {
			if net.ParseIP(ep.Address) == nil {
				return fmt.Errorf("endpointSets[%d].endpoints[%d]: %q is not an IP address", i, j, ep.Address)
			}
			if !validPort(ep.Port) {
				return fmt.Errorf("endpointSets[%d].endpoints[%d]: port %d out of range", i, j, ep.Port)
			}
		}
	}
	certs := map[string]bool{}
	for i, c := range s.Certificates {
		if c.Name == "" || certs[c.Name] {
			return fmt.Errorf("certificates[%d]: empty or duplicate name %q", i, c.Name)
		}
		if c.CertPEM == "" || c.KeyPEM == "" {
			return fmt.Errorf("certificates[%d] %q: certPEM and keyPEM are required", i, c.Name)
		}
		certs[c.Name] = true
	}
	for i, es := range s.EndpointSets {
		if known != nil && known.sameCerts && known.sets[i] {
			continue
		}
		if es.TLS != nil && es.TLS.ClientCertificate != "" && !certs[es.TLS.ClientCertificate] {
			return fmt.Errorf("endpointSets[%d] (%s): tls.clientCertificate refers to unknown certificate %q", i, es.Name, es.TLS.ClientCertificate)
		}
	}
	// Listeners in order have each key once; others are checked by key.
	var ports map[string]bool
	if !listenersInOrder(s.Listeners) {
		ports = make(map[string]bool, len(s.Listeners))
	}
	for i := range s.Listeners {
		l := &s.Listeners[i]
		where := listenerAt{i, l.Name} // formatted only in an error
		if l.Name == "" {
			return fmt.Errorf("listeners[%d]: name is empty", i)
		}
		if !validPort(l.Port) {
			return fmt.Errorf("%s: port %d out of range", where, l.Port)
		}
		if l.ExternalPort != 0 && !validPort(l.ExternalPort) {
			return fmt.Errorf("%s: externalPort %d out of range", where, l.ExternalPort)
		}
		if ports != nil {
			pk := ListenerKey(l)
			if ports[pk] {
				return fmt.Errorf("%s: port %d is used by another %s listener", where, l.Port, transportOf(l.Protocol))
			}
			ports[pk] = true
		}
		var hosts []bool
		if known != nil {
			hosts = known.hosts[i]
		}
		if err := validateListener(l, certs, sets, hosts); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	for i, g := range s.Gateways {
		if g.Namespace == "" || g.Name == "" {
			return fmt.Errorf("gateways[%d]: namespace and name are required", i)
		}
		for _, p := range g.Ports {
			if !validPort(p) {
				return fmt.Errorf("gateways[%d]: port %d out of range", i, p)
			}
		}
	}
	return nil
}

// listenerAt names listeners[i] of a snapshot in an error.
type listenerAt struct {
	i    int
	name string
}

func (w listenerAt) String() string { return fmt.Sprintf("listeners[%d] (%s)", w.i, w.name) }

// endpointSetNames tells whether a snapshot has an endpoint set of a name:
// by a binary search of its list while that is in order by name, as a
// normalized snapshot's is (a map of every set, made at every change, was
// a quarter of patching one at 10,000 sets, in the controller and in every
// proxy), else through byName.
type endpointSetNames struct {
	sorted []*EndpointSet
	byName map[string]bool
}

// index makes byName, of the sets before first: the list is out of order
// (or names a set twice) from there.
func (n *endpointSetNames) index(first int) {
	n.byName = make(map[string]bool, len(n.sorted))
	for _, es := range n.sorted[:first] {
		n.byName[es.Name] = true
	}
}

func (n *endpointSetNames) has(name string) bool {
	if n.byName != nil {
		return n.byName[name]
	}
	_, found := slices.BinarySearchFunc(n.sorted, name, compareSetName)
	return found
}

// ListenerKey identifies a listener within a snapshot: its port, with
// "/udp" for UDP (a port has one TCP-protocol and one UDP listener at
// most). It is also the listener's resource key suffix.
func ListenerKey(l *Listener) string {
	if l.Protocol == ProtocolUDP {
		return strconv.Itoa(int(l.Port)) + "/udp"
	}
	return strconv.Itoa(int(l.Port))
}

func transportOf(p Protocol) string {
	if p == ProtocolUDP {
		return "UDP"
	}
	return "TCP"
}

// validateListener checks one listener's protocol-specific parts. A
// non-nil known says its hostnames are unique, and which of its virtual
// hosts were validated before (validated).
func validateListener(l *Listener, certs map[string]bool, sets *endpointSetNames, known []bool) error {
	switch l.Protocol {
	case ProtocolHTTP, ProtocolTCP, ProtocolUDP:
		if l.TLS != nil {
			return fmt.Errorf("%s listener has tls", l.Protocol)
		}
	case ProtocolHTTPS:
		if l.TLS == nil || len(l.TLS.Certificates) == 0 {
			return fmt.Errorf("HTTPS listener needs at least one certificate")
		}
	case ProtocolTLS:
	default:
		return fmt.Errorf("protocol %q is not HTTP, HTTPS, TLS, TCP or UDP", l.Protocol)
	}
	if l.TLS != nil {
		if cv := l.TLS.ClientValidation; cv != nil && strings.TrimSpace(cv.CAPEM) == "" {
			return fmt.Errorf("tls.clientValidation needs caPEM")
		}
		for j, sc := range l.TLS.Certificates {
			if !certs[sc.Certificate] {
				return fmt.Errorf("tls.certificates[%d] refers to unknown certificate %q", j, sc.Certificate)
			}
			if sc.Hostname != "" && !validHostname(sc.Hostname) {
				return fmt.Errorf("tls.certificates[%d]: invalid hostname %q", j, sc.Hostname)
			}
		}
	}
	if l.UDPIdleTimeout != 0 && l.Protocol != ProtocolUDP {
		return fmt.Errorf("udpIdleTimeout is set on a %s listener", l.Protocol)
	}
	if l.Protocol.Stream() {
		if len(l.VirtualHosts) > 0 {
			return fmt.Errorf("%s listener has virtualHosts", l.Protocol)
		}
		return validateStreamRoutes(l, sets)
	}
	if len(l.StreamRoutes) > 0 {
		return fmt.Errorf("%s listener has streamRoutes", l.Protocol)
	}
	var hosts map[string]bool
	if known == nil {
		hosts = make(map[string]bool, len(l.VirtualHosts))
	}
	for j, vh := range l.VirtualHosts {
		if vh == nil {
			return fmt.Errorf("virtualHosts[%d] is null", j)
		}
		if known != nil && known[j] {
			continue
		}
		if vh.Hostname != "*" && !validHostname(vh.Hostname) {
			return fmt.Errorf("virtualHosts[%d]: invalid hostname %q", j, vh.Hostname)
		}
		if known == nil {
			if hosts[vh.Hostname] {
				return fmt.Errorf("virtualHosts[%d]: duplicate hostname %q", j, vh.Hostname)
			}
			hosts[vh.Hostname] = true
		}
		for k := range vh.Routes {
			if err := validateRoute(&vh.Routes[k], sets); err != nil {
				return fmt.Errorf("host %q: routes[%d] (%s): %w", vh.Hostname, k, vh.Routes[k].ID, err)
			}
		}
	}
	return nil
}

// validateStreamRoutes checks the routes of a TLS, TCP or UDP listener.
func validateStreamRoutes(l *Listener, sets *endpointSetNames) error {
	if l.Protocol != ProtocolTLS && len(l.StreamRoutes) > 1 {
		return fmt.Errorf("%s listener has %d streamRoutes; at most one is allowed", l.Protocol, len(l.StreamRoutes))
	}
	hosts := map[string]bool{}
	for j := range l.StreamRoutes {
		r := &l.StreamRoutes[j]
		where := fmt.Sprintf("streamRoutes[%d] (%s)", j, r.ID)
		if r.ID == "" {
			return fmt.Errorf("streamRoutes[%d]: id is empty", j)
		}
		if l.Protocol == ProtocolTLS {
			if r.Hostname != "*" && !validHostname(r.Hostname) {
				return fmt.Errorf("%s: invalid hostname %q", where, r.Hostname)
			}
			if hosts[r.Hostname] {
				return fmt.Errorf("%s: duplicate hostname %q", where, r.Hostname)
			}
			hosts[r.Hostname] = true
			if r.Terminate && (l.TLS == nil || len(l.TLS.Certificates) == 0) {
				return fmt.Errorf("%s: a terminating route needs the listener's tls certificates", where)
			}
		} else if r.Hostname != "" || r.Terminate {
			return fmt.Errorf("%s: hostname and terminate are for TLS listeners only", where)
		}
		for i, b := range r.Backends {
			if b.Weight < 0 {
				return fmt.Errorf("%s: backends[%d]: weight %d is negative", where, i, b.Weight)
			}
			if b.RequestHeaders != nil || b.ResponseHeaders != nil {
				return fmt.Errorf("%s: backends[%d]: header modifiers are not allowed on a stream route", where, i)
			}
			if !b.Invalid && !sets.has(b.EndpointSet) {
				return fmt.Errorf("%s: backends[%d] refers to unknown endpoint set %q", where, i, b.EndpointSet)
			}
		}
	}
	return nil
}

func validateRoute(r *Route, sets *endpointSetNames) error {
	if r.ID == "" {
		return fmt.Errorf("id is empty")
	}
	if p := r.Match.Path; p != nil {
		switch p.Type {
		case PathExact, PathPrefix:
			if !strings.HasPrefix(p.Value, "/") {
				return fmt.Errorf("path %q must start with /", p.Value)
			}
		case PathRegularExpression:
			if _, err := regexp.Compile(p.Value); err != nil {
				return fmt.Errorf("path regex: %w", err)
			}
		default:
			return fmt.Errorf("path match type %q is unknown", p.Type)
		}
	}
	if r.Match.Method != "" && !ValidToken(r.Match.Method) {
		return fmt.Errorf("method %q is not an HTTP token", r.Match.Method)
	}
	for _, list := range [][]StringMatch{r.Match.Headers, r.Match.QueryParams} {
		for _, m := range list {
			if m.Name == "" {
				return fmt.Errorf("header or query match without a name")
			}
			switch m.Type {
			case MatchExact:
			case MatchRegularExpression:
				if _, err := regexp.Compile(m.Value); err != nil {
					return fmt.Errorf("match %q regex: %w", m.Name, err)
				}
			default:
				return fmt.Errorf("match %q: type %q is unknown", m.Name, m.Type)
			}
		}
	}
	for _, hm := range []*HeaderModifier{r.RequestHeaders, r.ResponseHeaders} {
		if err := validateHeaderModifier(hm); err != nil {
			return err
		}
	}
	if rd := r.Redirect; rd != nil {
		switch rd.StatusCode {
		case 301, 302, 303, 307, 308:
		default:
			return fmt.Errorf("redirect status %d is not 301, 302, 303, 307 or 308", rd.StatusCode)
		}
		if rd.Scheme != "" && rd.Scheme != "http" && rd.Scheme != "https" {
			return fmt.Errorf("redirect scheme %q is not http or https", rd.Scheme)
		}
		if rd.Port != 0 && !validPort(rd.Port) {
			return fmt.Errorf("redirect port %d out of range", rd.Port)
		}
		if err := validatePathModifier(rd.Path, r.Match.Path); err != nil {
			return err
		}
	}
	if rw := r.Rewrite; rw != nil {
		if err := validatePathModifier(rw.Path, r.Match.Path); err != nil {
			return err
		}
	}
	for _, m := range r.Mirrors {
		if !sets.has(m.EndpointSet) {
			return fmt.Errorf("mirror refers to unknown endpoint set %q", m.EndpointSet)
		}
		if m.Numerator < 0 || m.Denominator < 0 || (m.Denominator > 0 && m.Numerator > m.Denominator) || (m.Denominator == 0 && m.Numerator != 0) {
			return fmt.Errorf("mirror fraction %d/%d is invalid", m.Numerator, m.Denominator)
		}
	}
	if d := r.DirectResponse; d != nil && (d.StatusCode < 200 || d.StatusCode > 599) {
		return fmt.Errorf("direct response status %d out of range", d.StatusCode)
	}
	if rt := r.Retry; rt != nil {
		if rt.Attempts < 0 || rt.Attempts > MaxRetryAttempts {
			return fmt.Errorf("retry attempts %d out of range 0-%d", rt.Attempts, MaxRetryAttempts)
		}
		for _, c := range rt.Codes {
			if c < 400 || c > 599 {
				return fmt.Errorf("retry code %d is not in 400-599", c)
			}
		}
	}
	if r.MaxRequestBodyBytes < 0 {
		return fmt.Errorf("maxRequestBodyBytes is negative")
	}
	for i, b := range r.Backends {
		if b.Weight < 0 {
			return fmt.Errorf("backends[%d]: weight %d is negative", i, b.Weight)
		}
		if b.Invalid {
			continue
		}
		if !sets.has(b.EndpointSet) {
			return fmt.Errorf("backends[%d] refers to unknown endpoint set %q", i, b.EndpointSet)
		}
		if err := validateHeaderModifier(b.RequestHeaders); err != nil {
			return err
		}
		if err := validateHeaderModifier(b.ResponseHeaders); err != nil {
			return err
		}
	}
	return nil
}

func validatePathModifier(pm *PathModifier, match *PathMatch) error {
	if pm == nil {
		return nil
	}
	switch pm.Type {
	case ReplaceFullPath:
	case ReplacePrefixMatch:
		if match == nil || match.Type != PathPrefix {
			return fmt.Errorf("ReplacePrefixMatch needs a PathPrefix match")
		}
	case ReplaceRegex:
		if pm.Pattern != "" {
			if _, err := regexp.Compile(pm.Pattern); err != nil {
				return fmt.Errorf("ReplaceRegex pattern: %w", err)
			}
			break
		}
		if match == nil || match.Type != PathRegularExpression {
			return fmt.Errorf("ReplaceRegex needs a RegularExpression match")
		}
	default:
		return fmt.Errorf("path modifier type %q is unknown", pm.Type)
	}
	return nil
}

func validateHeaderModifier(hm *HeaderModifier) error {
	if hm == nil {
		return nil
	}
	for _, h := range append(append([]Header{}, hm.Set...), hm.Add...) {
		if !ValidToken(h.Name) {
			return fmt.Errorf("header name %q is invalid", h.Name)
		}
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return fmt.Errorf("header %q value contains a control character", h.Name)
		}
	}
	for _, n := range hm.Remove {
		if !ValidToken(n) {
			return fmt.Errorf("header name %q is invalid", n)
		}
	}
	return nil
}

func validPort(p int32) bool { return p >= 1 && p <= 65535 }

// MaxRetryAttempts bounds Retry.Attempts: a route cannot multiply one
// request into an unbounded number of upstream tries.
const MaxRetryAttempts = 10

// validateUpstreamTLS checks an endpoint set's TLS settings (nil is none).
func validateUpstreamTLS(u *UpstreamTLS) error {
	if u == nil {
		return nil
	}
	if !validHostname(u.ServerName) || strings.HasPrefix(u.ServerName, "*") {
		return fmt.Errorf("serverName %q is not a hostname", u.ServerName)
	}
	if u.CAPEM != "" && u.SystemRoots {
		return fmt.Errorf("caPEM and systemRoots are exclusive")
	}
	for i, san := range u.SubjectAltNames {
		if (san.Hostname == "") == (san.URI == "") {
			return fmt.Errorf("subjectAltNames[%d]: exactly one of hostname and uri", i)
		}
	}
	return nil
}

// ValidToken reports whether s is an HTTP token (RFC 9110): a valid header
// name or method. The translator checks user input with it, so what it
// compiles always passes Validate.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

// Resource is one independently versioned piece of a snapshot, the unit of
// a discovery delta. Key is "listener|<port>" ("listener|<port>/udp" for UDP), "endpoints|<name>",
// "cert|<name>" or "gateway|<ns>/<name>"; Body is its canonical JSON.
type Resource struct {
	Key  string `json:"key"`
	Body []byte `json:"body"`
}

// Resources splits a snapshot into keyed resources, sorted by key.
func Resources(s *Snapshot) ([]Resource, error) {
	var out []Resource
	add := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out = append(out, Resource{Key: key, Body: b})
		return nil
	}
	for i := range s.Listeners {
		if err := add("listener|"+ListenerKey(&s.Listeners[i]), &s.Listeners[i]); err != nil {
			return nil, err
		}
	}
	for _, es := range s.EndpointSets {
		if err := add("endpoints|"+es.Name, es); err != nil {
			return nil, err
		}
	}
	for i := range s.Certificates {
		if err := add("cert|"+s.Certificates[i].Name, &s.Certificates[i]); err != nil {
			return nil, err
		}
	}
	for i := range s.Gateways {
		g := &s.Gateways[i]
		if err := add("gateway|"+g.Namespace+"/"+g.Name, g); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Assemble rebuilds and validates a snapshot from its resources (the
// inverse of Resources). Unknown key kinds are an error.
func Assemble(scope Scope, resources []Resource) (*Snapshot, error) {
	s := &Snapshot{Scope: scope}
	sorted := append([]Resource(nil), resources...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	for _, r := range sorted {
		kind, _, ok := strings.Cut(r.Key, "|")
		if !ok {
			return nil, fmt.Errorf("resource key %q has no kind", r.Key)
		}
		var err error
		switch kind {
		case "listener":
			var l Listener
			err = strictUnmarshal(r.Body, &l)
			s.Listeners = append(s.Listeners, l)
		case "endpoints":
			e := new(EndpointSet)
			err = strictUnmarshal(r.Body, e)
			s.EndpointSets = append(s.EndpointSets, e)
		case "cert":
			var c Certificate
			err = strictUnmarshal(r.Body, &c)
			s.Certificates = append(s.Certificates, c)
		case "gateway":
			var g GatewayRef
			err = strictUnmarshal(r.Body, &g)
			s.Gateways = append(s.Gateways, g)
		default:
			return nil, fmt.Errorf("resource key %q: unknown kind %q", r.Key, kind)
		}
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", r.Key, err)
		}
	}
	Normalize(s)
	if err := Validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ListenerLess is the listener order of a snapshot: by port, the UDP
// listener of a port after its TCP-protocol one.
func ListenerLess(a, b *Listener) bool { return CompareListeners(a, b) < 0 }

// CompareListeners is ListenerLess as a comparison (0: the same key).
func CompareListeners(a, b *Listener) int {
	if c := cmp.Compare(a.Port, b.Port); c != 0 {
		return c
	}
	au, bu := a.Protocol == ProtocolUDP, b.Protocol == ProtocolUDP
	switch {
	case au == bu:
		return 0
	case bu:
		return -1
	}
	return 1
}

// listenersInOrder reports whether ls is in ListenerLess order with no key
// twice: each listener's key is then found by searchListener, and none is
// another's. At 1,000 Gateways, the key of every listener, made to look
// the keys up in a map, was most of what publishing a change allocated.
func listenersInOrder(ls []Listener) bool {
	for i := 1; i < len(ls); i++ {
		if CompareListeners(&ls[i-1], &ls[i]) >= 0 {
			return false
		}
	}
	return true
}

// searchListener finds the listener of key lk in ls, which is in order
// (listenersInOrder).
func searchListener(ls []Listener, lk string) (int, bool) {
	ports, udp := strings.CutSuffix(lk, "/udp")
	if ports == "" || len(ports) > 1 && ports[0] == '0' || strings.ContainsFunc(ports, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false // not a key ListenerKey makes
	}
	port, err := strconv.ParseInt(ports, 10, 32)
	if err != nil {
		return 0, false
	}
	want := Listener{Port: int32(port)}
	if udp {
		want.Protocol = ProtocolUDP
	}
	i := sort.Search(len(ls), func(i int) bool { return CompareListeners(&ls[i], &want) >= 0 })
	return i, i < len(ls) && CompareListeners(&ls[i], &want) == 0
}

// Normalize sorts the lists whose order carries no meaning (listeners by
// port, virtual hosts by hostname, endpoint sets, certificates and gateways
// by name, endpoints by address and port). Route order is never touched.
func Normalize(s *Snapshot) {
	normalizeTop(s)
	for i := range s.Listeners {
		sortVirtualHosts(s.Listeners[i].VirtualHosts)
		sortStreamRoutes(s.Listeners[i].StreamRoutes)
	}
	for _, es := range s.EndpointSets {
		if es != nil { // refused by validation
			sortEndpoints(es.Endpoints)
		}
	}
}

// normalizeTop sorts the snapshot's own lists: listeners, endpoint sets,
// certificates and gateways.
func normalizeTop(s *Snapshot) {
	sort.SliceStable(s.Listeners, func(i, j int) bool { return ListenerLess(&s.Listeners[i], &s.Listeners[j]) })
	sort.SliceStable(s.EndpointSets, func(i, j int) bool {
		a, b := s.EndpointSets[i], s.EndpointSets[j]
		return b != nil && (a == nil || a.Name < b.Name) // a null set (refused by validation) first
	})
	sort.SliceStable(s.Certificates, func(i, j int) bool { return s.Certificates[i].Name < s.Certificates[j].Name })
	sort.SliceStable(s.Gateways, func(i, j int) bool {
		if s.Gateways[i].Namespace != s.Gateways[j].Namespace {
			return s.Gateways[i].Namespace < s.Gateways[j].Namespace
		}
		return s.Gateways[i].Name < s.Gateways[j].Name
	})
}

// compareSetName orders an endpoint set by its name against name.
func compareSetName(es *EndpointSet, name string) int { return strings.Compare(es.Name, name) }

// compareHostname orders a virtual host by its hostname against h.
func compareHostname(vh *VirtualHost, h string) int { return strings.Compare(vh.Hostname, h) }

// compareHostnames orders virtual hosts by hostname.
func compareHostnames(a, b *VirtualHost) int { return strings.Compare(a.Hostname, b.Hostname) }

// sortVirtualHosts sorts vh by hostname; a null host (refused by
// validation) sorts first.
func sortVirtualHosts(vh []*VirtualHost) {
	sort.SliceStable(vh, func(a, b int) bool {
		return vh[b] != nil && (vh[a] == nil || vh[a].Hostname < vh[b].Hostname)
	})
}

func sortStreamRoutes(sr []StreamRoute) {
	sort.SliceStable(sr, func(a, b int) bool { return sr[a].Hostname < sr[b].Hostname })
}

func sortEndpoints(eps []Endpoint) {
	sort.SliceStable(eps, func(a, b int) bool {
		if eps[a].Address != eps[b].Address {
			return eps[a].Address < eps[b].Address
		}
		return eps[a].Port < eps[b].Port
	})
}
