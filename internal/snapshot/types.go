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

// Package snapshot holds the routing snapshot: the immutable, deterministic
// intermediate representation the translator produces, the discovery server
// ships and the proxy compiles. It has no maps, so its JSON encoding is
// canonical; every list is kept in a documented order by its producer.
//
// The package imports neither a Kubernetes client nor the network: the proxy
// depends on it, and the proxy never holds Kubernetes credentials.
package snapshot

import (
	"encoding/json"
	"fmt"
	"time"
)

// ScopeKind says which proxies a snapshot is for.
type ScopeKind string

const (
	// ScopeSharedPool is every Ingress and every Gateway not in dedicated mode.
	ScopeSharedPool ScopeKind = "SharedPool"
	// ScopeGateway is one dedicated Gateway.
	ScopeGateway ScopeKind = "Gateway"
)

// Scope names the subscribers of a snapshot.
type Scope struct {
	Kind      ScopeKind `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
}

// SharedPool is the scope of the shared proxies.
func SharedPool() Scope { return Scope{Kind: ScopeSharedPool} }

// GatewayScope is the scope of one dedicated Gateway.
func GatewayScope(namespace, name string) Scope {
	return Scope{Kind: ScopeGateway, Namespace: namespace, Name: name}
}

// String is "shared" or "gateway/<namespace>/<name>".
func (s Scope) String() string {
	if s.Kind == ScopeGateway {
		return "gateway/" + s.Namespace + "/" + s.Name
	}
	return "shared"
}

// Snapshot is everything one proxy needs to serve one scope.
//
// Ordering rules (producers must follow them; Normalize enforces the ones
// that carry no meaning): Listeners by Port (UDP after the TCP-protocol listener of a port); VirtualHosts and StreamRoutes by Hostname;
// Routes in match precedence order (first match wins — that order carries
// meaning and is never re-sorted); EndpointSets, Certificates and Gateways
// by name.
type Snapshot struct {
	Scope     Scope      `json:"scope"`
	Listeners []Listener `json:"listeners,omitempty"`
	// EndpointSets are pointers, as virtual hosts are: a set is never
	// modified once a snapshot holds it, so the next snapshot hands an
	// unchanged one on as it is (8 bytes a set, not the set, at every
	// change). A null set is refused by validation.
	EndpointSets []*EndpointSet `json:"endpointSets,omitempty"`
	Certificates []Certificate  `json:"certificates,omitempty"`
	// Gateways lists the Gateways this snapshot serves, with the generation
	// it was compiled from, so the data plane's acks can gate Programmed.
	Gateways []GatewayRef `json:"gateways,omitempty"`
}

// GatewayRef is one Gateway served by a snapshot.
type GatewayRef struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	// Ports are the ports the proxy binds for this Gateway (internal ports
	// in the shared pool).
	Ports []int32 `json:"ports,omitempty"`
}

// Protocol of a listener.
type Protocol string

// The listener protocols: plain HTTP and HTTPS terminated by the proxy
// (routed by VirtualHosts), and the stream protocols TLS, TCP and UDP
// (routed by StreamRoutes).
const (
	ProtocolHTTP  Protocol = "HTTP"
	ProtocolHTTPS Protocol = "HTTPS"
	// ProtocolTLS routes TLS connections by the SNI of their ClientHello,
	// without reading HTTP: a StreamRoute either passes the bytes through
	// unopened or terminates TLS with the listener's certificate for the
	// SNI and forwards the decrypted stream.
	ProtocolTLS Protocol = "TLS"
	// ProtocolTCP forwards TCP connections to the listener's one route.
	ProtocolTCP Protocol = "TCP"
	// ProtocolUDP forwards UDP datagrams, in sessions keyed by the client's
	// address, to the listener's one route.
	ProtocolUDP Protocol = "UDP"
)

// Stream reports whether p is routed by StreamRoutes (TLS, TCP, UDP).
func (p Protocol) Stream() bool {
	return p == ProtocolTLS || p == ProtocolTCP || p == ProtocolUDP
}

// Listener is one port the proxy binds. A port has at most one listener of
// a TCP protocol (HTTP, HTTPS, TLS, TCP) and at most one UDP listener.
type Listener struct {
	// Name is a stable, human-readable key, e.g. "gateway/ns/name/80" or
	// "ingress/80"; it labels metrics.
	Name string `json:"name"`
	// Port the proxy binds.
	Port int32 `json:"port"`
	// ExternalPort is the port clients use (the Gateway listener port); it
	// matters for redirects. Zero means the same as Port.
	ExternalPort int32    `json:"externalPort,omitempty"`
	Protocol     Protocol `json:"protocol"`
	// TLS is required for HTTPS listeners and for TLS listeners with a
	// terminating route; it is the only certificate source of both.
	TLS *ListenerTLS `json:"tls,omitempty"`
	// VirtualHosts route HTTP and HTTPS listeners.
	VirtualHosts []*VirtualHost `json:"virtualHosts,omitempty"`
	// StreamRoutes route TLS, TCP and UDP listeners. TLS: one per SNI
	// hostname, in any order (the proxy picks the exact hostname, else the
	// longest wildcard suffix, else "*"; a ClientHello that matches none is
	// refused with an unrecognized_name alert). TCP and UDP: at most one,
	// without a hostname; without one, connections are refused and
	// datagrams dropped.
	StreamRoutes []StreamRoute `json:"streamRoutes,omitempty"`
	// UDPIdleTimeout ends a UDP session after this long without a datagram
	// either way; zero means the proxy's default (10s). UDP only.
	UDPIdleTimeout Duration `json:"udpIdleTimeout,omitempty"`
	// ClientTraffic is how the port treats its clients (HTTP and HTTPS
	// listeners; ClientTrafficPolicy); nil keeps the proxy's defaults.
	ClientTraffic *ClientTraffic `json:"clientTraffic,omitempty"`
}

// StreamRoute is where the connections (or UDP sessions) of a stream
// listener go.
type StreamRoute struct {
	// ID appears in access logs and metrics, e.g.
	// "tlsroute/<ns>/<name>:0", "tcproute/<ns>/<name>:0".
	ID string `json:"id"`
	// Hostname is the SNI this route serves on a TLS listener: an exact
	// name, "*.example.com" (one or more labels in front of the suffix) or
	// "*" (any SNI, also none). Empty for TCP and UDP.
	Hostname string `json:"hostname,omitempty"`
	// Terminate (TLS only) completes the TLS handshake with the listener's
	// certificate for the SNI and forwards the plaintext; otherwise the
	// connection's bytes, ClientHello included, go to the backend as they
	// came (passthrough).
	Terminate bool `json:"terminate,omitempty"`
	// Backends are weighted, as for HTTP routes; a connection picks one by
	// weight. An Invalid backend's share of connections is refused, as is
	// every connection when no weight is set. Header modifiers are not
	// allowed here.
	Backends []Backend `json:"backends,omitempty"`
}

// ListenerTLS selects a certificate by SNI.
type ListenerTLS struct {
	// Certificates in selection order: the proxy picks the entry whose
	// hostname equals the SNI, else the most specific wildcard, else the
	// first entry with an empty hostname (the default).
	Certificates []SNICertificate `json:"certificates"`
	// ClientValidation, when set, asks every TLS client of the port for a
	// certificate and verifies it (Gateway spec.tls.frontend).
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
}

// ClientValidation is how a listener port verifies client certificates.
type ClientValidation struct {
	// CAPEM is the PEM bundle of the CAs a client certificate must chain
	// to.
	CAPEM string `json:"caPEM"`
	// AllowInsecureFallback accepts a connection whose client presents no
	// certificate, or one that does not verify (mode AllowInsecureFallback);
	// otherwise such a handshake fails (AllowValidOnly).
	AllowInsecureFallback bool `json:"allowInsecureFallback,omitempty"`
	// VerifyDepth > 0 bounds the verified chain: at most this many CA
	// certificates between the client's and the trusted root's issuer
	// (nginx's ssl_verify_depth; 1: the client certificate signed by a
	// trusted CA).
	VerifyDepth int32 `json:"verifyDepth,omitempty"`
}

// SNICertificate binds a hostname ("" for any, "*.example.com" for a
// wildcard) to a Certificate by name.
type SNICertificate struct {
	Hostname    string `json:"hostname,omitempty"`
	Certificate string `json:"certificate"`
	// ClientValidation, when set and the listener has none for the whole
	// port, verifies the client certificates of the handshakes this entry
	// is selected for (Ingress auth-tls-secret, per host).
	ClientValidation *ClientValidation `json:"clientValidation,omitempty"`
}

// Certificate is a PEM certificate chain and key.
type Certificate struct {
	// Name is "<namespace>/<secret>".
	Name    string `json:"name"`
	CertPEM string `json:"certPEM"`
	KeyPEM  string `json:"keyPEM"`
}

// VirtualHost is the routes for one hostname on one listener.
type VirtualHost struct {
	// Hostname is an exact name, a wildcard "*.example.com" (matches one or
	// more labels in front of the suffix, as Gateway API defines) or "*"
	// (any host). The proxy picks the exact host, else the longest
	// wildcard suffix, else "*". An empty route list still claims its
	// hostname: requests for it answer 404 (listener isolation).
	Hostname string  `json:"hostname"`
	Routes   []Route `json:"routes,omitempty"`
	// SingleLabelWildcard narrows a "*.suffix" Hostname to exactly one
	// label in front of the suffix (Ingress semantics: "*.example.com"
	// matches "a.example.com" but not "a.b.example.com"). Ignored for
	// other hostnames.
	SingleLabelWildcard bool `json:"singleLabelWildcard,omitempty"`
}

// Route is one match and what to do with it.
type Route struct {
	// ID appears in access logs and metrics, e.g.
	// "httproute/<ns>/<name>:<rule>" or "ingress/<ns>/<name>:<rule>.<path>".
	ID    string `json:"id"`
	Match Match  `json:"match"`

	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
	Redirect        *Redirect       `json:"redirect,omitempty"`
	Rewrite         *URLRewrite     `json:"rewrite,omitempty"`
	Mirrors         []Mirror        `json:"mirrors,omitempty"`
	CORS            *CORS           `json:"cors,omitempty"`
	// DirectResponse answers without a backend (e.g. 500 when every
	// backend of the rule is invalid).
	DirectResponse *DirectResponse `json:"directResponse,omitempty"`
	// Backends are weighted; a request picks one by weight. Ignored when
	// Redirect or DirectResponse is set.
	Backends []Backend `json:"backends,omitempty"`
	Timeouts *Timeouts `json:"timeouts,omitempty"`
	// Retry, when set, sends a failed request again (HTTPRoute rule retry).
	Retry *Retry `json:"retry,omitempty"`
	// MaxRequestBodyBytes > 0 answers 413 for larger bodies.
	MaxRequestBodyBytes int64 `json:"maxRequestBodyBytes,omitempty"`
	// AccessLogOff suppresses access log lines for this route.
	AccessLogOff bool `json:"accessLogOff,omitempty"`
	// OmitClientCertificate keeps a verified client certificate out of the
	// upstream request (no X-SSL-Client-Cert).
	OmitClientCertificate bool `json:"omitClientCertificate,omitempty"`
	// RequireClientCertificate answers 400 to a request whose connection
	// carries no verified client certificate (plain HTTP included), as
	// nginx does for ssl_verify_client: a client cannot reach a host that
	// validates certificates through another SNI or port.
	RequireClientCertificate bool `json:"requireClientCertificate,omitempty"`

	// The policy layer (policies.go), applied in the order serve.go
	// documents. ClientIP overrides the listener's detection for this
	// route (Ingress forwarded-for annotations).
	ClientIP    *ClientIPDetection `json:"clientIP,omitempty"`
	IPAccess    *IPAccess          `json:"ipAccess,omitempty"`
	RateLimit   *RateLimit         `json:"rateLimit,omitempty"`
	BasicAuth   *BasicAuth         `json:"basicAuth,omitempty"`
	JWT         *JWTAuth           `json:"jwt,omitempty"`
	ExtAuth     *ExtAuth           `json:"extAuth,omitempty"`
	Compression *Compression       `json:"compression,omitempty"`
	// PathNormalization of the upstream path (after any rewrite).
	PathNormalization *PathNormalization `json:"pathNormalization,omitempty"`
}

// PathMatchType as Gateway API defines it.
type PathMatchType string

// The path match types (PathMatch.Type).
const (
	PathExact             PathMatchType = "Exact"
	PathPrefix            PathMatchType = "PathPrefix"
	PathRegularExpression PathMatchType = "RegularExpression"
)

// StringMatchType for headers and query parameters.
type StringMatchType string

// The header and query parameter match types (StringMatch.Type).
const (
	MatchExact             StringMatchType = "Exact"
	MatchRegularExpression StringMatchType = "RegularExpression"
)

// Match is the conjunction of its parts. An empty Path matches everything
// (as PathPrefix "/").
type Match struct {
	Path        *PathMatch    `json:"path,omitempty"`
	Method      string        `json:"method,omitempty"`
	Headers     []StringMatch `json:"headers,omitempty"`
	QueryParams []StringMatch `json:"queryParams,omitempty"`
}

// PathMatch matches the request path. RegularExpression values are RE2
// and anchored to the whole path by the proxy. PathPrefix matches whole
// path segments ("/foo" matches "/foo" and "/foo/bar", not "/foobar").
type PathMatch struct {
	Type  PathMatchType `json:"type"`
	Value string        `json:"value"`
}

// StringMatch on a header (name case-insensitive) or query parameter (name
// case-sensitive). RegularExpression values are RE2, unanchored.
type StringMatch struct {
	Type  StringMatchType `json:"type"`
	Name  string          `json:"name"`
	Value string          `json:"value"`
}

// Header is a name and value.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// HeaderModifier as HTTPHeaderFilter defines it: Set replaces, Add
// appends, Remove deletes.
type HeaderModifier struct {
	Set    []Header `json:"set,omitempty"`
	Add    []Header `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// PathModifierType as HTTPPathModifier defines it, plus ReplaceRegex for
// Ingress rewrite-target with use-regex ("$1" refers to capture groups of
// the route's RegularExpression path match).
type PathModifierType string

// The path rewrites (PathModifier.Type).
const (
	ReplaceFullPath    PathModifierType = "ReplaceFullPath"
	ReplacePrefixMatch PathModifierType = "ReplacePrefixMatch"
	ReplaceRegex       PathModifierType = "ReplaceRegex"
)

// PathModifier rewrites the path.
type PathModifier struct {
	Type  PathModifierType `json:"type"`
	Value string           `json:"value"`
	// Pattern (ReplaceRegex only), when set, is the RE2 expression whose
	// matches in the path Value replaces ("$1" refers to its groups;
	// PathRewriteRegex); otherwise the route's RegularExpression path
	// match is used, anchored.
	Pattern string `json:"pattern,omitempty"`
}

// Redirect as HTTPRequestRedirectFilter defines it; the proxy derives an
// unset port exactly as the Gateway API spec says (well-known port of a
// changed scheme, else the listener's ExternalPort; omitted when it is the
// scheme's well-known port).
type Redirect struct {
	Scheme     string        `json:"scheme,omitempty"`
	Hostname   string        `json:"hostname,omitempty"`
	Port       int32         `json:"port,omitempty"`
	Path       *PathModifier `json:"path,omitempty"`
	StatusCode int           `json:"statusCode"`
}

// URLRewrite as HTTPURLRewriteFilter defines it.
type URLRewrite struct {
	Hostname string        `json:"hostname,omitempty"`
	Path     *PathModifier `json:"path,omitempty"`
}

// Mirror sends a copy of the request to an endpoint set, fire and forget.
// Percent in [0,100]; zero with Denominator zero means 100%.
type Mirror struct {
	EndpointSet string `json:"endpointSet"`
	// Numerator/Denominator is the fraction of requests mirrored; both zero
	// means all.
	Numerator   int32 `json:"numerator,omitempty"`
	Denominator int32 `json:"denominator,omitempty"`
}

// CORS as HTTPCORSFilter defines it.
type CORS struct {
	AllowOrigins     []string `json:"allowOrigins,omitempty"`
	AllowCredentials bool     `json:"allowCredentials,omitempty"`
	AllowMethods     []string `json:"allowMethods,omitempty"`
	AllowHeaders     []string `json:"allowHeaders,omitempty"`
	ExposeHeaders    []string `json:"exposeHeaders,omitempty"`
	MaxAge           int32    `json:"maxAge,omitempty"`
}

// DirectResponse answers with a fixed status and short body.
type DirectResponse struct {
	StatusCode int    `json:"statusCode"`
	Body       string `json:"body,omitempty"`
}

// Timeouts of a route. Zero means none.
type Timeouts struct {
	// Request bounds the whole exchange (HTTPRoute timeouts.request).
	Request Duration `json:"request,omitempty"`
	// Backend bounds one upstream attempt (timeouts.backendRequest).
	Backend Duration `json:"backend,omitempty"`
	// UpstreamRead bounds the wait for the first response byte (Ingress
	// read-timeout).
	UpstreamRead Duration `json:"upstreamRead,omitempty"`
	// UpstreamSend bounds writing the request upstream (send-timeout).
	UpstreamSend Duration `json:"upstreamSend,omitempty"`
}

// Retry says when a request is sent again to a backend of its route. A
// request is retried only while its body can be replayed: bodiless, or
// still within the replay buffer; one whose body was already streamed
// further is never sent twice.
type Retry struct {
	// Attempts is how many times a request may be retried after its first
	// try.
	Attempts int32 `json:"attempts"`
	// Backoff is the pause before each retry; zero retries at once.
	Backoff Duration `json:"backoff,omitempty"`
	// Codes are the response status codes (500-599) that are retried.
	Codes []int32 `json:"codes,omitempty"`
	// ConnectionErrors retries a try that could not connect, or whose
	// connection failed before a response head arrived.
	ConnectionErrors bool `json:"connectionErrors,omitempty"`
	// BackendTimeouts retries a try that exceeded Timeouts.Backend.
	BackendTimeouts bool `json:"backendTimeouts,omitempty"`
	// MaxBackoff > 0 makes the backoff exponential (Backoff doubling per
	// retry, capped at MaxBackoff); Jitter picks each pause uniformly in
	// [0, backoff] (full jitter).
	MaxBackoff Duration `json:"maxBackoff,omitempty"`
	Jitter     bool     `json:"jitter,omitempty"`
	// Budget caps the route's concurrent retries (RetryPolicy).
	Budget *RetryBudget `json:"budget,omitempty"`
}

// Backend is one weighted backendRef.
type Backend struct {
	// EndpointSet names an entry of Snapshot.EndpointSets. Empty when
	// Invalid is set.
	EndpointSet string `json:"endpointSet,omitempty"`
	Weight      int32  `json:"weight"`
	// Invalid backends take their share of traffic and answer 500, as the
	// Gateway API spec requires.
	Invalid         bool            `json:"invalid,omitempty"`
	RequestHeaders  *HeaderModifier `json:"requestHeaders,omitempty"`
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`
}

// AppProtocol of an upstream.
type AppProtocol string

// The upstream protocols (Service port appProtocol).
const (
	// AppProtocolHTTP is HTTP/1.1, the default.
	AppProtocolHTTP AppProtocol = ""
	// AppProtocolH2C speaks HTTP/2 over cleartext (kubernetes.io/h2c).
	AppProtocolH2C AppProtocol = "kubernetes.io/h2c"
	// AppProtocolWS is kubernetes.io/ws (WebSocket over HTTP/1.1).
	AppProtocolWS AppProtocol = "kubernetes.io/ws"
)

// LoadBalancer algorithm of an endpoint set.
type LoadBalancer string

// The load balancing algorithms; RoundRobin is the default.
const (
	RoundRobin   LoadBalancer = ""
	LeastRequest LoadBalancer = "LeastRequest"
)

// EndpointSet is the ready endpoints of one Service port.
type EndpointSet struct {
	// Name is "<namespace>/<service>:<port>" (the Service port number).
	Name         string       `json:"name"`
	AppProtocol  AppProtocol  `json:"appProtocol,omitempty"`
	LoadBalancer LoadBalancer `json:"loadBalancer,omitempty"`
	// Endpoints sorted by address then port. Empty means 503.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// TLS, when set, makes the proxy open TLS to every endpoint of the set
	// and verify it (BackendTLSPolicy); a request whose backend fails
	// verification is answered 502.
	TLS *UpstreamTLS `json:"tls,omitempty"`

	// CoxswainBackendPolicy (policies.go). Hash is the key of
	// ConsistentHash. ConnectTimeout bounds a dial (502 when exceeded);
	// IdleTimeout closes upstream connections idle this long. Zero keeps
	// the proxy's defaults.
	Hash           *HashPolicy       `json:"hash,omitempty"`
	ConnectTimeout Duration          `json:"connectTimeout,omitempty"`
	IdleTimeout    Duration          `json:"idleTimeout,omitempty"`
	CircuitBreaker *CircuitBreaker   `json:"circuitBreaker,omitempty"`
	Outlier        *OutlierDetection `json:"outlierDetection,omitempty"`
	HealthCheck    *HealthCheck      `json:"healthCheck,omitempty"`
}

// UpstreamTLS is how the proxy opens TLS toward a backend and verifies it.
type UpstreamTLS struct {
	// ServerName is the SNI the proxy sends, and the name the backend's
	// certificate must carry unless SubjectAltNames is set.
	ServerName string `json:"serverName"`
	// CAPEM is the PEM bundle of the CAs that may sign the backend's
	// certificate. SystemRoots uses the proxy's system trust store
	// instead. Neither (a policy whose CA references are all unusable)
	// fails every connection: the request gets a 5xx.
	CAPEM       string `json:"caPEM,omitempty"`
	SystemRoots bool   `json:"systemRoots,omitempty"`
	// SubjectAltNames, when set, replace ServerName in verification: the
	// certificate must carry one of them.
	SubjectAltNames []SubjectAltName `json:"subjectAltNames,omitempty"`
	// ClientCertificate names a Certificate the proxy presents to the
	// backend (the Gateway's spec.tls.backend.clientCertificateRef).
	ClientCertificate string `json:"clientCertificate,omitempty"`
}

// SubjectAltName is one name a backend certificate may carry: a DNS
// hostname (exact, or a "*." wildcard in the certificate matching it) or a
// URI.
type SubjectAltName struct {
	Hostname string `json:"hostname,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// Endpoint is one address and target port.
type Endpoint struct {
	Address string `json:"address"`
	Port    int32  `json:"port"`
}

// Duration marshals as a Go duration string ("1.5s").
type Duration time.Duration

// D is the time.Duration value.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes "1.5s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "1.5s" (or a number of nanoseconds).
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration must be a string like \"1.5s\": %w", err)
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// IsZero lets omitempty-style checks treat zero as unset.
func (d Duration) IsZero() bool { return d == 0 }
