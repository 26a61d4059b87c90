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

package network

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestNetworkAllocate(t *testing.T) {
	n, err := New("cxbr0", "10.244.0.1/16")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 600; i++ {
		ip, err := n.Allocate()
		if err != nil {
			t.Fatal(err)
		}
		if !n.subnet.Contains(ip) || ip.Equal(n.gateway) || ip[2] == 0 || ip[3] == 0 || ip[3] == 255 || seen[ip.String()] {
			t.Fatalf("bad or duplicate pod address %s", ip)
		}
		seen[ip.String()] = true
	}
	for _, bad := range []string{"127.0.0.1/16", "10.244.0.1/24", "not-a-cidr", "fd00::1/64"} {
		if _, err := New("cxbr0", bad); err == nil {
			t.Errorf("bridge CIDR %q accepted", bad)
		}
	}
	if a, b := PodNetNames("0a1b2c3d-4e5f-6789-abcd-ef0123456789"); a != "cxp-0a1b2c3d4e5" || b != "cxv0a1b2c3d4e5" || len(b) > 15 {
		t.Errorf("PodNetNames: %s %s", a, b)
	}
}

// TestBridgeAddressStaysAsPortsComeAndGo: the bridge keeps its fixed
// address while ports are added and removed (a bridge without one takes
// its lowest port's, and pods that cached the gateway's address lose the
// host). Root only; it creates its own bridge and veths, not the harness's
// namespaces, so it runs beside a live cluster.
func TestBridgeAddressStaysAsPortsComeAndGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (creates a bridge and veth pairs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	n, err := New("cxmactest0", "10.251.0.1/16")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = runIP("link", "del", n.bridge)
	if err := n.createBridge(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = runIP("link", "del", n.bridge) })
	address := func() string {
		b, err := os.ReadFile("/sys/class/net/" + n.bridge + "/address")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	want := n.BridgeMAC()
	for i := range 4 {
		veth := fmt.Sprintf("cxmact%d", i)
		if _, err := runIP("link", "add", veth, "type", "veth", "peer", "name", veth+"p"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = runIP("link", "del", veth) })
		if _, err := runIP("link", "set", veth, "master", n.bridge, "up"); err != nil {
			t.Fatal(err)
		}
		if got := address(); got != want {
			t.Fatalf("after port %s joined, the bridge's address is %s, want %s", veth, got, want)
		}
	}
	for i := range 3 {
		if _, err := runIP("link", "del", fmt.Sprintf("cxmact%d", i)); err != nil {
			t.Fatal(err)
		}
		if got := address(); got != want {
			t.Fatalf("after port cxmact%d left, the bridge's address is %s, want %s", i, got, want)
		}
	}
}
