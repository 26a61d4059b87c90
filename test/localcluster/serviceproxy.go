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
	"context"
	"errors"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// serviceProxy stands in for kube-proxy and a load-balancer controller, in
// user space: every Service ClusterIP, and for Services of type
// LoadBalancer a VIP from the node's /24 (10.244.0.2-254), is added to the
// bridge as a /32, and the harness listens on each of those addresses and
// TCP Service ports and forwards each new connection to a ready endpoint
// (round robin) at its target port; an open connection stays with its
// endpoint until either side closes it, also while that endpoint
// terminates. LoadBalancer Services get the VIP in
// status.loadBalancer.ingress. Pods reach these addresses through their
// default route (the bridge address) and the host reaches them directly.
// UDP ports are not proxied. Clients' source addresses are not kept: the
// backend sees a connection from the bridge address.
type serviceProxy struct {
	client kubernetes.Interface
	net    *network
	logf   func(format string, args ...any)
	ctx    context.Context

	mu        sync.Mutex
	frontends map[string]*frontend // "ip:port" -> listener
	addrs     map[string]bool      // addresses added to the bridge
	vips      map[string]string    // "<ns>/<svc>" -> VIP
	backends  map[string][]string  // "<ns>/<svc>/<port name>" -> ready "ip:port"
	rr        atomic.Uint64
}

type frontend struct {
	ln  net.Listener
	key string // backends key
}

func newServiceProxy(ctx context.Context, client kubernetes.Interface, n *network, logf func(string, ...any)) *serviceProxy {
	return &serviceProxy{
		client: client, net: n, logf: logf, ctx: ctx,
		frontends: map[string]*frontend{}, addrs: map[string]bool{}, vips: map[string]string{}, backends: map[string][]string{},
	}
}

// serviceBackends maps "<ns>/<svc>/<port name>" to the endpoint addresses
// new connections of that port go to ("ip:port", sorted): the ready ones
// or, as kube-proxy does when a Service has none, those still serving while
// they terminate (a pod being deleted shows ready=false, terminating=true
// and serving while it passes its readiness probe). Connections already
// open to an endpoint that leaves the list are left alone.
func serviceBackends(slices []*discoveryv1.EndpointSlice) map[string][]string {
	ready, terminating := map[string][]string{}, map[string][]string{}
	for _, s := range slices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, p := range s.Ports {
			if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
				continue
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			key := s.Namespace + "/" + svc + "/" + name
			for _, e := range s.Endpoints {
				var into map[string][]string
				switch c := e.Conditions; {
				case c.Ready == nil || *c.Ready:
					into = ready
				case c.Terminating != nil && *c.Terminating && c.Serving != nil && *c.Serving:
					into = terminating
				default:
					continue
				}
				for _, a := range e.Addresses {
					into[key] = append(into[key], net.JoinHostPort(a, strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	for k, addrs := range terminating {
		if len(ready[k]) == 0 {
			ready[k] = addrs
		}
	}
	for k := range ready {
		sort.Strings(ready[k])
	}
	return ready
}

// frontendAddresses are the addresses a Service is served on: its IPv4
// ClusterIPs and, for a LoadBalancer Service, its VIP.
func frontendAddresses(svc *corev1.Service, vip string) []string {
	var out []string
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, ip := range ips {
		if p := net.ParseIP(ip); p != nil && p.To4() != nil {
			out = append(out, ip)
		}
	}
	if vip != "" {
		out = append(out, vip)
	}
	return out
}

// reconcile brings listeners, bridge addresses, VIPs and LoadBalancer
// status in line with the Services and EndpointSlices.
func (p *serviceProxy) reconcile(services []*corev1.Service, slices []*discoveryv1.EndpointSlice) {
	backends := serviceBackends(slices)
	type statusUpdate struct {
		svc *corev1.Service
		vip string
	}
	var updates []statusUpdate

	p.mu.Lock()
	p.backends = backends
	// VIPs: keep, allocate, release.
	lbs := map[string]*corev1.Service{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			lbs[svc.Namespace+"/"+svc.Name] = svc
		}
	}
	for key, vip := range p.vips {
		if lbs[key] == nil {
			delete(p.vips, key)
			p.net.releaseVIP(vip)
		}
	}
	for key, svc := range lbs {
		vip, ok := p.vips[key]
		if !ok {
			v, err := p.net.allocateVIP()
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
	// Desired frontends.
	want := map[string]string{} // "ip:port" -> backends key
	wantAddrs := map[string]bool{}
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		for _, addr := range frontendAddresses(svc, p.vips[key]) {
			wantAddrs[addr] = true
			for _, sp := range svc.Spec.Ports {
				if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
					continue
				}
				want[net.JoinHostPort(addr, strconv.Itoa(int(sp.Port)))] = key + "/" + sp.Name
			}
		}
	}
	// Close what is no longer wanted, then drop unused addresses.
	for hp, fe := range p.frontends {
		if _, ok := want[hp]; !ok {
			_ = fe.ln.Close()
			delete(p.frontends, hp)
		}
	}
	for addr := range p.addrs {
		if !wantAddrs[addr] {
			if _, err := runIP("addr", "del", addr+"/32", "dev", p.net.bridge); err != nil {
				p.logf("removing service address %s: %v", addr, err)
			}
			delete(p.addrs, addr)
		}
	}
	for addr := range wantAddrs {
		if p.addrs[addr] {
			continue
		}
		if _, err := runIP("addr", "add", addr+"/32", "dev", p.net.bridge); err != nil && !strings.Contains(err.Error(), "File exists") {
			p.logf("adding service address %s: %v", addr, err)
			continue
		}
		p.addrs[addr] = true
	}
	for hp, key := range want {
		if fe, ok := p.frontends[hp]; ok {
			fe.key = key
			continue
		}
		host, _, _ := net.SplitHostPort(hp)
		if !p.addrs[host] {
			continue
		}
		ln, err := net.Listen("tcp", hp)
		if err != nil {
			p.logf("service frontend %s: %v", hp, err)
			continue
		}
		fe := &frontend{ln: ln, key: key}
		p.frontends[hp] = fe
		go p.serve(fe)
	}
	p.mu.Unlock()

	for _, u := range updates {
		p.setLoadBalancerStatus(u.svc, u.vip)
	}
}

func (p *serviceProxy) setLoadBalancerStatus(svc *corev1.Service, vip string) {
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

// pick returns a ready backend of key, round robin.
func (p *serviceProxy) pick(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.backends[key]
	if len(b) == 0 {
		return "", false
	}
	return b[int(p.rr.Add(1)%uint64(len(b)))], true
}

func (p *serviceProxy) serve(fe *frontend) {
	for {
		conn, err := fe.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		key := fe.key
		p.mu.Unlock()
		go p.forward(conn, key)
	}
}

// forward splices a client connection to a backend.
func (p *serviceProxy) forward(client net.Conn, key string) {
	defer func() { _ = client.Close() }()
	addr, ok := p.pick(key)
	if !ok {
		return // no ready endpoint: refuse by closing
	}
	backend, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = backend.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	<-done
}

// close stops every listener; the addresses go with the bridge.
func (p *serviceProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for hp, fe := range p.frontends {
		_ = fe.ln.Close()
		delete(p.frontends, hp)
	}
}

// LoadBalancerIP is the VIP the harness gave a Service of type
// LoadBalancer ("" if none yet). It is reachable from the host and from
// pods.
func (c *Cluster) LoadBalancerIP(namespace, name string) string {
	if c.kubelet == nil || c.kubelet.proxy == nil {
		return ""
	}
	p := c.kubelet.proxy
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vips[namespace+"/"+name]
}
