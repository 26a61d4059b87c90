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

package localcluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coxswain-go/coxswain/internal/testkit"
	"github.com/coxswain-go/coxswain/test/localcluster"
)

// TestCoreDNS runs the conformance suite's UDP backend (testdata/coredns.yaml:
// its coredns Deployment, ConfigMap and Service) on a real CoreDNS and asks
// it for foo.bar.com A over UDP through the Service's ClusterIP - the
// service proxy's UDP relay - from the host and from inside the pod's own
// network namespace. CoreDNS reads its Corefile from the ConfigMap mounted
// at /root, and whoami answers with the address the query came from: the
// bridge address the relay sends from.
func TestCoreDNS(t *testing.T) {
	assets := localClusterAssets(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	coredns := coreDNS(t)
	start := time.Now()
	c, err := localcluster.Start(ctx, localcluster.Config{
		AssetsDir: assets, Dir: t.TempDir(),
		Binaries: localcluster.Binaries{CoreDNS: coredns},
		Logf:     t.Logf,
		LockWait: 10 * time.Minute, // another package's test or a CI run may hold the machine's one cluster
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	defer func() {
		if t.Failed() {
			dumpLogs(t, c.LogDir())
		}
	}()
	t.Logf("cluster started in %s", time.Since(start).Round(time.Millisecond))

	manifest, err := os.ReadFile(filepath.Join("testdata", "coredns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.Kubectl(ctx, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("applying testdata/coredns.yaml: %v\n%s", err, out)
	}
	pods, err := c.WaitForPodsReady(ctx, "lc-dns", "app=udp", 1, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sb, ok := c.Sandboxes()[pods[0].UID]
	if !ok || len(sb.PIDs) != 1 {
		t.Fatalf("pod %s: sandbox %+v, want one process", pods[0].Name, sb)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", sb.PIDs[0])); err != nil || exe != coredns {
		t.Errorf("pod process runs %q (%v), want %s", exe, err, coredns)
	}
	svc, err := c.Client.CoreV1().Services("lc-dns").Get(ctx, "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	server := net.JoinHostPort(svc.Spec.ClusterIP, "53")

	from := map[string]func() (net.Conn, error){
		"the host": func() (net.Conn, error) { return net.Dial("udp", server) },
		"the pod":  func() (net.Conn, error) { return dialUDPInNetns(sb.Netns, server) },
	}
	for _, where := range []string{"the host", "the pod"} {
		var got []string
		testkit.EventuallyState(t, 30*time.Second, "foo.bar.com A over UDP to "+server+" from "+where, func() (bool, string) {
			conn, err := from[where]()
			if err != nil {
				return false, err.Error()
			}
			defer func() { _ = conn.Close() }()
			got, err = lookupA(conn, "foo.bar.com")
			if err != nil {
				return false, err.Error()
			}
			return len(got) > 0, fmt.Sprintf("A records %v", got)
		})
		// whoami names the querier: the service proxy relays from the
		// bridge (node) address.
		if len(got) != 1 || got[0] != c.NodeIP {
			t.Errorf("from %s: foo.bar.com A %v, want [%s] (whoami: the relay's address)", where, got, c.NodeIP)
		}
	}
}

// dialUDPInNetns opens a UDP socket connected to addr inside network
// namespace netns (/run/netns/<netns>), as a process in that pod would:
// the socket belongs to the namespace it was created in. The calling
// thread enters the namespace and comes back; a thread that cannot come
// back is discarded with its goroutine.
func dialUDPInNetns(netns, addr string) (net.Conn, error) {
	ch := make(chan netnsDial, 1)
	go func() {
		runtime.LockOSThread()
		r, back := dialInNetns(netns, addr)
		if back {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and the thread with it
		ch <- r
	}()
	r := <-ch
	return r.conn, r.err
}

type netnsDial struct {
	conn net.Conn
	err  error
}

// dialInNetns is dialUDPInNetns on the calling, locked thread; back
// reports whether the thread is in its own namespace again.
func dialInNetns(netns, addr string) (r netnsDial, back bool) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return netnsDial{err: err}, true
	}
	defer func() { _ = self.Close() }()
	target, err := os.Open(filepath.Join("/run/netns", netns))
	if err != nil {
		return netnsDial{err: err}, true
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return netnsDial{err: fmt.Errorf("entering %s: %w", netns, err)}, true
	}
	r.conn, r.err = net.Dial("udp", addr)
	return r, unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
}

// lookupA sends one DNS query for name's A records over conn and returns
// the addresses of the A records in the reply, from every section (whoami
// answers in the additional section). It uses the standard library only:
// the query and the parsing are a few lines of RFC 1035.
func lookupA(conn net.Conn, name string) ([]string, error) {
	const id = 0x4c43                                                   // "LC"
	q := []byte{id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0} // RD, one question
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	q = append(q, 0, 0, 1, 0, 1) // root; QTYPE A, QCLASS IN
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	msg := buf[:n]
	if len(msg) < 12 || binary.BigEndian.Uint16(msg) != id || msg[2]&0x80 == 0 {
		return nil, fmt.Errorf("not a reply to the query: % x", msg)
	}
	if rcode := msg[3] & 0x0f; rcode != 0 {
		return nil, fmt.Errorf("rcode %d", rcode)
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	rrs := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	off := 12
	for range qd {
		if off, err = skipName(msg, off); err != nil {
			return nil, err
		}
		off += 4
	}
	var addrs []string
	for range rrs {
		start := off
		if off, err = skipName(msg, off); err != nil {
			return nil, err
		}
		if off+10 > len(msg) {
			return nil, errors.New("truncated record")
		}
		typ, rdlen := binary.BigEndian.Uint16(msg[off:]), int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+rdlen > len(msg) {
			return nil, errors.New("truncated record data")
		}
		if typ == 1 && rdlen == 4 {
			owner, err := readName(msg, start)
			if err != nil {
				return nil, err
			}
			if strings.EqualFold(owner, strings.TrimSuffix(name, ".")) {
				addrs = append(addrs, net.IP(msg[off:off+4]).String())
			}
		}
		off += rdlen
	}
	return addrs, nil
}

// skipName returns the offset after the (possibly compressed) name at off.
func skipName(msg []byte, off int) (int, error) {
	for off < len(msg) {
		switch l := int(msg[off]); {
		case l == 0:
			return off + 1, nil
		case l&0xc0 == 0xc0:
			return off + 2, nil
		default:
			off += 1 + l
		}
	}
	return 0, errors.New("truncated name")
}

// readName decodes the name at off, following compression pointers.
func readName(msg []byte, off int) (string, error) {
	var labels []string
	for hops := 0; off < len(msg) && hops < 16; {
		l := int(msg[off])
		switch {
		case l == 0:
			return strings.Join(labels, "."), nil
		case l&0xc0 == 0xc0:
			if off+1 >= len(msg) {
				return "", errors.New("truncated pointer")
			}
			off = int(binary.BigEndian.Uint16(msg[off:]) & 0x3fff)
			hops++
		default:
			if off+1+l > len(msg) {
				return "", errors.New("truncated label")
			}
			labels = append(labels, string(msg[off+1:off+1+l]))
			off += 1 + l
		}
	}
	return "", errors.New("bad name")
}
