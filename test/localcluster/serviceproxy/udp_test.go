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
package serviceproxy

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
)

// udpEchoServer answers every datagram on loopback with "name:payload" and
// returns its address.
func udpEchoServer(t *testing.T, name string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(name+":"+string(buf[:n])), from)
		}
	}()
	return pc.LocalAddr().String()
}

// udpClient is one client socket (one client address) on loopback.
type udpClient struct {
	t  *testing.T
	pc net.PacketConn
}

func newUDPClient(t *testing.T) *udpClient {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return &udpClient{t: t, pc: pc}
}

// exchange sends payload to addr and returns the reply and where it came
// from; a timeout returns "" and a nil address.
func (c *udpClient) exchange(addr, payload string, timeout time.Duration) (string, net.Addr) {
	c.t.Helper()
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.pc.WriteTo([]byte(payload), to); err != nil {
		c.t.Fatal(err)
	}
	_ = c.pc.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 2048)
	n, from, err := c.pc.ReadFrom(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return string(buf[:n]), from
}

// openTestFrontends opens want (frontendKey -> backendKey) on loopback.
func openTestFrontends(p *Proxy, want map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addrs["127.0.0.1"] = true
	p.openFrontendsLocked(want)
}

func (p *Proxy) udpFrontendAt(t *testing.T, hostPort string) *udpFrontend {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	fe := p.frontends["udp/"+hostPort]
	if fe == nil || fe.udp == nil {
		t.Fatalf("no UDP frontend on %s", hostPort)
	}
	return fe.udp
}

// TestUDPRelay: datagrams to a UDP frontend reach its endpoints with one
// session per client address (round robin at session start, sticky
// after), replies come back from the frontend address, and a TCP frontend
// on the same port number serves next to it; a Service without endpoints
// drops datagrams; idle sessions end; Close ends everything.
func TestUDPRelay(t *testing.T) {
	p := New(nil, nil, t.Logf)
	p.udpIdle = time.Second
	p.backends = map[string][]string{
		"udp/ns/dns/dns":     {udpEchoServer(t, "a"), udpEchoServer(t, "b")},
		"tcp/ns/dns/dns-tcp": {nameServer(t, "tcp")},
	}
	port := strconv.Itoa(testkit.FreePort(t))
	hp := net.JoinHostPort("127.0.0.1", port)
	empty := net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))
	openTestFrontends(p, map[string]string{
		"udp/" + hp:    "udp/ns/dns/dns",
		"tcp/" + hp:    "tcp/ns/dns/dns-tcp",
		"udp/" + empty: "udp/ns/none/dns",
	})
	defer p.Close()
	u := p.udpFrontendAt(t, hp)

	c1, c2 := newUDPClient(t), newUDPClient(t)
	backendOf := func(c *udpClient, payload string) string {
		t.Helper()
		got, from := c.exchange(hp, payload, 3*time.Second)
		if from == nil {
			t.Fatalf("no reply to %q", payload)
		}
		if from.String() != hp {
			t.Errorf("reply came from %s, want the frontend %s", from, hp)
		}
		name, echoed, _ := strings.Cut(got, ":")
		if echoed != payload {
			t.Errorf("reply %q does not echo %q", got, payload)
		}
		return name
	}
	first1, first2 := backendOf(c1, "c1-0"), backendOf(c2, "c2-0")
	if first1 == first2 {
		t.Errorf("both clients' sessions went to %s, want one each (round robin)", first1)
	}
	for i := 1; i <= 3; i++ {
		if got := backendOf(c1, "c1-"+strconv.Itoa(i)); got != first1 {
			t.Errorf("client 1 datagram %d reached %s, want its session's endpoint %s", i, got, first1)
		}
		if got := backendOf(c2, "c2-"+strconv.Itoa(i)); got != first2 {
			t.Errorf("client 2 datagram %d reached %s, want its session's endpoint %s", i, got, first2)
		}
	}
	if n := u.sessionCount(); n != 2 {
		t.Errorf("%d sessions, want 2 (one per client address)", n)
	}

	// TCP on the same address and port is a frontend of its own.
	conn, err := net.DialTimeout("tcp", hp, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "tcp\n" {
		t.Errorf("TCP on %s: read %q, %v; want the TCP endpoint", hp, line, err)
	}
	_ = conn.Close()

	// No endpoint: dropped, no session.
	if got, from := c1.exchange(empty, "x", 300*time.Millisecond); from != nil {
		t.Errorf("a Service without endpoints answered %q", got)
	}
	if n := p.udpFrontendAt(t, empty).sessionCount(); n != 0 {
		t.Errorf("%d sessions without endpoints", n)
	}

	// Idle sessions end; the next datagram opens a new one.
	testkit.Eventually(t, "idle UDP sessions to end", func() bool { return u.sessionCount() == 0 })
	backendOf(c1, "again")
	if n := u.sessionCount(); n != 1 {
		t.Errorf("%d sessions after a new datagram, want 1", n)
	}

	p.Close()
	if n := u.sessionCount(); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
	pc, err := net.ListenPacket("udp", hp) // the frontend socket is gone
	if err != nil {
		t.Errorf("frontend socket still bound after Close: %v", err)
	} else {
		_ = pc.Close()
	}
}

// TestUDPSessionBounds: beyond the session limit the least recently active
// session gives way to the new client; an endpoint that refuses
// (ICMP port unreachable) ends its session at once, so the next datagram
// picks an endpoint again.
func TestUDPSessionBounds(t *testing.T) {
	p := New(nil, nil, t.Logf)
	p.udpMaxSessions = 2
	p.backends = map[string][]string{"udp/ns/dns/dns": {udpEchoServer(t, "a")}}
	hp := net.JoinHostPort("127.0.0.1", strconv.Itoa(testkit.FreePort(t)))
	openTestFrontends(p, map[string]string{"udp/" + hp: "udp/ns/dns/dns"})
	defer p.Close()
	u := p.udpFrontendAt(t, hp)

	clients := []*udpClient{newUDPClient(t), newUDPClient(t), newUDPClient(t)}
	for i, c := range clients {
		if got, from := c.exchange(hp, "hi", 3*time.Second); got != "a:hi" {
			t.Fatalf("client %d: reply %q from %v", i, got, from)
		}
		time.Sleep(5 * time.Millisecond) // distinct activity times
	}
	if n := u.sessionCount(); n != 2 {
		t.Errorf("%d sessions, want the bound 2", n)
	}
	u.mu.Lock()
	_, oldest := u.sessions[clientAddr(t, clients[0])]
	u.mu.Unlock()
	if oldest {
		t.Error("the least recently active session was kept, want it evicted")
	}

	// A refusing endpoint: a port nothing listens on.
	dead := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeUDPPort(t)))
	p.mu.Lock()
	p.backends["udp/ns/dns/dns"] = []string{dead}
	p.mu.Unlock()
	c := newUDPClient(t)
	if got, from := c.exchange(hp, "hi", 300*time.Millisecond); from != nil {
		t.Fatalf("a refusing endpoint answered %q", got)
	}
	testkit.Eventually(t, "the refused session to end", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		_, ok := u.sessions[clientAddr(t, c)]
		return !ok
	})
	live := udpEchoServer(t, "b")
	p.mu.Lock()
	p.backends["udp/ns/dns/dns"] = []string{live}
	p.mu.Unlock()
	if got, from := c.exchange(hp, "hi", 3*time.Second); got != "b:hi" {
		t.Errorf("after the refusal: reply %q from %v, want the new endpoint", got, from)
	}
}

func clientAddr(t *testing.T, c *udpClient) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(c.pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// freeUDPPort is a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Close() }()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// TestDesiredFrontendsProtocols: a Service's TCP and UDP ports with the
// same number get a frontend each, keyed by protocol; SCTP gets none.
func TestDesiredFrontendsProtocols(t *testing.T) {
	p := New(nil, nil, t.Logf)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dns"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: 9153},
			{Name: "sig", Port: 9, Protocol: corev1.ProtocolSCTP},
		}},
	}
	want, addrs := p.desiredFrontendsLocked([]*corev1.Service{svc})
	if !reflect.DeepEqual(want, map[string]string{
		"udp/10.96.0.10:53":   "udp/ns/dns/dns",
		"tcp/10.96.0.10:53":   "tcp/ns/dns/dns-tcp",
		"tcp/10.96.0.10:9153": "tcp/ns/dns/metrics",
	}) {
		t.Errorf("frontends %v", want)
	}
	if !reflect.DeepEqual(addrs, map[string]bool{"10.96.0.10": true}) {
		t.Errorf("addresses %v", addrs)
	}
}
