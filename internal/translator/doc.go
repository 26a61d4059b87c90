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

// Package translator turns one gathered set of Kubernetes objects into
// per-scope routing snapshots and the desired status of every object. It is
// pure: no client, clock, network or randomness; the same Resources always
// give the same Result, byte for byte.
//
// What lives where, roughly in the order Translate runs:
//
//   - resources.go: the input (Resources) and the output (Result).
//   - translator.go: Translate, the decisions the specs leave open, and the
//     final sort of the Result; index.go: the lookup tables of one run.
//   - gatewayclass.go: our GatewayClasses and their status.
//   - gateway.go: which Gateways are served, shared or dedicated, and their
//     status; listeners.go: listener validation, conflicts and route
//     kinds; certificates.go: listener certificateRefs and TLS Secrets;
//     internal_ports.go: the internal ports of shared Gateways;
//     addresses.go: status addresses read from the proxy Services.
//   - route.go: the route loop common to HTTPRoute and GRPCRoute;
//     httproute.go and grpcroute.go: compiling rules; matches.go: path,
//     method, header and query matches; filters.go: the filters both kinds
//     share and the HTTPRoute-only ones; backend.go: backendRefs, endpoint
//     sets and app protocols; referencegrants.go: cross-namespace grants.
//   - attach.go: parentRefs, allowedRoutes and hostname intersection
//     (hostnames.go) deciding which listeners a route attaches to.
//   - ingress.go: Ingresses into the shared pool's Ingress listeners;
//     ingress_annotations.go: annotations and IngressClass parameters.
//   - build.go: the snapshot builders; precedence.go: route order within a
//     virtual host; gateway_scopes.go: served Gateways into their scopes.
//   - services.go: which Services are Coxswain's own; features.go: the
//     supported features GatewayClass status advertises.
package translator
