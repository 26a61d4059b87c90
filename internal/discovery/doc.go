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

// Package discovery is the control channel between the controller and its
// proxies: the leader-only mTLS snapshot stream and the proxy's client of
// it and of SVID bootstrap. The names manifests, proxies and the controller
// must agree on (Services, ports, token audience, CA Secret, trust
// ConfigMap, leader label) are in internal/names.
//
// Shared by both ends: auth.go (wire version, message caps, SPIFFE IDs of
// ServiceAccounts, scope conversion, the Authorizer) and flags.go (the
// proxy's flags).
//
// The server (controller side), one concern per file:
//   - server.go: options, construction, TLS and gRPC serving, ServeGRPC.
//   - server_publish.go: Publish, the wire form of each scope's snapshot,
//     and the delta between two of them.
//   - server_subscribe.go: admitting a stream (leader, peer SVID,
//     Subscribe, authorization).
//   - server_stream.go: one subscribed stream: full or delta out, one
//     message in flight, Ack/Nack/NodeStatus in.
//   - server_conn.go: the per-proxy state (registration by node id).
//   - gatewaystate.go: what the proxies' acks and bound ports say about a
//     Gateway (Programmed gating) and the change signal for status.
//   - server_metrics.go: the coxswain_discovery_* metrics.
//
// The client (proxy side):
//   - client.go: options, construction, state and readiness.
//   - client_run.go: the loop: bootstrap when needed, stream, reconnect.
//   - backoff.go: the jittered retry delays.
//   - client_bootstrap.go: SVID bootstrap and the SVID source the stream's
//     mTLS uses (renewal at half-life).
//   - client_stream.go: one stream: subscribe, report bound ports, receive.
//   - client_apply.go: reassembling full and delta snapshots, Ack or Nack.
//   - client_metrics.go: the coxswain_proxy_discovery_* metrics.
//
// Sub-packages: bootstrap is the controller side of SVID bootstrap (every
// replica); controlplane wires the servers, the CA and the leader label
// into `serve controller`; leaderlabel keeps the leader pod label.
package discovery
