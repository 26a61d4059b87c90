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

package localcluster

// DashboardReaderYAML is the ServiceAccount dashboard-reader in
// coxswain-system and the RBAC the controller's admin API asks of a token:
// get on Gateways, nothing more. `make dev` applies it and prints how to
// get its token; the e2e Dashboard test signs in with it.
const DashboardReaderYAML = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: dashboard-reader, namespace: coxswain-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: coxswain-dashboard-reader}
rules:
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: coxswain-dashboard-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: coxswain-dashboard-reader}
subjects:
- {kind: ServiceAccount, name: dashboard-reader, namespace: coxswain-system}
`
