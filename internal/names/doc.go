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

// Package names is the one source of every name Coxswain's parts must agree
// on: the controller's identity, the objects of the install namespace, the
// ports, the discovery token audience, the labels and annotations of
// rendered objects, and the functions that name per-Gateway objects.
//
//   - install.go: the controller's identity (GatewayClass controllerName,
//     field manager, parameters kinds) and the install namespace: Lease, CA
//     Secret, trust ConfigMap, discovery Services and ports, the shared
//     pool's objects, the health and metrics ports.
//   - labels.go: label keys and values, annotation keys, the selectors that
//     find rendered objects again, and LabelValue.
//   - objects.go: DedicatedName, DedicatedServiceName and VIPServiceName.
//
// It is a leaf: it imports nothing of the project and nothing heavier than
// apimachinery's validation, so every package, pure or not, may use it.
// Manifests (config/, charts/, bundle/) spell the same names in YAML.
package names
