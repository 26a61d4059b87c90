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
// proxies: the leader-only mTLS snapshot stream and the identity bootstrap
// that every controller replica serves. The names manifests, proxies and the
// controller must agree on (Services, ports, token audience, CA Secret,
// trust ConfigMap, leader label) are in internal/names.
package discovery
