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
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxResponseHeaderBytes is the default cap on an upstream's
// response head. nginx answers 502 beyond proxy_buffer_size (4 or 8 KiB);
// this default is generous for backends with large cookie sets and still
// keeps one hostile head from growing the heap without bound.
const DefaultMaxResponseHeaderBytes = 1 << 20

// Options configure a DataPlane. The zero value is usable.
type Options struct {
	// BindHost is the address listeners bind ("" is every address; tests
	// use "127.0.0.1").
	BindHost string
	// AccessLog receives one JSON line per request, per connection of a
	// TLS or TCP listener and per UDP session; nil disables it.
	AccessLog io.Writer
	// Registry receives the data plane's metrics; nil keeps them private.
	Registry prometheus.Registerer
	// Readiness, when set, turns ready after the first successful Apply.
	Readiness *Readiness
	// Logger for operational messages; nil discards them.
	Logger *slog.Logger
	// DrainTimeout bounds the graceful drain of a removed listener
	// (default 10s).
	DrainTimeout time.Duration
	// MaxIdleConnsPerHost of the upstream pools (default 1024).
	MaxIdleConnsPerHost int
	// DialTimeout bounds connecting to an upstream, and then its TLS
	// handshake for an endpoint set with upstream TLS (default 5s).
	DialTimeout time.Duration
	// UpstreamIdleTimeout is how long an idle upstream connection is kept
	// for reuse (default 90s).
	UpstreamIdleTimeout time.Duration
	// MaxResponseHeaderBytes caps the response head an upstream may send
	// (default 1 MiB); a larger one is answered 502.
	MaxResponseHeaderBytes int64
	// MirrorConcurrency bounds in-flight mirrored requests (default 128);
	// more are dropped.
	MirrorConcurrency int
	// MirrorBodyCap is the largest request body copied to mirrors (default
	// 64 KiB); requests with larger bodies are not mirrored.
	MirrorBodyCap int
	// MirrorTimeout bounds one mirrored request (default 10s).
	MirrorTimeout time.Duration
	// RetryBodyBufferBytes is the largest request body kept in memory so
	// that a route with a retry policy can send it again (default 64
	// KiB); a request with a larger body is streamed and never retried.
	RetryBodyBufferBytes int
	// DisableFastPath serves every HTTP and HTTPS request with net/http's
	// server (which then runs the TLS handshake) instead of the fast path
	// for HTTP/1.1 GET and HEAD and small bodies of known length
	// (fastbody.go, fasttls.go).
	DisableFastPath bool
	// DisableLeanClient sends every request through net/http's Transport
	// instead of the lean HTTP/1.1 client used for bodiless GET and HEAD
	// and small request bodies (leanbody.go).
	DisableLeanClient bool
	// HeaderTimeout bounds the arrival of one request head, from its first
	// byte (default 30s); a head that takes longer is dropped. On a TLS
	// listener it bounds, from the accept, the ClientHello and a
	// terminating route's handshake.
	HeaderTimeout time.Duration
	// RequestBodyTimeout bounds each read of a request body, as nginx's
	// client_body_timeout (default 60s); a request whose body stalls
	// longer is answered 408.
	RequestBodyTimeout time.Duration
	// BodyDrainTimeout bounds how long an HTTP/1 connection may spend
	// sending the rest of a body the proxy did not read (a 404, a
	// redirect, a direct response) before its next request; past it the
	// connection is closed (default 10s).
	BodyDrainTimeout time.Duration
	// EscapedSlashes is what a request whose path holds %2F or %5C gets
	// (default EscapedSlashRedirect).
	EscapedSlashes EscapedSlashAction
	// StreamIdleTimeout closes a TLS or TCP listener's connection on which
	// no bytes moved either way for this long (default 1h, as Envoy's
	// tcp_proxy idle_timeout). UDP sessions have their listener's
	// UDPIdleTimeout instead.
	StreamIdleTimeout time.Duration
	// UDPMaxSessions bounds the sessions of one UDP listener (default
	// 16384); a datagram that would open one more is dropped and counted.
	UDPMaxSessions int
	// RateLimitRedis is the address ("host:port") of the Redis that global
	// rate limits count in; empty leaves them without a store (each fails
	// open or closed as its policy says).
	RateLimitRedis string
	// TracerProvider, when set, traces every HTTP request with one server
	// span, the client's W3C trace context as its parent, and sends the
	// span's trace context upstream (tracing.go); nil turns tracing off
	// and leaves the client's traceparent as it came.
	TracerProvider trace.TracerProvider

	// reapInterval overrides how often idle upstream connections are
	// reaped (tests).
	reapInterval time.Duration
	// goroutineIdleWait makes the fast path's parked sessions wait on a
	// goroutine each, as they do off Linux, instead of in an idle lot
	// (tests of both ways).
	goroutineIdleWait bool
	// listen binds TCP listeners, whose accepted connections get TCP
	// keep-alive probes only when keepAlive is true (default listenTCP;
	// tests inject failures).
	listen func(network, address string, keepAlive bool) (net.Listener, error)
	// listenPacket binds UDP listeners (default net.ListenPacket).
	listenPacket func(network, address string) (net.PacketConn, error)
}

// withDefaults fills in the documented default of every unset option.
func (opts Options) withDefaults() Options {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 10 * time.Second
	}
	if opts.MaxIdleConnsPerHost <= 0 {
		opts.MaxIdleConnsPerHost = 1024
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.UpstreamIdleTimeout <= 0 {
		opts.UpstreamIdleTimeout = 90 * time.Second
	}
	if opts.reapInterval <= 0 {
		opts.reapInterval = reapInterval(opts.UpstreamIdleTimeout)
	}
	if opts.MaxResponseHeaderBytes <= 0 {
		opts.MaxResponseHeaderBytes = DefaultMaxResponseHeaderBytes
	}
	if opts.listen == nil {
		opts.listen = listenTCP
	}
	if opts.listenPacket == nil {
		opts.listenPacket = net.ListenPacket
	}
	if opts.StreamIdleTimeout <= 0 {
		opts.StreamIdleTimeout = time.Hour
	}
	if opts.UDPMaxSessions <= 0 {
		opts.UDPMaxSessions = 16384
	}
	if opts.MirrorConcurrency <= 0 {
		opts.MirrorConcurrency = 128
	}
	if opts.MirrorBodyCap <= 0 {
		opts.MirrorBodyCap = 64 << 10
	}
	if opts.MirrorTimeout <= 0 {
		opts.MirrorTimeout = 10 * time.Second
	}
	if opts.RetryBodyBufferBytes <= 0 {
		opts.RetryBodyBufferBytes = 64 << 10
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = 30 * time.Second
	}
	if opts.RequestBodyTimeout <= 0 {
		opts.RequestBodyTimeout = 60 * time.Second
	}
	if opts.BodyDrainTimeout <= 0 {
		opts.BodyDrainTimeout = 10 * time.Second
	}
	if opts.EscapedSlashes == "" {
		opts.EscapedSlashes = EscapedSlashRedirect
	}
	return opts
}
