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

// Package network is the local cluster's pod network: one bridge whose
// address is the node IP (network.go), a network namespace with a veth pair
// per pod, the pod and load-balancer address pools (addresses.go), the
// `ip` commands behind them (ip.go), and each pod's /etc/hosts and
// resolv.conf standing in for cluster DNS (hosts.go). It touches nothing of
// the host's network but loopback and the objects it names (NetnsPrefix,
// VethPrefix, the bridge).
package network

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
)

// Names of what the harness creates in the host's network stack. Stale
// objects with these names (from a run that crashed) are removed at start
// and stop; nothing else is touched.
const (
	NetnsPrefix = "cxp-" // per-pod network namespaces
	VethPrefix  = "cxv"  // host side of per-pod veth pairs
)

// Network is the bridge every pod namespace is wired into.
type Network struct {
	bridge  string
	gateway net.IP     // the bridge's address (the node / host IP)
	subnet  *net.IPNet // pod network, e.g. 10.244.0.0/16

	mu   sync.Mutex
	used map[string]bool
	next uint32
}

// New checks the bridge name and CIDR (the bridge's address with the pod
// network's prefix, like 10.244.0.1/16); it changes nothing on the host.
func New(bridge, cidr string) (*Network, error) {
	ip, subnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("bridge CIDR %q: %w", cidr, err)
	}
	ip4 := ip.To4()
	if ip4 == nil || ip4.IsLoopback() {
		return nil, fmt.Errorf("bridge CIDR %q: want a non-loopback IPv4 address with prefix, like 10.244.0.1/16", cidr)
	}
	if ones, _ := subnet.Mask.Size(); ones > 22 {
		return nil, fmt.Errorf("bridge CIDR %q: the prefix must be /22 or shorter", cidr)
	}
	if len(bridge) == 0 || len(bridge) > 15 {
		return nil, fmt.Errorf("bridge name %q: want 1-15 characters", bridge)
	}
	return &Network{bridge: bridge, gateway: ip4, subnet: subnet, used: map[string]bool{}}, nil
}

// Bridge is the bridge's name.
func (n *Network) Bridge() string { return n.bridge }

// Gateway is the bridge's address: the node IP, reachable from the host and
// every pod, and the pods' default route.
func (n *Network) Gateway() net.IP { return n.gateway }

// Setup removes stale objects and creates the bridge with the gateway
// address.
func (n *Network) Setup() error {
	if err := n.Cleanup(); err != nil {
		return err
	}
	return n.createBridge()
}

// createBridge creates the bridge, with its fixed address and the gateway
// address, and brings it up.
func (n *Network) createBridge() error {
	ones, _ := n.subnet.Mask.Size()
	steps := [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
		// A bridge whose address was never set takes the lowest address of
		// its ports, so it changes as pods come and go; pods that cached
		// the old one for the gateway then send the host nothing it
		// accepts until they resolve it again - seconds in which every
		// connection from the host (the Service proxy, probes) to them
		// hangs. A set address stays (CNI's bridge plugin does the same).
		{"link", "set", n.bridge, "address", n.BridgeMAC()},
		{"addr", "add", fmt.Sprintf("%s/%d", n.gateway, ones), "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	for _, s := range steps {
		if _, err := runIP(s...); err != nil {
			return fmt.Errorf("creating bridge %s: %w", n.bridge, err)
		}
	}
	return nil
}

// BridgeMAC is the bridge's fixed address: locally administered, from the
// gateway address.
func (n *Network) BridgeMAC() string {
	g := n.gateway
	return fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", g[0], g[1], g[2], g[3])
}

// Cleanup kills whatever runs in the harness's namespaces, then deletes the
// namespaces, their /etc/netns directories, stray veth ends and the bridge
// (with the service addresses on it).
func (n *Network) Cleanup() error {
	var errs []string
	names, err := listNetns()
	if err != nil {
		return err
	}
	for _, ns := range names {
		if !strings.HasPrefix(ns, NetnsPrefix) {
			continue
		}
		if err := deleteNetns(ns); err != nil {
			errs = append(errs, err.Error())
		}
	}
	// /etc/netns/cxp-* (per-pod hosts and resolv.conf).
	if entries, err := os.ReadDir(netnsEtc); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), NetnsPrefix) {
				removeNetnsEtc(e.Name())
			}
		}
	}
	links, err := listLinks()
	if err != nil {
		return err
	}
	for _, l := range links {
		if strings.HasPrefix(l, VethPrefix) || l == n.bridge {
			if _, err := runIP("link", "del", l); err != nil && LinkExists(l) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up the pod network: %s", strings.Join(errs, "; "))
	}
	return nil
}

// PodNetNames derives a pod's namespace and veth names from its UID (a
// veth name has at most 15 characters).
func PodNetNames(uid string) (netns, veth string) {
	id := strings.ReplaceAll(uid, "-", "")
	if len(id) > 11 {
		id = id[:11]
	}
	return NetnsPrefix + id, VethPrefix + id
}

// AddPod creates namespace ns with eth0 at ip, wired by veth into the
// bridge, with a default route through the gateway.
func (n *Network) AddPod(ns, veth string, ip net.IP) error {
	ones, _ := n.subnet.Mask.Size()
	steps := [][]string{
		{"netns", "add", ns},
		{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"link", "set", veth, "master", n.bridge, "up"},
		{"-n", ns, "addr", "add", fmt.Sprintf("%s/%d", ip, ones), "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", n.gateway.String()},
	}
	for _, s := range steps {
		if _, err := runIP(s...); err != nil {
			_ = deleteNetns(ns)
			_, _ = runIP("link", "del", veth)
			return fmt.Errorf("pod network namespace %s: %w", ns, err)
		}
	}
	return nil
}

// DeletePod removes a pod's namespace (killing anything left in it), its
// /etc/netns directory and its veth pair.
func (n *Network) DeletePod(ns, veth string) error {
	err := deleteNetns(ns)
	removeNetnsEtc(ns)
	// Deleting the namespace deletes eth0 and with it the host end, though
	// the kernel may take a moment: only a veth that stays is an error.
	if LinkExists(veth) {
		if _, lerr := runIP("link", "del", veth); lerr != nil && LinkExists(veth) && err == nil {
			err = lerr
		}
	}
	return err
}

// AddServiceAddress puts addr on the bridge as a /32, so the host and the
// pods (through their default route) reach a listener on it. An address
// already there is not an error.
func (n *Network) AddServiceAddress(addr string) error {
	_, err := runIP("addr", "add", addr+"/32", "dev", n.bridge)
	if err != nil && strings.Contains(err.Error(), "File exists") {
		return nil
	}
	return err
}

// DeleteServiceAddress removes an address AddServiceAddress added.
func (n *Network) DeleteServiceAddress(addr string) error {
	_, err := runIP("addr", "del", addr+"/32", "dev", n.bridge)
	return err
}
