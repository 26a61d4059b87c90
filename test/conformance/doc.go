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

// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance v1.6.3, unmodified) against a cluster
// that runs Coxswain. It is a module of its own because the suite pins other
// Kubernetes library versions than Coxswain does. `make conformance` brings
// up the container-free local cluster with Coxswain, runs this test with
// COXSWAIN_CONFORMANCE=1 and the suite's flags, and tears everything down;
// see docs/conformance.md.
package conformance
