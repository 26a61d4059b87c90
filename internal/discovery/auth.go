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

package discovery

import (
	"fmt"
	"strings"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

const (
	// WireVersion is the protocol version of api/discovery/v1; a peer with
	// another version is refused and the proxy stops retrying.
	WireVersion = uint32(discoveryv1.Wire_WIRE_VERSION)

	// DefaultTrustDomain is the SPIFFE trust domain unless configured.
	DefaultTrustDomain = "cluster.local"

	// MaxClientMessageBytes caps one proxy→controller message.
	MaxClientMessageBytes = 1 << 20
	// MaxServerMessageBytes caps one controller→proxy message.
	MaxServerMessageBytes = snapshot.MaxDecodeBytes

	// NotLeaderMessage is in the FAILED_PRECONDITION a standby answers.
	NotLeaderMessage = "not the leader"
	// WireMismatchMessage is in the FAILED_PRECONDITION of a version mismatch.
	WireMismatchMessage = "wire version mismatch"
)

// ServiceAccountID is the SVID of a ServiceAccount:
// spiffe://<trust-domain>/ns/<namespace>/sa/<name>.
func ServiceAccountID(td spiffeid.TrustDomain, namespace, serviceAccount string) (spiffeid.ID, error) {
	if namespace == "" || serviceAccount == "" {
		return spiffeid.ID{}, fmt.Errorf("namespace and service account are required")
	}
	return spiffeid.FromSegments(td, "ns", namespace, "sa", serviceAccount)
}

// ServiceAccountFromID parses an SVID of the form /ns/<ns>/sa/<sa>.
func ServiceAccountFromID(id spiffeid.ID) (namespace, serviceAccount string, err error) {
	parts := strings.Split(strings.TrimPrefix(id.Path(), "/"), "/")
	if len(parts) != 4 || parts[0] != "ns" || parts[2] != "sa" || parts[1] == "" || parts[3] == "" {
		return "", "", fmt.Errorf("SPIFFE ID %q is not of the form spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>", id)
	}
	return parts[1], parts[3], nil
}

// ScopeFromProto converts a wire scope. A missing scope is the shared pool; a
// scope with no kind, or a Gateway scope without a namespace and name, is an
// error.
func ScopeFromProto(s *discoveryv1.Scope) (snapshot.Scope, error) {
	if s == nil {
		return snapshot.SharedPool(), nil
	}
	switch k := s.GetKind().(type) {
	case *discoveryv1.Scope_SharedPool:
		return snapshot.SharedPool(), nil
	case *discoveryv1.Scope_Gateway:
		if k.Gateway.GetNamespace() == "" || k.Gateway.GetName() == "" {
			return snapshot.Scope{}, fmt.Errorf("gateway scope needs a namespace and a name")
		}
		return snapshot.GatewayScope(k.Gateway.GetNamespace(), k.Gateway.GetName()), nil
	default:
		return snapshot.Scope{}, fmt.Errorf("scope has no kind")
	}
}

// ScopeToProto converts a scope to its wire form.
func ScopeToProto(s snapshot.Scope) *discoveryv1.Scope {
	if s.Kind == snapshot.ScopeGateway {
		return &discoveryv1.Scope{Kind: &discoveryv1.Scope_Gateway{Gateway: &discoveryv1.GatewayScope{Namespace: s.Namespace, Name: s.Name}}}
	}
	return &discoveryv1.Scope{Kind: &discoveryv1.Scope_SharedPool{SharedPool: &discoveryv1.SharedPool{}}}
}

// Authorizer decides which ServiceAccounts may receive which scope. The
// bootstrap server uses it before issuing an SVID and the stream server
// before sending any snapshot.
type Authorizer struct {
	// SharedPool reports whether a ServiceAccount may subscribe to the
	// shared pool. Nil denies everyone.
	SharedPool func(namespace, serviceAccount string) bool
	// GatewayServiceAccount returns the ServiceAccount a dedicated
	// Gateway's proxies must present ({gateway}-{gatewayclass} in the
	// Gateway's namespace); ok is false when the Gateway is not known to be
	// dedicated. Nil denies every Gateway scope.
	GatewayServiceAccount func(namespace, name string) (serviceAccount string, ok bool)
}

// ServiceAccounts allows exactly the listed "namespace/name" ServiceAccounts;
// use it for Authorizer.SharedPool.
func ServiceAccounts(refs ...string) func(namespace, serviceAccount string) bool {
	allowed := map[string]bool{}
	for _, r := range refs {
		allowed[r] = true
	}
	return func(ns, sa string) bool { return allowed[ns+"/"+sa] }
}

// Authorize returns nil when namespace/serviceAccount may receive scope, else
// a PERMISSION_DENIED status error saying why.
func (a *Authorizer) Authorize(namespace, serviceAccount string, scope snapshot.Scope) error {
	switch scope.Kind {
	case snapshot.ScopeSharedPool:
		if a != nil && a.SharedPool != nil && a.SharedPool(namespace, serviceAccount) {
			return nil
		}
		return status.Errorf(codes.PermissionDenied, "service account %s/%s may not subscribe to the shared pool", namespace, serviceAccount)
	case snapshot.ScopeGateway:
		if a == nil || a.GatewayServiceAccount == nil {
			return status.Errorf(codes.PermissionDenied, "no dedicated Gateway scopes are served")
		}
		want, ok := a.GatewayServiceAccount(scope.Namespace, scope.Name)
		if !ok {
			return status.Errorf(codes.PermissionDenied, "Gateway %s/%s is not a dedicated Gateway of this controller", scope.Namespace, scope.Name)
		}
		if namespace != scope.Namespace || serviceAccount != want {
			return status.Errorf(codes.PermissionDenied, "service account %s/%s may not subscribe to Gateway %s/%s (expected %s/%s)",
				namespace, serviceAccount, scope.Namespace, scope.Name, scope.Namespace, want)
		}
		return nil
	default:
		return status.Errorf(codes.InvalidArgument, "scope kind %q is unknown", scope.Kind)
	}
}
