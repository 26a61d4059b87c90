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

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Names of what the harness creates in the host's network stack. Stale
// objects with these names (from a run that crashed) are removed at start
// and stop; nothing else is touched.
const (
	netnsPrefix = "cxp-" // per-pod network namespaces
	vethPrefix  = "cxv"  // host side of per-pod veth pairs
)

// runIP runs `ip args...` (bounded) and returns its stdout, or an error
// holding its output.
func runIP(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// network is the bridge every pod namespace is wired into.
type network struct {
	bridge  string
	gateway net.IP     // the bridge's address (the node / host IP)
	subnet  *net.IPNet // pod network, e.g. 10.244.0.0/16

	mu   sync.Mutex
	used map[string]bool
	next uint32
}

func newNetwork(bridge, cidr string) (*network, error) {
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
	return &network{bridge: bridge, gateway: ip4, subnet: subnet, used: map[string]bool{}}, nil
}

// podRangeStart is the offset of the first pod address in the subnet: the
// first 256 addresses (10.244.0.x) are left for the node and for addresses
// other tools put on the bridge (for example Gateway VIPs).
const podRangeStart = 256

// allocate returns a free pod address.
func (n *network) allocate() (net.IP, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ones, bits := n.subnet.Mask.Size()
	size := uint32(1) << uint(bits-ones)
	base := ipToUint(n.subnet.IP.To4())
	for i := uint32(0); i < size; i++ {
		off := podRangeStart + (n.next+i)%(size-podRangeStart-1)
		ip := uintToIP(base + off)
		if ip.Equal(n.gateway) || n.used[ip.String()] || off%256 == 0 || off%256 == 255 {
			continue
		}
		n.used[ip.String()] = true
		n.next = (n.next + i + 1) % (size - podRangeStart - 1)
		return ip, nil
	}
	return nil, fmt.Errorf("pod network %s is full", n.subnet)
}

// allocateVIP returns a free address of the node's /24 (x.x.0.2-254 of the
// subnet), for load-balancer VIPs.
func (n *network) allocateVIP() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	base := ipToUint(n.subnet.IP.To4())
	for off := uint32(2); off < 255; off++ {
		ip := uintToIP(base + off)
		if ip.Equal(n.gateway) || n.used[ip.String()] {
			continue
		}
		n.used[ip.String()] = true
		return ip.String(), nil
	}
	return "", fmt.Errorf("no free load-balancer address in %s", uintToIP(base))
}

func (n *network) releaseVIP(ip string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, ip)
}

func (n *network) release(ip net.IP) {
	if ip == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, ip.String())
}

func ipToUint(ip net.IP) uint32 {
	return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
}

func uintToIP(v uint32) net.IP {
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
}

// setup removes stale objects and creates the bridge with the gateway
// address.
func (n *network) setup() error {
	if err := n.cleanup(); err != nil {
		return err
	}
	ones, _ := n.subnet.Mask.Size()
	steps := [][]string{
		{"link", "add", n.bridge, "type", "bridge"},
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

// cleanup kills whatever runs in the harness's namespaces, then deletes the
// namespaces, stray veth ends and the bridge.
func (n *network) cleanup() error {
	var errs []string
	names, err := listNetns()
	if err != nil {
		return err
	}
	for _, ns := range names {
		if !strings.HasPrefix(ns, netnsPrefix) {
			continue
		}
		if err := deleteNetns(ns); err != nil {
			errs = append(errs, err.Error())
		}
	}
	// /etc/netns/cxp-* (per-pod hosts and resolv.conf).
	if entries, err := os.ReadDir(netnsEtc); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), netnsPrefix) {
				removeNetnsEtc(e.Name())
			}
		}
	}
	links, err := listLinks()
	if err != nil {
		return err
	}
	for _, l := range links {
		if strings.HasPrefix(l, vethPrefix) || l == n.bridge {
			if _, err := runIP("link", "del", l); err != nil && linkExists(l) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up the pod network: %s", strings.Join(errs, "; "))
	}
	return nil
}

// addPod creates namespace ns with eth0 at ip, wired by veth into the bridge,
// with a default route through the gateway.
func (n *network) addPod(ns, veth string, ip net.IP) error {
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

// deletePod removes a pod's namespace (killing anything left in it) and its
// veth pair.
func (n *network) deletePod(ns, veth string) error {
	err := deleteNetns(ns)
	removeNetnsEtc(ns)
	// Deleting the namespace deletes eth0 and with it the host end, though
	// the kernel may take a moment: only a veth that stays is an error.
	if linkExists(veth) {
		if _, lerr := runIP("link", "del", veth); lerr != nil && linkExists(veth) && err == nil {
			err = lerr
		}
	}
	return err
}

// deleteNetns SIGKILLs every process in ns, then deletes it.
func deleteNetns(ns string) error {
	if pids, err := NetnsPIDs(ns); err == nil {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			waitGone(pid, 5*time.Second)
		}
	}
	if _, err := runIP("netns", "del", ns); err != nil {
		if exists, _ := netnsExists(ns); exists {
			return err
		}
	}
	return nil
}

// NetnsPIDs lists the processes in a named network namespace.
func NetnsPIDs(ns string) ([]int, error) {
	out, err := runIP("netns", "pids", ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// listNetns lists named network namespaces.
func listNetns() ([]string, error) {
	out, err := runIP("netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// HarnessNetns lists the network namespaces the harness owns (by name
// prefix) that exist now.
func HarnessNetns() ([]string, error) {
	all, err := listNetns()
	if err != nil {
		return nil, err
	}
	var mine []string
	for _, ns := range all {
		if strings.HasPrefix(ns, netnsPrefix) {
			mine = append(mine, ns)
		}
	}
	return mine, nil
}

func netnsExists(ns string) (bool, error) {
	names, err := listNetns()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == ns {
			return true, nil
		}
	}
	return false, nil
}

// listLinks lists the host's interface names.
func listLinks() ([]string, error) {
	out, err := runIP("-o", "link", "show")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		// "4: cxv0123@if2: <...>"
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if i := strings.IndexByte(name, '@'); i >= 0 {
			name = name[:i]
		}
		names = append(names, name)
	}
	return names, nil
}

// LinkExists reports whether a host interface exists.
func LinkExists(name string) bool { return linkExists(name) }

func linkExists(name string) bool {
	_, err := runIP("link", "show", "dev", name)
	return err == nil
}
