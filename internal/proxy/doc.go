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

// Package proxy is the data plane: it serves user traffic from routing
// snapshots received over discovery and holds no Kubernetes credentials.
//
// Where things live:
//
//   - Starting and lifecycle: admin.go (Run, health, readiness, metrics
//     endpoints), options.go (Options and their defaults), dataplane.go
//     (DataPlane: Apply, Shutdown), listeners.go (binding, serving and
//     draining listener sockets, switching a port's kind), drain.go (the
//     termination drain), snapshotfile.go (a static snapshot file).
//   - Compiling a snapshot: compile.go walks listeners, hosts and routes
//     into an immutable state; each filter's compile half lives with its
//     apply half (below); router.go holds the routing table, its lookup
//     and the match compile; certs.go the certificates and their SNI
//     selection; clientauth.go the client certificate validation of HTTPS
//     ports.
//   - The request path: serve.go documents its steps in order and holds
//     the entry points (portHandler for net/http, DataPlane.serve) and the
//     exchange that records each response; normalize.go (path
//     normalisation), misdirected.go (421 for a Host another HTTPS
//     listener of the port serves), cors.go, redirect.go, direct.go,
//     balance.go (backend and endpoint pick), rewrite.go, hopheaders.go
//     (what crosses a hop), headers.go (header modifiers), mirror.go,
//     forward.go (build request, round trip, copy response), retry.go
//     (retry policy, replayable bodies), upgrade.go (WebSocket), body.go
//     (request body wrappers: timeout, limit, send timer).
//   - The fast path for HTTP/1.1 GET and HEAD and bodies of known
//     length: fastpath.go (the connection loop), fasthead.go (head scan
//     and parse), fastbody.go (a small body, read whole), streamedbody.go
//     (a larger one, streamed, relayed in the kernel by the lean client),
//     expectcontinue.go (the 100 Continue a client waits for, on both
//     sides), fastwriter.go, splicebody.go (a large response body relayed in the
//     kernel),
//     clientwatch.go (noticing a client that leaves), handoff.go (passing
//     a connection to net/http), fasttls.go (the TLS handshake of HTTPS
//     listeners, ALPN h2 to net/http), h2cdirect.go (a whole h2c preface
//     straight to net/http's HTTP/2 server).
//   - The stream path (TLS, TCP and UDP listeners; serve.go sets it
//     beside the request path): stream.go (compile, route pick by SNI),
//     stream_sni.go (the ClientHello peek through crypto/tls),
//     stream_tcp.go (accept loop, splice, idle watch, drain),
//     stream_udp.go and stream_udp_*.go (sessions).
//   - Upstream clients: h1client.go (the lean HTTP/1.1 client),
//     leanbody.go (the small request bodies it sends, read whole first) and
//     h1response.go (its response heads), headerfields.go (the field-line
//     parser both fast parsers share), headlimit.go, h1reap.go, reaper.go
//     and peerclosed_*.go (idle upstream connections, a peer's close),
//     transports.go (net/http transports per upstream pool key),
//     upstreamtls.go (TLS to backends: verification, pool keys).
//   - Observability: metrics.go, accesslog.go.
package proxy
