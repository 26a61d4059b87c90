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

// Package testkit is what Coxswain's tests share: golden files compared or
// rewritten with one -update flag and one diff format, polling until a
// condition holds, envtest control planes (one lazily started per test
// binary, or one of a test's own) and what they need from the checkout
// (control-plane binaries, CRDs, rendered manifests, server-side apply),
// and loopback helpers. It is imported by tests only.
package testkit
