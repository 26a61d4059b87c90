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

// Package bootstrap is the controller side of SVID bootstrap, served by
// every replica: a proxy presents its projected ServiceAccount token and a
// CSR over server-authenticated TLS; the server checks the token with a
// TokenReview, asks discovery's Authorizer whether that ServiceAccount may
// have the requested scope, and returns an SVID signed by the discovery CA.
//
// server.go holds the gRPC server and its lifecycle; issue.go the RPC:
// refusals (with their Events and metric) and issuance. The proxy side of
// the exchange is the discovery client (internal/discovery). This package
// sits beside discovery, not in it, so that discovery (linked by the proxy)
// needs neither the CA nor a Kubernetes client, and internal/identity stays
// a leaf.
package bootstrap
