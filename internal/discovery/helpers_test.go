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
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
	"github.com/coxswain-go/coxswain/internal/testkit"
)

const (
	installNS = "coxswain-system"
	// waitFor bounds every wait in these tests.
	waitFor = 20 * time.Second
)

var td = spiffeid.RequireTrustDomainFromString(discovery.DefaultTrustDomain)

// pki is a real discovery CA and the controller's serving SVID.
type pki struct {
	ca       *identity.CA
	caCert   *x509.Certificate
	caKey    crypto.Signer
	bundle   []byte
	serverID spiffeid.ID
	serving  *identity.ServingSVID
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	certPEM, keyPEM, err := identity.GenerateAuthority(td, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca := identity.NewCA(td)
	if _, err := ca.SetAuthority(certPEM, keyPEM, nil); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	caCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := pem.Decode(keyPEM)
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	serverID := mustID(t, installNS, names.ControllerServiceAccount)
	serving, err := identity.NewServingSVID(ca, serverID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, caCert: caCert, caKey: k.(crypto.Signer), bundle: ca.BundlePEM(), serverID: serverID, serving: serving}
}

func mustID(t *testing.T, ns, sa string) spiffeid.ID {
	t.Helper()
	id, err := discovery.ServiceAccountID(td, ns, sa)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// svidFor issues a real SVID for ns/sa from this CA.
func (p *pki) svidFor(t *testing.T, ns, sa string) *x509svid.SVID {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := mustID(t, ns, sa)
	certs, err := p.ca.SignPublicKey(key.Public(), id, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &x509svid.SVID{ID: id, Certificates: certs, PrivateKey: key}
}

// expiredSVIDFor signs, with this CA's key, an SVID whose validity ended an
// hour ago.
func (p *pki) expiredSVIDFor(t *testing.T, ns, sa string) *x509svid.SVID {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := mustID(t, ns, sa)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore:    time.Now().Add(-3 * time.Hour),
		NotAfter:     time.Now().Add(-time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		URIs:         []*url.URL{id.URL()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &x509svid.SVID{ID: id, Certificates: []*x509.Certificate{leaf}, PrivateKey: key}
}

// testServer is a discovery stream server on 127.0.0.1.
type testServer struct {
	*discovery.Server
	addr   string
	leader atomic.Bool
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// dedicated Gateways of the tests: ns "apps", Gateway "web" of class
// "coxswain" expects SA "web-coxswain".
func testAuthorizer() *discovery.Authorizer {
	return &discovery.Authorizer{
		SharedPool: discovery.ServiceAccounts(installNS + "/" + names.SharedProxyServiceAccount),
		GatewayServiceAccount: func(ns, name string) (string, bool) {
			if ns == "apps" && name == "web" {
				return "web-coxswain", true
			}
			return "", false
		},
	}
}

func startServer(t *testing.T, p *pki, leader bool, addr string, configure ...func(*discovery.Server)) *testServer {
	t.Helper()
	ts := &testServer{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	ts.leader.Store(leader)
	srv, err := discovery.NewServer(discovery.ServerOptions{
		TrustDomain:         td,
		SVID:                p.serving,
		Bundle:              p.ca,
		IsLeader:            ts.leader.Load,
		Authorizer:          testAuthorizer(),
		Registerer:          ts.reg,
		Log:                 testr.New(t),
		LeaderCheckInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = srv
	for _, f := range configure {
		f(srv)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	// A restarted server listens again on its old address, which the
	// kernel may hold for a moment.
	var lis net.Listener
	testkit.EventuallyExplained(t, waitFor, func() string {
		if lis, err = net.Listen("tcp", addr); err != nil {
			return err.Error()
		}
		return ""
	})
	ts.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- srv.Serve(ctx, lis) }()
	t.Cleanup(ts.stop)
	return ts
}

// publish publishes snaps, failing the test if Publish reports an error.
func (ts *testServer) publish(t *testing.T, snaps ...*snapshot.Snapshot) {
	t.Helper()
	if err := ts.Publish(snaps); err != nil {
		t.Fatal(err)
	}
}

var stopOnce sync.Map

func (ts *testServer) stop() {
	if _, loaded := stopOnce.LoadOrStore(ts, true); loaded {
		return
	}
	ts.cancel()
	select {
	case <-ts.done:
	case <-time.After(waitFor):
	}
}

// rawStream opens a Stream as ns/sa (a real SVID from p) without the
// discovery client, to drive the protocol message by message.
func rawStream(t *testing.T, addr string, p *pki, svid *x509svid.SVID) (discoveryv1.Discovery_StreamClient, func()) {
	t.Helper()
	st, closeFn, err := openStream(t, addr, p, svid)
	if err != nil {
		t.Fatal(err)
	}
	return st, closeFn
}

// openStream is rawStream returning the error of opening the stream.
func openStream(t *testing.T, addr string, p *pki, svid *x509svid.SVID) (discoveryv1.Discovery_StreamClient, func(), error) {
	t.Helper()
	tlsCfg := tlsconfig.MTLSClientConfig(svid, p.ca, tlsconfig.AuthorizeID(p.serverID))
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	st, err := discoveryv1.NewDiscoveryClient(cc).Stream(ctx)
	closeFn := func() { cancel(); _ = cc.Close() }
	t.Cleanup(closeFn)
	return st, closeFn, err
}

func subscribe(node string, scope snapshot.Scope) *discoveryv1.ClientMessage {
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Subscribe{Subscribe: &discoveryv1.Subscribe{
		NodeId: node, WireVersion: discovery.WireVersion, Scope: discovery.ScopeToProto(scope),
	}}}
}

func ack(s *discoveryv1.Snapshot) *discoveryv1.ClientMessage {
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Ack{Ack: &discoveryv1.Ack{Version: s.GetVersion(), Nonce: s.GetNonce()}}}
}

func nack(s *discoveryv1.Snapshot, detail string) *discoveryv1.ClientMessage {
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Nack{Nack: &discoveryv1.Nack{Version: s.GetVersion(), Nonce: s.GetNonce(), Detail: detail}}}
}

func nodeStatus(ports ...int32) *discoveryv1.ClientMessage {
	return &discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_NodeStatus{NodeStatus: &discoveryv1.NodeStatus{BoundPorts: ports}}}
}

// snap builds a valid snapshot serving Gateway apps/<gw> at generation gen
// on the given ports, with one route per port whose backend is endpoint
// set "apps/svc:80" holding the given addresses.
func snap(scope snapshot.Scope, gw string, gen int64, ports []int32, addrs ...string) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Scope: scope}
	es := &snapshot.EndpointSet{Name: "apps/svc:80"}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, snapshot.Endpoint{Address: a, Port: 8080})
	}
	s.EndpointSets = []*snapshot.EndpointSet{es}
	for _, p := range ports {
		s.Listeners = append(s.Listeners, snapshot.Listener{
			Name: "gateway/apps/" + gw + "/" + itoa(p), Port: p, Protocol: snapshot.ProtocolHTTP,
			VirtualHosts: []*snapshot.VirtualHost{{Hostname: "*", Routes: []snapshot.Route{{
				ID: "httproute/apps/r:0", Backends: []snapshot.Backend{{EndpointSet: "apps/svc:80", Weight: 1}},
			}}}},
		})
	}
	s.Gateways = []snapshot.GatewayRef{{Namespace: "apps", Name: gw, Generation: gen, Ports: ports}}
	return s
}

func itoa(p int32) string { return big.NewInt(int64(p)).String() }

func recvSnapshot(t *testing.T, st discoveryv1.Discovery_StreamClient) *discoveryv1.Snapshot {
	t.Helper()
	m, err := st.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if m.GetSnapshot() == nil {
		t.Fatalf("expected a snapshot, got %v", m)
	}
	return m.GetSnapshot()
}

func mustVersion(t *testing.T, s *snapshot.Snapshot) string {
	t.Helper()
	return mustVersionIn(t, s, snapshot.LayoutListeners)
}

// mustVersionIn is the version of s in layout: what a stream in that
// layout announces (a hand-made Subscribe without a layout gets
// LayoutListeners; the real client asks for discovery.RichestLayout).
func mustVersionIn(t *testing.T, s *snapshot.Snapshot, layout snapshot.Layout) string {
	t.Helper()
	res, err := snapshot.ResourcesIn(layout, s)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := (&snapshot.Assembler{Scope: s.Scope, Layout: layout}).Assemble(res)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// metric returns the value of the named counter or gauge whose labels
// include want, or 0.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, want) {
				if m.GetCounter() != nil {
					return m.GetCounter().GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
