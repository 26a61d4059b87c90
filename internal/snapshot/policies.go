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

// The policy layer's resolved settings. The translator resolves the policy
// CRDs (gateway.coxswain-labs.dev: IpAccessControl, RateLimit, BasicAuth,
// JwtAuth, CoxswainExternalAuth, Compression, RequestSizeLimit,
// PathRewriteRegex, RetryPolicy, CoxswainBackendPolicy, ClientTrafficPolicy)
// and the Ingress annotations that name them into these values: the
// snapshot carries what one route, endpoint set or listener does, never a
// policy object. Route policies sit on Route, backend policies on
// EndpointSet, client traffic on Listener.

// IPAccess allows or denies requests by client IP (after ClientIP
// detection). A client in Deny is refused; otherwise, when Allow is set, a
// client outside it is refused. Refused requests get 403.
type IPAccess struct {
	// Allow and Deny are CIDRs ("10.0.0.0/8", "2001:db8::/32"; a bare IP
	// is a /32 or /128).
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// RateLimitKeyType says what one token bucket counts.
type RateLimitKeyType string

// The rate limit keys.
const (
	// RateLimitKeyClientIP keeps a bucket per client IP.
	RateLimitKeyClientIP RateLimitKeyType = "ClientIP"
	// RateLimitKeyHeader keeps a bucket per value of a request header (a
	// request without it shares the "" bucket).
	RateLimitKeyHeader RateLimitKeyType = "Header"
	// RateLimitKeyPath keeps a bucket per request path.
	RateLimitKeyPath RateLimitKeyType = "Path"
	// RateLimitKeyRoute keeps one bucket for the whole route.
	RateLimitKeyRoute RateLimitKeyType = "Route"
)

// RateLimit admits Requests per Period per key (plus Burst); a request
// over the limit gets 429 with Retry-After. Every answer of a limited
// route carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset.
type RateLimit struct {
	// Name identifies the limit across proxies ("<namespace>/<policy>");
	// global counters are keyed by it.
	Name     string           `json:"name"`
	Requests int32            `json:"requests"`
	Period   Duration         `json:"period"`
	Burst    int32            `json:"burst,omitempty"`
	Key      RateLimitKeyType `json:"key"`
	// Header is the header of key type Header.
	Header string `json:"header,omitempty"`
	// Global shares the counters among every proxy replica, in the Redis
	// the proxy was started with (--rate-limit-redis); otherwise each
	// proxy counts on its own.
	Global bool `json:"global,omitempty"`
	// FailOpen admits requests while the global store cannot be reached
	// (or the proxy has none); otherwise they get 503.
	FailOpen bool `json:"failOpen,omitempty"`
}

// BasicAuth asks for HTTP Basic credentials (RFC 7617) checked against
// htpasswd entries; a request without valid ones gets 401 with
// WWW-Authenticate.
type BasicAuth struct {
	Realm string `json:"realm,omitempty"`
	// Users are htpasswd entries: bcrypt ("$2y$", "$2a$", "$2b$") or SHA-1
	// ("{SHA}" base64). Sorted by Name.
	Users []BasicAuthUser `json:"users"`
	// ForwardUsernameHeader, when set, sends the authenticated user name
	// upstream in this header (replacing any the client sent).
	ForwardUsernameHeader string `json:"forwardUsernameHeader,omitempty"`
	// StripAuthorization removes the Authorization header before the
	// request goes upstream.
	StripAuthorization bool `json:"stripAuthorization,omitempty"`
}

// BasicAuthUser is one htpasswd line.
type BasicAuthUser struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// JWTAuth verifies a JSON Web Token; a request without a valid one gets
// 401 (403 when the token verifies but its audience or issuer does not
// match is not distinguished: 401 either way, with WWW-Authenticate
// Bearer error="invalid_token").
type JWTAuth struct {
	// Issuer, when set, must equal the token's iss.
	Issuer string `json:"issuer,omitempty"`
	// Audiences, when set, must include one of the token's aud.
	Audiences []string `json:"audiences,omitempty"`
	// JWKS is an inline JSON Web Key Set; JWKSURI is fetched (and cached
	// for JWKSCacheDuration, refetched early when a token names an unknown
	// key id, at most once per 10s). Exactly one is set.
	JWKS              string   `json:"jwks,omitempty"`
	JWKSURI           string   `json:"jwksURI,omitempty"`
	JWKSCacheDuration Duration `json:"jwksCacheDuration,omitempty"`
	// ClockSkew is tolerated on exp and nbf.
	ClockSkew Duration `json:"clockSkew,omitempty"`
	// FromHeader is the header the token comes in (default Authorization,
	// with a "Bearer " prefix); FromCookie, when set, reads it from a
	// cookie instead.
	FromHeader string `json:"fromHeader,omitempty"`
	FromCookie string `json:"fromCookie,omitempty"`
	// ClaimsToHeaders copy claims (top-level names; string, number or
	// bool values) into upstream request headers, replacing client-sent
	// ones.
	ClaimsToHeaders []ClaimHeader `json:"claimsToHeaders,omitempty"`
	// AllowMissing lets a request without a token through (a present but
	// invalid token is still refused).
	AllowMissing bool `json:"allowMissing,omitempty"`
	// ForwardToken keeps the token in the upstream request; otherwise it
	// is removed.
	ForwardToken bool `json:"forwardToken,omitempty"`
}

// ClaimHeader copies one claim to one header.
type ClaimHeader struct {
	Claim  string `json:"claim"`
	Header string `json:"header"`
}

// ExtAuthMode is the protocol of an external authorization server.
type ExtAuthMode string

// The external authorization protocols.
const (
	// ExtAuthHTTP sends the request's method, path and selected headers to
	// the server (no body); a 2xx answer admits it, any other answer is
	// relayed to the client.
	ExtAuthHTTP ExtAuthMode = "HTTP"
	// ExtAuthGRPC calls envoy.service.auth.v3.Authorization/Check, so
	// existing servers (OPA-Envoy, Authorino) work unchanged.
	ExtAuthGRPC ExtAuthMode = "GRPC"
)

// ExtAuth asks an external server whether to admit each request. When the
// server cannot be reached, times out or answers garbage, the request gets
// 503 unless FailOpen.
type ExtAuth struct {
	Mode ExtAuthMode `json:"mode"`
	// EndpointSet is the authorization server (an entry of
	// Snapshot.EndpointSets; its TLS, if any, applies).
	EndpointSet string   `json:"endpointSet"`
	Timeout     Duration `json:"timeout,omitempty"`
	FailOpen    bool     `json:"failOpen,omitempty"`
	// PathPrefix (HTTP mode) is prepended to the request's path.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// RequestHeaders (HTTP mode) are the client headers sent to the server
	// (lower case; empty sends Authorization, Cookie and the request's
	// Host, Method and path as X-Forwarded-Host/-Method/-Uri).
	RequestHeaders []string `json:"requestHeaders,omitempty"`
	// UpstreamHeaders are the headers of an admitting answer copied into
	// the upstream request (gRPC mode: headers the server sets are always
	// copied).
	UpstreamHeaders []string `json:"upstreamHeaders,omitempty"`
	// ClientHeaders are the headers of a denying answer relayed to the
	// client (empty relays all but hop-by-hop ones).
	ClientHeaders []string `json:"clientHeaders,omitempty"`
	// MaxRequestBytes > 0 (gRPC mode) sends up to this much of the body.
	MaxRequestBytes int64 `json:"maxRequestBytes,omitempty"`
}

// Compression compresses response bodies the client accepts
// (Accept-Encoding), in the server's order of preference among
// Algorithms; a response already encoded, too small, of another content
// type, a 206/304/HEAD or an upgrade is passed as it is. Vary:
// Accept-Encoding is added to every answer that could have been
// compressed.
type Compression struct {
	// Algorithms are "br", "zstd" and "gzip", most preferred first.
	Algorithms []string `json:"algorithms"`
	// MinBytes is the smallest declared Content-Length compressed (a body
	// without one is compressed).
	MinBytes int64 `json:"minBytes,omitempty"`
	// ContentTypes are media types ("text/html") or type prefixes
	// ("text/"); empty means the proxy's defaults (text/*, JSON, JS, XML,
	// SVG, WASM).
	ContentTypes []string `json:"contentTypes,omitempty"`
}

// PathNormalization is the extra normalisation of a route's upstream path
// (Ingress path-normalize) or of a listener's request paths before routing
// (ClientTrafficPolicy).
type PathNormalization struct {
	// MergeSlashes turns "//" runs into one "/".
	MergeSlashes bool `json:"mergeSlashes,omitempty"`
	// DecodeSlashes turns %2F and %5C into "/" (listener: instead of the
	// proxy's default refusal; route: in the upstream path).
	DecodeSlashes bool `json:"decodeSlashes,omitempty"`
}

// ClientIPDetection derives the client IP from a forwarding header set by
// trusted hops: the header is read right to left, skipping addresses in
// TrustedCIDRs (and at most TrustedHops entries when TrustedHops > 0); the
// first untrusted address is the client. The header counts only when the
// connection's peer is itself trusted; otherwise the peer is the client.
type ClientIPDetection struct {
	// Header is X-Forwarded-For when empty; any other header is read as a
	// comma-separated list too (X-Real-IP: one address).
	Header       string   `json:"header,omitempty"`
	TrustedCIDRs []string `json:"trustedCIDRs,omitempty"`
	TrustedHops  int32    `json:"trustedHops,omitempty"`
}

// EncodedSlashAction is what the proxy does with %2F or %5C in a path.
type EncodedSlashAction string

// The encoded slash actions (empty: the proxy's --escaped-slashes
// setting, by default a 307 to the decoded path).
const (
	EncodedSlashRedirect EncodedSlashAction = "Redirect"
	EncodedSlashReject   EncodedSlashAction = "Reject"
	EncodedSlashDecode   EncodedSlashAction = "Decode"
	EncodedSlashKeep     EncodedSlashAction = "Keep"
)

// UnderscoreHeaderAction is what the proxy does with header fields whose
// names contain "_".
type UnderscoreHeaderAction string

// The underscore header actions (empty: Drop, nginx's default).
const (
	UnderscoreHeadersDrop   UnderscoreHeaderAction = "Drop"
	UnderscoreHeadersReject UnderscoreHeaderAction = "Reject"
	UnderscoreHeadersAllow  UnderscoreHeaderAction = "Allow"
)

// ClientTraffic is how a listener port treats its clients
// (ClientTrafficPolicy, or the controller's Ingress flags).
type ClientTraffic struct {
	// ProxyProtocol, when set, requires a PROXY protocol (v1 or v2) header
	// on every connection from TrustedCIDRs, and takes the client address
	// from it; a connection from elsewhere is closed.
	ProxyProtocol *ProxyProtocol `json:"proxyProtocol,omitempty"`
	// ClientIP is the detection every route of the listener uses unless
	// it has its own (Route.ClientIP).
	ClientIP *ClientIPDetection `json:"clientIP,omitempty"`
	// HTTP2 settings of the port's HTTP/2 server; zero fields keep the
	// proxy's defaults.
	HTTP2 *HTTP2Settings `json:"http2,omitempty"`
	// IdleTimeout closes a keep-alive connection idle this long;
	// RequestHeaderTimeout bounds reading a request head. Zero keeps the
	// proxy's defaults.
	IdleTimeout          Duration `json:"idleTimeout,omitempty"`
	RequestHeaderTimeout Duration `json:"requestHeaderTimeout,omitempty"`
	// Path normalisation before routing.
	MergeSlashes      bool                   `json:"mergeSlashes,omitempty"`
	EncodedSlashes    EncodedSlashAction     `json:"encodedSlashes,omitempty"`
	UnderscoreHeaders UnderscoreHeaderAction `json:"underscoreHeaders,omitempty"`
}

// ProxyProtocol is who may (and must) send a PROXY protocol header.
type ProxyProtocol struct {
	TrustedCIDRs []string `json:"trustedCIDRs"`
}

// HTTP2Settings of a listener's HTTP/2 server.
type HTTP2Settings struct {
	MaxConcurrentStreams        int32 `json:"maxConcurrentStreams,omitempty"`
	InitialStreamWindowSize     int32 `json:"initialStreamWindowSize,omitempty"`
	InitialConnectionWindowSize int32 `json:"initialConnectionWindowSize,omitempty"`
}

// The load balancing algorithms beyond RoundRobin and LeastRequest.
const (
	// Random picks an endpoint uniformly.
	Random LoadBalancer = "Random"
	// ConsistentHash picks by rendezvous hashing of EndpointSet.Hash's
	// key, so a key keeps its endpoint while the set changes little.
	ConsistentHash LoadBalancer = "ConsistentHash"
)

// HashPolicy is the key of ConsistentHash: exactly one of Header, Cookie
// or SourceIP.
type HashPolicy struct {
	Header string `json:"header,omitempty"`
	// Cookie hashes on a cookie; with CookieTTL > 0 the proxy sets the
	// cookie (a random value, Path CookiePath or "/", Max-Age CookieTTL,
	// HttpOnly) when the request has none: session affinity.
	Cookie     string   `json:"cookie,omitempty"`
	CookieTTL  Duration `json:"cookieTTL,omitempty"`
	CookiePath string   `json:"cookiePath,omitempty"`
	SourceIP   bool     `json:"sourceIP,omitempty"`
}

// CircuitBreaker bounds what one proxy sends to one endpoint set; a request
// over a bound gets 503 at once.
type CircuitBreaker struct {
	// MaxConnections bounds open upstream connections.
	MaxConnections int32 `json:"maxConnections,omitempty"`
	// MaxPendingRequests bounds requests waiting for a connection.
	MaxPendingRequests int32 `json:"maxPendingRequests,omitempty"`
	// MaxRequests bounds requests in flight.
	MaxRequests int32 `json:"maxRequests,omitempty"`
}

// OutlierDetection ejects an endpoint that fails in a row: Consecutive5xx
// answers of 500-599 (502, 503, 504 and connect failures count too), or
// ConsecutiveConnectFailures failed connects. An ejected endpoint gets no
// requests for BaseEjectionTime times the number of its ejections (capped
// at MaxEjectionTime), then returns. At most MaxEjectionPercent of a set's
// endpoints are ejected at once (at least one when the set has two or
// more).
type OutlierDetection struct {
	Consecutive5xx             int32    `json:"consecutive5xx,omitempty"`
	ConsecutiveConnectFailures int32    `json:"consecutiveConnectFailures,omitempty"`
	BaseEjectionTime           Duration `json:"baseEjectionTime"`
	MaxEjectionTime            Duration `json:"maxEjectionTime,omitempty"`
	MaxEjectionPercent         int32    `json:"maxEjectionPercent"`
}

// HealthCheck probes every endpoint of a set with HTTP GET; an endpoint
// that failed UnhealthyThreshold probes in a row gets no requests until
// it passes HealthyThreshold in a row. While every endpoint is unhealthy
// the proxy uses them all (panic mode), rather than answer 503.
type HealthCheck struct {
	Path               string   `json:"path"`
	Hostname           string   `json:"hostname,omitempty"`
	Interval           Duration `json:"interval"`
	Timeout            Duration `json:"timeout"`
	HealthyThreshold   int32    `json:"healthyThreshold"`
	UnhealthyThreshold int32    `json:"unhealthyThreshold"`
	// ExpectedStatuses are the passing codes; empty means 200-399.
	ExpectedStatuses []int32 `json:"expectedStatuses,omitempty"`
}

// RetryBudget caps the retries in flight of a route at Percent of its
// requests in flight, but always allows MinConcurrent.
type RetryBudget struct {
	Percent       int32 `json:"percent"`
	MinConcurrent int32 `json:"minConcurrent,omitempty"`
}
