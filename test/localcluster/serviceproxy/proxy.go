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

// Package serviceproxy stands in for kube-proxy and a load-balancer
// controller, in user space: every Service ClusterIP, and for Services of
// type LoadBalancer a VIP from the node's /24 (10.244.0.2-254), is added to
// the bridge as a /32, and the proxy listens on each of those addresses and
// each TCP and UDP Service port. A new TCP connection is forwarded to a
// ready endpoint (round robin) at its target port and stays with that
// endpoint until either side closes it, also while the endpoint terminates.
// UDP datagrams are relayed per client address: the first datagram from a
// client opens a session, a connected socket toward one endpoint (round
// robin), that carries the client's datagrams there and the endpoint's
// replies back from the frontend socket, so the client sees them come from
// the address it sent to; a session ends after 30 s without traffic, when
// the endpoint refuses (ICMP port unreachable) or with its frontend, and
// the number of sessions per frontend is bounded. LoadBalancer Services get
// the VIP in status.loadBalancer.ingress. Pods reach these addresses
// through their default route (the bridge address) and the host reaches
// them directly. SCTP ports are not proxied. Clients' source addresses are
// not kept: the backend sees connections and datagrams from the bridge
// address.
//
// proxy.go reconciles addresses, listeners and VIPs; backends.go computes
// where connections go; forward.go accepts and splices TCP connections;
// udp.go relays UDP datagrams.
package serviceproxy

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coxswain-go/coxswain/test/localcluster/network"
)

// Proxy serves the Services' ClusterIPs and load-balancer VIPs.
type Proxy struct {
	client kubernetes.Interface
	net    *network.Network
	logf   func(format string, args ...any)
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	frontends map[string]*frontend // "tcp/ip:port" or "udp/ip:port" -> listener
	addrs     map[string]bool      // addresses added to the bridge
	vips      map[string]string    // "<ns>/<svc>" -> VIP
	backends  map[string][]string  // backendKey -> ready "ip:port"
	rr        atomic.Uint64

	// UDP session bounds (udpIdleTimeout, maxUDPSessions; tests shorten).
	udpIdle        time.Duration
	udpMaxSessions int
}

// frontend is one listener: a TCP listener (ln) or a UDP socket (udp).
type frontend struct {
	ln  net.Listener
	udp *udpFrontend
	key string // backends key (guarded by Proxy.mu)
}

// close stops the listener; a UDP frontend's sessions end with it.
func (fe *frontend) close() {
	if fe.ln != nil {
		_ = fe.ln.Close()
	}
	if fe.udp != nil {
		fe.udp.close()
	}
}

// frontendKey names a listener: "tcp/ip:port" or "udp/ip:port", so a TCP
// and a UDP port with the same number coexist on one address.
func frontendKey(proto corev1.Protocol, hostPort string) string {
	return strings.ToLower(string(proto)) + "/" + hostPort
}

// New returns a proxy that serves nothing until the first Reconcile.
func New(client kubernetes.Interface, n *network.Network, logf func(string, ...any)) *Proxy {
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{
		client: client, net: n, logf: logf, ctx: ctx, cancel: cancel,
		frontends: map[string]*frontend{}, addrs: map[string]bool{}, vips: map[string]string{}, backends: map[string][]string{},
		udpIdle: udpIdleTimeout, udpMaxSessions: maxUDPSessions,
	}
}

// Reconcile brings listeners, bridge addresses, VIPs and LoadBalancer
// status in line with the Services and EndpointSlices.
func (p *Proxy) Reconcile(services []*corev1.Service, slices []*discoveryv1.EndpointSlice) {
	p.mu.Lock()
	p.backends = serviceBackends(slices)
	updates := p.reconcileVIPsLocked(services)
	want, wantAddrs := p.desiredFrontendsLocked(services)
	p.closeUnwantedLocked(want)
	p.reconcileAddressesLocked(wantAddrs)
	p.openFrontendsLocked(want)
	p.mu.Unlock()

	for _, u := range updates {
		p.setLoadBalancerStatus(u.svc, u.vip)
	}
}

// statusUpdate is a LoadBalancer Service whose status must name its VIP.
type statusUpdate struct {
	svc *corev1.Service
	vip string
}

// reconcileVIPsLocked keeps, allocates and releases the LoadBalancer
// Services' VIPs and returns the statuses to write.
func (p *Proxy) reconcileVIPsLocked(services []*corev1.Service) []statusUpdate {
	lbs := map[string]*corev1.Service{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			lbs[svc.Namespace+"/"+svc.Name] = svc
		}
	}
	for key, vip := range p.vips {
		if lbs[key] == nil {
			delete(p.vips, key)
			p.net.ReleaseVIP(vip)
		}
	}
	var updates []statusUpdate
	for key, svc := range lbs {
		vip, ok := p.vips[key]
		if !ok {
			v, err := p.net.AllocateVIP()
			if err != nil {
				p.logf("service %s: %v", key, err)
				continue
			}
			vip = v
			p.vips[key] = vip
		}
		if ing := svc.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != vip {
			updates = append(updates, statusUpdate{svc: svc, vip: vip})
		}
	}
	return updates
}

// desiredFrontendsLocked lists the listeners the Services need (frontendKey
// -> backendKey) and the addresses they listen on.
func (p *Proxy) desiredFrontendsLocked(services []*corev1.Service) (want map[string]string, wantAddrs map[string]bool) {
	want, wantAddrs = map[string]string{}, map[string]bool{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		for _, addr := range frontendAddresses(svc, p.vips[key]) {
			wantAddrs[addr] = true
			for _, sp := range svc.Spec.Ports {
				proto, ok := proxied(sp.Protocol)
				if !ok {
					continue
				}
				hp := net.JoinHostPort(addr, strconv.Itoa(int(sp.Port)))
				want[frontendKey(proto, hp)] = backendKey(proto, svc.Namespace, svc.Name, sp.Name)
			}
		}
	}
	return want, wantAddrs
}

// closeUnwantedLocked closes the listeners no Service needs any more.
func (p *Proxy) closeUnwantedLocked(want map[string]string) {
	for fk, fe := range p.frontends {
		if _, ok := want[fk]; !ok {
			fe.close()
			delete(p.frontends, fk)
		}
	}
}

// reconcileAddressesLocked drops unused addresses from the bridge and adds
// the missing ones.
func (p *Proxy) reconcileAddressesLocked(wantAddrs map[string]bool) {
	for addr := range p.addrs {
		if !wantAddrs[addr] {
			if err := p.net.DeleteServiceAddress(addr); err != nil {
				p.logf("removing service address %s: %v", addr, err)
			}
			delete(p.addrs, addr)
		}
	}
	for addr := range wantAddrs {
		if p.addrs[addr] {
			continue
		}
		if err := p.net.AddServiceAddress(addr); err != nil {
			p.logf("adding service address %s: %v", addr, err)
			continue
		}
		p.addrs[addr] = true
	}
}

// openFrontendsLocked points existing listeners at their (possibly
// renamed) backends and opens the missing ones on addresses the bridge has.
func (p *Proxy) openFrontendsLocked(want map[string]string) {
	for fk, key := range want {
		if fe, ok := p.frontends[fk]; ok {
			fe.key = key
			continue
		}
		proto, hp, _ := strings.Cut(fk, "/")
		host, _, _ := net.SplitHostPort(hp)
		if !p.addrs[host] {
			continue
		}
		fe := &frontend{key: key}
		switch proto {
		case "udp":
			u, err := p.listenUDP(hp)
			if err != nil {
				p.logf("service frontend %s: %v", fk, err)
				continue
			}
			fe.udp = u
			go p.serveUDP(fe)
		default:
			ln, err := net.Listen("tcp", hp)
			if err != nil {
				p.logf("service frontend %s: %v", fk, err)
				continue
			}
			fe.ln = ln
			go p.serve(fe)
		}
		p.frontends[fk] = fe
	}
}

func (p *Proxy) setLoadBalancerStatus(svc *corev1.Service, vip string) {
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	cp := svc.DeepCopy()
	mode := corev1.LoadBalancerIPModeVIP
	cp.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: vip, IPMode: &mode}}
	if _, err := p.client.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
		// A conflict is retried at the next Service event.
		p.logf("service %s/%s: setting load-balancer address %s: %v", svc.Namespace, svc.Name, vip, err)
	}
}

// VIP is the load-balancer VIP of Service namespace/name ("" if none yet).
func (p *Proxy) VIP(namespace, name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vips[namespace+"/"+name]
}

// Close stops every listener and pending status write; the addresses go
// with the bridge.
func (p *Proxy) Close() {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	for fk, fe := range p.frontends {
		fe.close()
		delete(p.frontends, fk)
	}
}
