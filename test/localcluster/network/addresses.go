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
	"net"
)

// podRangeStart is the offset of the first pod address in the subnet: the
// first 256 addresses (10.244.0.x) are left for the node and for addresses
// other tools put on the bridge (for example Gateway VIPs).
const podRangeStart = 256

// Allocate returns a free pod address (10.244.1.0 upwards, skipping each
// /24's network and broadcast addresses).
func (n *Network) Allocate() (net.IP, error) {
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

// Release returns a pod address to the pool.
func (n *Network) Release(ip net.IP) {
	if ip == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, ip.String())
}

// AllocateVIP returns a free address of the node's /24 (x.x.0.2-254 of the
// subnet), for load-balancer VIPs.
func (n *Network) AllocateVIP() (string, error) {
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

// ReleaseVIP returns a load-balancer VIP to the pool.
func (n *Network) ReleaseVIP(ip string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.used, ip)
}

func ipToUint(ip net.IP) uint32 {
	return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
}

func uintToIP(v uint32) net.IP {
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
}
