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
	"testing"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// TestFindGateway finds every Gateway of a sorted list (binary search)
// and of an unsorted one (the scan), and nothing else.
func TestFindGateway(t *testing.T) {
	var sorted []snapshot.GatewayRef
	for _, ns := range []string{"a", "b", "c"} {
		for i := range 5 {
			sorted = append(sorted, snapshot.GatewayRef{Namespace: ns, Name: fmt.Sprintf("gw-%d", i), Generation: int64(i)})
		}
	}
	unsorted := []snapshot.GatewayRef{sorted[7], sorted[2], sorted[11], sorted[0]}
	for _, gws := range [][]snapshot.GatewayRef{sorted, unsorted} {
		for _, want := range gws {
			if g := findGateway(gws, want.Namespace, want.Name); g == nil || g.Namespace != want.Namespace || g.Name != want.Name || g.Generation != want.Generation {
				t.Fatalf("findGateway(%s/%s) = %v", want.Namespace, want.Name, g)
			}
		}
		if g := findGateway(gws, "b", "missing"); g != nil {
			t.Fatalf("found %v for a missing Gateway", g)
		}
	}
}
