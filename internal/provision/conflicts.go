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

package provision

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/coxswain-go/coxswain/internal/names"
)

// Dedicated object names are "{gateway}-{gatewayclass}" (GEP-1762), which
// two Gateways of one namespace can share: "web-internal" of class
// "coxswain" and "web" of class "internal-coxswain" both give
// "web-internal-coxswain". Sharing the ServiceAccount would let each proxy
// pass discovery's check for the other's scope, TLS keys included. The names
// stay as GEP-1762 has them; instead one Gateway keeps them and every other
// Gateway that needs one of them is refused (not Accepted, nothing
// provisioned, no scope published). The translator, the dedicated
// reconciler and the discovery ServiceAccount lookup all decide with
// DedicatedNameConflicts, so they agree.

// DedicatedObjectNames are the names a dedicated Gateway's objects take in
// its namespace: names.DedicatedName (Deployment, ServiceAccount, ConfigMap,
// HPA, PDB) and, when it differs, names.DedicatedServiceName (the Service).
func DedicatedObjectNames(gatewayName, className string) []string {
	n, svc := names.DedicatedName(gatewayName, className), names.DedicatedServiceName(gatewayName, className)
	if svc == n {
		return []string{n}
	}
	return []string{n, svc}
}

// NameConflict says why a Gateway may not have dedicated objects: Holder, a
// Gateway of the same namespace that comes first, already has the object
// name Name.
type NameConflict struct {
	Holder      types.NamespacedName
	HolderClass string
	Name        string
}

// Message is the condition and event text for the refused Gateway.
func (c NameConflict) Message() string {
	return fmt.Sprintf("dedicated proxy objects of this Gateway would be named %q, which Gateway %s (class %s) already uses; "+
		"the older Gateway keeps the name: rename this Gateway or use another GatewayClass",
		c.Name, c.Holder, c.HolderClass)
}

// DedicatedNameConflicts decides, among gws (every Gateway that asks for
// dedicated proxies, whether or not its parameters are valid), which may
// have their dedicated objects. Gateways are taken oldest first
// (creationTimestamp, then namespace/name); one whose object names are all
// free takes them, any other is refused. The result maps each refused
// Gateway to the conflict that refuses it; Gateways absent from it may
// provision. A Gateway listed twice counts once.
func DedicatedNameConflicts(gws []*gwv1.Gateway) map[types.NamespacedName]NameConflict {
	order := make([]*gwv1.Gateway, 0, len(gws))
	seen := map[types.NamespacedName]bool{}
	for _, gw := range gws {
		if gw == nil {
			continue
		}
		k := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		order = append(order, gw)
	}
	sort.SliceStable(order, func(i, j int) bool { return comesFirst(order[i], order[j]) })

	type holder struct {
		gw    types.NamespacedName
		class string
	}
	taken := map[types.NamespacedName]holder{} // namespace/object name → holder
	var out map[types.NamespacedName]NameConflict
	for _, gw := range order {
		k := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		names := DedicatedObjectNames(gw.Name, string(gw.Spec.GatewayClassName))
		conflict := false
		for _, n := range names {
			if h, ok := taken[types.NamespacedName{Namespace: gw.Namespace, Name: n}]; ok {
				if out == nil {
					out = map[types.NamespacedName]NameConflict{}
				}
				out[k] = NameConflict{Holder: h.gw, HolderClass: h.class, Name: n}
				conflict = true
				break
			}
		}
		if conflict {
			continue
		}
		for _, n := range names {
			taken[types.NamespacedName{Namespace: gw.Namespace, Name: n}] = holder{gw: k, class: string(gw.Spec.GatewayClassName)}
		}
	}
	return out
}

// comesFirst orders Gateways by creationTimestamp, then namespace/name.
func comesFirst(a, b *gwv1.Gateway) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
