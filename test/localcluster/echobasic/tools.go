//go:build tools

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

// Package echobasic pins the upstream Gateway API conformance echo server
// (sigs.k8s.io/gateway-api/conformance/echo-basic) so the local cluster can
// run it as the binary behind the echo-basic image. It is a module of its own
// because the conformance module pins other Kubernetes versions than ours.
package echobasic

import _ "sigs.k8s.io/gateway-api/conformance/echo-basic"
