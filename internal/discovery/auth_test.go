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

package discovery_test

import (
	"testing"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

func TestWireVersionConstant(t *testing.T) {
	if discovery.WireVersion != 2 || uint32(discoveryv1.Wire_WIRE_VERSION) != 2 {
		t.Fatalf("WIRE_VERSION must be 2, got %d", discovery.WireVersion)
	}
}

func TestScopeFromProto(t *testing.T) {
	cases := []struct {
		name    string
		in      *discoveryv1.Scope
		want    snapshot.Scope
		wantErr bool
	}{
		{"missing means shared", nil, snapshot.SharedPool(), false},
		{"shared", discovery.ScopeToProto(snapshot.SharedPool()), snapshot.SharedPool(), false},
		{"gateway", discovery.ScopeToProto(snapshot.GatewayScope("a", "b")), snapshot.GatewayScope("a", "b"), false},
		{"no kind", &discoveryv1.Scope{}, snapshot.Scope{}, true},
		{"gateway without name", &discoveryv1.Scope{Kind: &discoveryv1.Scope_Gateway{Gateway: &discoveryv1.GatewayScope{Namespace: "a"}}}, snapshot.Scope{}, true},
	}
	for _, c := range cases {
		got, err := discovery.ScopeFromProto(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: got %v, %v", c.name, got, err)
		}
	}
}

func TestServiceAccountFromID(t *testing.T) {
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	id, err := discovery.ServiceAccountID(td, "ns1", "sa1")
	if err != nil || id.String() != "spiffe://cluster.local/ns/ns1/sa/sa1" {
		t.Fatalf("ServiceAccountID = %v, %v", id, err)
	}
	ns, sa, err := discovery.ServiceAccountFromID(id)
	if err != nil || ns != "ns1" || sa != "sa1" {
		t.Fatalf("round trip: %s %s %v", ns, sa, err)
	}
	for _, path := range []string{"/ns/a", "/ns/a/sa/b/c", "/x/a/sa/b", "/ns/a/x/b"} {
		bad, _ := spiffeid.FromPath(td, path)
		if _, _, err := discovery.ServiceAccountFromID(bad); err == nil {
			t.Errorf("%s accepted", path)
		}
	}
}

func TestAuthorizer(t *testing.T) {
	a := testAuthorizer()
	cases := []struct {
		ns, sa string
		scope  snapshot.Scope
		code   codes.Code
	}{
		{installNS, names.SharedProxyServiceAccount, snapshot.SharedPool(), codes.OK},
		{"apps", names.SharedProxyServiceAccount, snapshot.SharedPool(), codes.PermissionDenied},
		{"apps", "web-coxswain", snapshot.GatewayScope("apps", "web"), codes.OK},
		{"apps", "web-coxswain", snapshot.SharedPool(), codes.PermissionDenied},
		{"other", "web-coxswain", snapshot.GatewayScope("apps", "web"), codes.PermissionDenied},
		{"apps", "web-coxswain", snapshot.GatewayScope("apps", "not-dedicated"), codes.PermissionDenied},
	}
	for _, c := range cases {
		if got := status.Code(a.Authorize(c.ns, c.sa, c.scope)); got != c.code {
			t.Errorf("%s/%s → %s: got %s, want %s", c.ns, c.sa, c.scope, got, c.code)
		}
	}
	var none *discovery.Authorizer
	if status.Code(none.Authorize(installNS, names.SharedProxyServiceAccount, snapshot.SharedPool())) != codes.PermissionDenied {
		t.Error("a nil Authorizer must deny")
	}
}
