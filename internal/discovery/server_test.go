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
	"context"
	"strings"
	"testing"

	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

var (
	shared    = snapshot.SharedPool()
	dedicated = snapshot.GatewayScope("apps", "web")
)

// expectRefused opens a stream and expects it to fail with code before any
// snapshot arrives.
func expectRefused(t *testing.T, st discoveryv1.Discovery_StreamClient, code codes.Code, contains string) {
	t.Helper()
	m, err := st.Recv()
	if err == nil {
		t.Fatalf("expected %s, got a message: %v", code, m)
	}
	if got := status.Code(err); got != code {
		t.Fatalf("expected %s, got %s: %v", code, got, err)
	}
	if contains != "" && !strings.Contains(status.Convert(err).Message(), contains) {
		t.Fatalf("expected the message to contain %q, got %q", contains, status.Convert(err).Message())
	}
}

// expectHandshakeRefused expects the server to refuse the client's
// certificate during the TLS handshake, before any message.
func expectHandshakeRefused(t *testing.T, addr string, p *pki, svid *x509svid.SVID) {
	t.Helper()
	st, _, err := openStream(t, addr, p, svid)
	if err == nil {
		_ = st.Send(subscribe("refused", shared))
		var m *discoveryv1.ServerMessage
		if m, err = st.Recv(); err == nil {
			t.Fatalf("the server accepted the certificate and sent %v", m)
		}
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("expected the server to refuse the certificate in the handshake, got %v", err)
	}
}

func TestPlaintextClientRefused(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	st, err := discoveryv1.NewDiscoveryClient(cc).Stream(ctx)
	if err == nil {
		_ = st.Send(subscribe("plain", shared))
		_, err = st.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext stream: expected Unavailable, got %v", err)
	}
}

func TestClientCertificateFromAnotherCARefused(t *testing.T) {
	p := newPKI(t)
	other := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	// Same SPIFFE ID as a legitimate shared proxy, signed by another CA. The
	// client trusts the real server (p) so only the server's check can fail.
	svid := other.svidFor(t, installNS, names.SharedProxyServiceAccount)
	expectHandshakeRefused(t, ts.addr, p, svid)
}

func TestExpiredSVIDRefused(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	svid := p.expiredSVIDFor(t, installNS, names.SharedProxyServiceAccount)
	expectHandshakeRefused(t, ts.addr, p, svid)
	// The same identity with a valid SVID is served: the refusal was the expiry.
	st2, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st2.Send(subscribe("valid", shared)); err != nil {
		t.Fatal(err)
	}
	if s := recvSnapshot(t, st2); !s.GetFull() {
		t.Fatal("first snapshot must be full")
	}
}

func TestWrongServiceAccountForDedicatedScope(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(dedicated, "web", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ ns, sa string }{
		{"apps", "other-coxswain"},                   // wrong SA name
		{"elsewhere", "web-coxswain"},                // right name, wrong namespace
		{installNS, names.SharedProxyServiceAccount}, // the shared proxy
	}
	for _, c := range cases {
		st, _ := rawStream(t, ts.addr, p, p.svidFor(t, c.ns, c.sa))
		if err := st.Send(subscribe("n-"+c.ns+"-"+c.sa, dedicated)); err != nil {
			t.Fatal(err)
		}
		expectRefused(t, st, codes.PermissionDenied, "may not subscribe")
	}
	// The expected SA is served.
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, "apps", "web-coxswain"))
	if err := st.Send(subscribe("web-1", dedicated)); err != nil {
		t.Fatal(err)
	}
	s := recvSnapshot(t, st)
	if !s.GetFull() || len(s.GetResources()) == 0 {
		t.Fatalf("expected a full snapshot, got %v", s)
	}
	// An unmanaged SA on the shared pool is refused too.
	st, _ = rawStream(t, ts.addr, p, p.svidFor(t, "apps", "default"))
	if err := st.Send(subscribe("intruder", shared)); err != nil {
		t.Fatal(err)
	}
	expectRefused(t, st, codes.PermissionDenied, "shared pool")
	if got := metric(t, ts.reg, "coxswain_discovery_stream_rejections_total", map[string]string{"code": "PermissionDenied"}); got != 4 {
		t.Fatalf("rejections{PermissionDenied} = %v, want 4", got)
	}
}

func TestStandbyRefusesThenLeaderServes(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, false, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	svid := p.svidFor(t, installNS, names.SharedProxyServiceAccount)
	st, _ := rawStream(t, ts.addr, p, svid)
	_ = st.Send(subscribe("p1", shared))
	expectRefused(t, st, codes.FailedPrecondition, discovery.NotLeaderMessage)

	ts.leader.Store(true)
	st, _ = rawStream(t, ts.addr, p, svid)
	if err := st.Send(subscribe("p1", shared)); err != nil {
		t.Fatal(err)
	}
	recvSnapshot(t, st)

	// Losing the lease ends the open stream with "not the leader".
	ts.leader.Store(false)
	expectRefused(t, st, codes.FailedPrecondition, discovery.NotLeaderMessage)
}

func TestWireVersionMismatchRefused(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	msg := subscribe("old", shared)
	msg.GetSubscribe().WireVersion = 1
	if err := st.Send(msg); err != nil {
		t.Fatal(err)
	}
	expectRefused(t, st, codes.FailedPrecondition, discovery.WireMismatchMessage)
}

func TestNodeIDHeldByAnotherIdentity(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{
		snap(shared, "gw", 1, []int32{8080}, "10.0.0.1"),
		snap(dedicated, "web", 1, []int32{8081}, "10.0.0.2"),
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("node-a", shared)); err != nil {
		t.Fatal(err)
	}
	recvSnapshot(t, st) // node-a is now held
	st2, _ := rawStream(t, ts.addr, p, p.svidFor(t, "apps", "web-coxswain"))
	if err := st2.Send(subscribe("node-a", dedicated)); err != nil {
		t.Fatal(err)
	}
	expectRefused(t, st2, codes.AlreadyExists, "another identity")
}

func TestMessageSizeCap(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("big", shared)); err != nil {
		t.Fatal(err)
	}
	s := recvSnapshot(t, st)
	_ = st.Send(nack(s, strings.Repeat("x", discovery.MaxClientMessageBytes+1)))
	_, err := st.Recv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a client message above %d bytes: expected ResourceExhausted, got %v", discovery.MaxClientMessageBytes, err)
	}
}

func TestFullThenDeltaThenFullAfterNack(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")
	if err := ts.Publish([]*snapshot.Snapshot{v1}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("p", shared)); err != nil {
		t.Fatal(err)
	}
	m1 := recvSnapshot(t, st)
	if !m1.GetFull() || m1.GetVersion() != mustVersion(t, v1) || len(m1.GetResources()) != 3 {
		t.Fatalf("first message: full=%v version ok=%v resources=%d", m1.GetFull(), m1.GetVersion() == mustVersion(t, v1), len(m1.GetResources()))
	}
	if err := st.Send(ack(m1)); err != nil {
		t.Fatal(err)
	}

	// v2 changes only the endpoints and adds a listener: a delta with those.
	v2 := snap(shared, "gw", 2, []int32{8080, 8081}, "10.0.0.9")
	if err := ts.Publish([]*snapshot.Snapshot{v2}); err != nil {
		t.Fatal(err)
	}
	m2 := recvSnapshot(t, st)
	if m2.GetFull() || m2.GetVersion() != mustVersion(t, v2) {
		t.Fatalf("second message must be a delta to v2, got full=%v", m2.GetFull())
	}
	keys := resourceKeys(m2)
	if want := "endpoints|apps/svc:80,gateway|apps/gw,listener|8081"; keys != want {
		t.Fatalf("delta resources = %s, want %s", keys, want)
	}
	if err := st.Send(ack(m2)); err != nil {
		t.Fatal(err)
	}

	// v3 drops listener 8081: the delta removes it.
	v3 := snap(shared, "gw", 3, []int32{8080}, "10.0.0.9")
	if err := ts.Publish([]*snapshot.Snapshot{v3}); err != nil {
		t.Fatal(err)
	}
	m3 := recvSnapshot(t, st)
	if m3.GetFull() || strings.Join(m3.GetRemoved(), ",") != "listener|8081" {
		t.Fatalf("third message: full=%v removed=%v", m3.GetFull(), m3.GetRemoved())
	}
	// The proxy rejects it: the server answers with a full snapshot.
	if err := st.Send(nack(m3, "bind failed")); err != nil {
		t.Fatal(err)
	}
	m4 := recvSnapshot(t, st)
	if !m4.GetFull() || m4.GetVersion() != mustVersion(t, v3) {
		t.Fatalf("after a Nack of a delta: expected a full v3, got full=%v", m4.GetFull())
	}
	// A rejected full snapshot is not resent; the next publish is full again.
	if err := st.Send(nack(m4, "still failing")); err != nil {
		t.Fatal(err)
	}
	v4 := snap(shared, "gw", 4, []int32{8080}, "10.0.0.7")
	if err := ts.Publish([]*snapshot.Snapshot{v4}); err != nil {
		t.Fatal(err)
	}
	m5 := recvSnapshot(t, st)
	if !m5.GetFull() || m5.GetVersion() != mustVersion(t, v4) {
		t.Fatalf("after a Nack of a full snapshot: expected a full v4 next, got full=%v version-is-v4=%v", m5.GetFull(), m5.GetVersion() == mustVersion(t, v4))
	}
	// Counters move after the send: wait (bounded) for them.
	testkit.EventuallyWithin(t, waitFor, "2 nacks and 3 full snapshots counted", func() bool {
		return metric(t, ts.reg, "coxswain_discovery_nacks_total", map[string]string{"scope": "shared"}) == 2 &&
			metric(t, ts.reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": "full"}) == 3
	})
}

func resourceKeys(m *discoveryv1.Snapshot) string {
	var ks []string
	for _, r := range m.GetResources() {
		ks = append(ks, r.GetKey())
	}
	return strings.Join(ks, ",")
}

func TestOneUnackedMessageAndCoalescing(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	v1 := snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")
	if err := ts.Publish([]*snapshot.Snapshot{v1}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("p", shared)); err != nil {
		t.Fatal(err)
	}
	m1 := recvSnapshot(t, st)
	// While m1 is un-acked, three rebuilds arrive.
	for gen, addr := range []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"} {
		if err := ts.Publish([]*snapshot.Snapshot{snap(shared, "gw", int64(gen+2), []int32{8080}, addr)}); err != nil {
			t.Fatal(err)
		}
	}
	// A stale ack (wrong nonce) does not release the next message.
	if err := st.Send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Ack{Ack: &discoveryv1.Ack{Version: m1.GetVersion(), Nonce: "bogus"}}}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the stale ack to be counted", func() bool {
		return metric(t, ts.reg, "coxswain_discovery_stale_acks_total", nil) == 1
	})
	if err := st.Send(ack(m1)); err != nil {
		t.Fatal(err)
	}
	// The next message is the newest rebuild, as one delta: the two
	// intermediate ones were never sent.
	m2 := recvSnapshot(t, st)
	want := mustVersion(t, snap(shared, "gw", 4, []int32{8080}, "10.0.0.4"))
	if m2.GetVersion() != want || m2.GetFull() {
		t.Fatalf("expected one delta to the newest snapshot, got full=%v newest=%v", m2.GetFull(), m2.GetVersion() == want)
	}
	// The server counts a message after sending it, so the client can see
	// m2 before the counter moves: wait (bounded) for it.
	testkit.EventuallyWithin(t, waitFor, "one full and one delta counted", func() bool {
		full := metric(t, ts.reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": "full"})
		delta := metric(t, ts.reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": "delta"})
		return full == 1 && delta == 1
	})
	// And no third message was ever sent: the intermediate rebuilds
	// coalesced.
	if full := metric(t, ts.reg, "coxswain_discovery_snapshots_sent_total", map[string]string{"type": "full"}); full != 1 {
		t.Fatalf("sent %v full snapshots, want 1", full)
	}
}

func TestPublishRejectsInvalidSnapshotKeepingPrevious(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	good := snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")
	if err := ts.Publish([]*snapshot.Snapshot{good}); err != nil {
		t.Fatal(err)
	}
	bad := snap(shared, "gw", 2, []int32{8080}, "not-an-ip")
	if err := ts.Publish([]*snapshot.Snapshot{bad}); err == nil {
		t.Fatal("an invalid snapshot must be reported")
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("p", shared)); err != nil {
		t.Fatal(err)
	}
	if m := recvSnapshot(t, st); m.GetVersion() != mustVersion(t, good) {
		t.Fatal("the scope must keep its last valid snapshot")
	}
}

func TestOversizeSnapshotNotSent(t *testing.T) {
	p := newPKI(t)
	ts := startServer(t, p, true, "")
	discovery.SetMaxSendForTest(ts.Server, 4096)
	big := snap(shared, "gw", 1, []int32{8080}, "10.0.0.1")
	big.Certificates = []snapshot.Certificate{{Name: "apps/big", CertPEM: strings.Repeat("A", 8192), KeyPEM: "k"}}
	if err := ts.Publish([]*snapshot.Snapshot{big}); err != nil {
		t.Fatal(err)
	}
	st, _ := rawStream(t, ts.addr, p, p.svidFor(t, installNS, names.SharedProxyServiceAccount))
	if err := st.Send(subscribe("p", shared)); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, waitFor, "the oversize snapshot to be withheld", func() bool {
		return metric(t, ts.reg, "coxswain_discovery_oversize_snapshots_total", nil) == 1
	})
	small := snap(shared, "gw", 2, []int32{8080}, "10.0.0.2")
	if err := ts.Publish([]*snapshot.Snapshot{small}); err != nil {
		t.Fatal(err)
	}
	if m := recvSnapshot(t, st); !m.GetFull() || m.GetVersion() != mustVersion(t, small) {
		t.Fatal("the first message must be the next snapshot that fits, in full")
	}
}
