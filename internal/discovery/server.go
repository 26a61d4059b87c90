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

package discovery

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// ServerOptions configures the snapshot stream server.
type ServerOptions struct {
	// Addr is where Start listens (":50051" by default).
	Addr string
	// TrustDomain of the peers' SVIDs.
	TrustDomain spiffeid.TrustDomain
	// SVID is the server's own certificate (the controller's SVID).
	SVID x509svid.Source
	// Bundle holds the roots client SVIDs must chain to.
	Bundle x509bundle.Source
	// IsLeader is checked when a stream opens and periodically while it
	// lives; a standby answers FAILED_PRECONDITION "not the leader".
	IsLeader func() bool
	// Authorizer decides which identity may receive which scope.
	Authorizer *Authorizer
	// Registerer receives the coxswain_discovery_* metrics (optional).
	Registerer prometheus.Registerer
	Log        logr.Logger
	// LeaderCheckInterval is how often open streams re-check leadership
	// (default 1s).
	LeaderCheckInterval time.Duration
}

// Server is the leader-only snapshot stream of api/discovery/v1. It holds the
// latest snapshot of every scope, pushes full snapshots and deltas to the
// subscribers of each scope, and tracks what every proxy has acked and bound,
// which gates the Gateways' Programmed condition.
type Server struct {
	discoveryv1.UnimplementedDiscoveryServer

	opts        ServerOptions
	log         logr.Logger
	metrics     *serverMetrics
	wireVersion uint32
	maxSend     int

	shutdown     chan struct{}
	shutdownOnce sync.Once

	mu      sync.Mutex
	scopes  map[snapshot.Scope]*published
	conns   map[*conn]struct{}
	nodes   map[string]*conn
	changes chan struct{}
}

// published is one scope's current snapshot in wire form.
type published struct {
	version   string
	keys      []string          // sorted
	bodies    map[string][]byte // key → canonical JSON
	gateways  []snapshot.GatewayRef
	published time.Time
}

// conn is one subscribed proxy stream.
type conn struct {
	nodeID   string
	identity string // SPIFFE ID
	scope    snapshot.Scope
	notify   chan struct{}
	cancel   context.CancelCauseFunc

	// Guarded by Server.mu.
	bound    map[int32]bool
	reported bool // has sent a NodeStatus
	acked    *published
	// rejected is the proxy's NACK of a full snapshot, kept until it acks
	// one: the server does not resend that version, so status reports it.
	rejected *rejection
}

// NewServer builds a Server; Start or Serve runs it.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.SVID == nil || opts.Bundle == nil {
		return nil, errors.New("discovery server needs an SVID source and a trust bundle source")
	}
	if opts.TrustDomain.IsZero() {
		return nil, errors.New("discovery server needs a trust domain")
	}
	if opts.IsLeader == nil {
		return nil, errors.New("discovery server needs an IsLeader function")
	}
	if opts.Addr == "" {
		opts.Addr = names.BindAddress(names.DiscoveryStreamPort)
	}
	if opts.LeaderCheckInterval <= 0 {
		opts.LeaderCheckInterval = time.Second
	}
	s := &Server{
		opts:        opts,
		log:         opts.Log,
		wireVersion: WireVersion,
		maxSend:     MaxServerMessageBytes,
		scopes:      map[snapshot.Scope]*published{},
		conns:       map[*conn]struct{}{},
		nodes:       map[string]*conn{},
		changes:     make(chan struct{}, 1),
		shutdown:    make(chan struct{}),
	}
	s.metrics = newServerMetrics(s)
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// TLSConfig is the server's mTLS configuration: the client must present an
// SVID of the trust domain that chains to the bundle.
func (s *Server) TLSConfig() *tls.Config {
	cfg := tlsconfig.MTLSServerConfig(s.opts.SVID, s.opts.Bundle, tlsconfig.AuthorizeMemberOf(s.opts.TrustDomain))
	cfg.MinVersion = tls.VersionTLS13
	return cfg
}

// GRPCServer builds the gRPC server with mTLS, message size caps and
// keepalives, with this Server registered.
func (s *Server) GRPCServer() *grpc.Server {
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(s.TLSConfig())),
		grpc.MaxRecvMsgSize(MaxClientMessageBytes),
		grpc.MaxSendMsgSize(MaxServerMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
	discoveryv1.RegisterDiscoveryServer(g, s)
	return g
}

// Serve serves on lis until ctx ends; open streams then end with
// UNAVAILABLE so proxies reconnect (to the next leader).
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	stop := context.AfterFunc(ctx, func() { s.shutdownOnce.Do(func() { close(s.shutdown) }) })
	defer stop()
	return ServeGRPC(ctx, s.GRPCServer(), lis)
}

// Start listens on Addr and serves until ctx ends (a controller-runtime
// Runnable; every replica runs it, standbys refuse streams).
func (s *Server) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("discovery stream listener: %w", err)
	}
	s.log.Info("serving discovery stream", "addr", lis.Addr().String())
	return s.Serve(ctx, lis)
}

// NeedLeaderElection is false: standbys serve too, answering "not the leader".
func (s *Server) NeedLeaderElection() bool { return false }

// ServeGRPC serves g on lis until ctx ends, then stops gracefully (at most
// 5s before closing the remaining streams).
func ServeGRPC(ctx context.Context, g *grpc.Server, lis net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- g.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { g.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		g.Stop()
	}
	<-errc
	return nil
}

// Publish replaces the snapshots of all scopes; scopes not listed are
// dropped (their proxies keep their last snapshot). Invalid snapshots are
// skipped, keeping the scope's previous snapshot, and reported in the error.
// Subscribers with a message in flight get the newest snapshot once they
// ack (intermediate rebuilds coalesce).
func (s *Server) Publish(snaps []*snapshot.Snapshot) error {
	now := time.Now()
	next := map[snapshot.Scope]*published{}
	var errs []error
	for _, snap := range snaps {
		if snap == nil {
			continue
		}
		if _, dup := next[snap.Scope]; dup {
			errs = append(errs, fmt.Errorf("scope %s published twice", snap.Scope))
			continue
		}
		p, err := toPublished(snap)
		if err != nil {
			s.metrics.publishErrors.Inc()
			errs = append(errs, fmt.Errorf("scope %s: %w", snap.Scope, err))
			s.mu.Lock()
			if old := s.scopes[snap.Scope]; old != nil {
				next[snap.Scope] = old
			}
			s.mu.Unlock()
			continue
		}
		p.published = now
		next[snap.Scope] = p
	}
	s.mu.Lock()
	changed := false
	for sc, p := range next {
		if old := s.scopes[sc]; old != nil && old.version == p.version {
			next[sc] = old
			continue
		}
		changed = true
	}
	if len(next) != len(s.scopes) {
		changed = true
	}
	s.scopes = next
	if changed {
		for c := range s.conns {
			signal(c.notify)
		}
	}
	s.mu.Unlock()
	s.metrics.publishes.Inc()
	if changed {
		s.signalDataPlane()
	}
	return errors.Join(errs...)
}

// toPublished splits a snapshot into keyed resources and derives the version
// the proxy will compute after reassembling them.
func toPublished(snap *snapshot.Snapshot) (*published, error) {
	res, err := snapshot.Resources(snap)
	if err != nil {
		return nil, err
	}
	assembled, err := snapshot.Assemble(snap.Scope, res)
	if err != nil {
		return nil, err
	}
	version, err := snapshot.Version(assembled)
	if err != nil {
		return nil, err
	}
	p := &published{version: version, bodies: make(map[string][]byte, len(res)), gateways: assembled.Gateways}
	for _, r := range res {
		if _, dup := p.bodies[r.Key]; dup {
			return nil, fmt.Errorf("duplicate resource key %q", r.Key)
		}
		p.bodies[r.Key] = r.Body
		p.keys = append(p.keys, r.Key)
	}
	return p, nil
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *Server) signalDataPlane() { signal(s.changes) }

// DataPlaneChanges delivers a (coalesced) signal whenever a proxy connects,
// disconnects, acks, reports bound ports, or snapshots are published; the
// status writer then re-evaluates GatewayDataPlane. Single consumer.
func (s *Server) DataPlaneChanges() <-chan struct{} { return s.changes }

// GatewayDataPlane reports how many connected proxies serve the Gateway and
// whether it is programmed: at least one proxy serves it, and every
// connected proxy of its scope has acked a snapshot that contains the
// Gateway at generation ≥ generation and has reported that Gateway's ports
// bound. GatewayState tells the details.
func (s *Server) GatewayDataPlane(namespace, name string, generation int64) (proxies int, programmed bool) {
	st := s.GatewayState(namespace, name, generation)
	return st.Proxies, st.Programmed()
}

// scopeOfLocked finds the scope whose current snapshot serves the Gateway,
// preferring its dedicated scope.
func (s *Server) scopeOfLocked(namespace, name string) (snapshot.Scope, bool) {
	ded := snapshot.GatewayScope(namespace, name)
	if p := s.scopes[ded]; p != nil && findGateway(p.gateways, namespace, name) != nil {
		return ded, true
	}
	if p := s.scopes[snapshot.SharedPool()]; p != nil && findGateway(p.gateways, namespace, name) != nil {
		return snapshot.SharedPool(), true
	}
	return snapshot.Scope{}, false
}

func (c *conn) servesLocked(namespace, name string, generation int64) bool {
	if c.acked == nil || !c.reported {
		return false
	}
	g := findGateway(c.acked.gateways, namespace, name)
	if g == nil || g.Generation < generation {
		return false
	}
	for _, p := range g.Ports {
		if !c.bound[p] {
			return false
		}
	}
	return true
}

func findGateway(gws []snapshot.GatewayRef, namespace, name string) *snapshot.GatewayRef {
	for i := range gws {
		if gws[i].Namespace == namespace && gws[i].Name == name {
			return &gws[i]
		}
	}
	return nil
}

// reject counts and returns a status error.
func (s *Server) reject(code codes.Code, format string, args ...any) error {
	s.metrics.rejections.WithLabelValues(code.String()).Inc()
	return status.Errorf(code, format, args...)
}

// peerIdentity returns the verified SPIFFE ID of the stream's peer.
func peerIdentity(ctx context.Context) (spiffeid.ID, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return spiffeid.ID{}, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return spiffeid.ID{}, errors.New("no client certificate")
	}
	return x509svid.IDFromCert(info.State.PeerCertificates[0])
}

// Stream serves one proxy: Subscribe, then snapshots out and acks in.
func (s *Server) Stream(stream grpc.BidiStreamingServer[discoveryv1.ClientMessage, discoveryv1.ServerMessage]) error {
	if !s.opts.IsLeader() {
		return s.reject(codes.FailedPrecondition, "%s: this controller replica is a standby; dial the %s Service", NotLeaderMessage, names.DiscoveryStreamServiceName)
	}
	id, err := peerIdentity(stream.Context())
	if err != nil {
		return s.reject(codes.Unauthenticated, "peer identity: %v", err)
	}
	ns, sa, err := ServiceAccountFromID(id)
	if err != nil {
		return s.reject(codes.PermissionDenied, "%v", err)
	}
	first, err := recvFirst(stream, subscribeTimeout)
	if err != nil {
		return err
	}
	sub := first.GetSubscribe()
	if sub == nil {
		return s.reject(codes.InvalidArgument, "the first message must be a Subscribe")
	}
	if sub.GetWireVersion() != s.wireVersion {
		return s.reject(codes.FailedPrecondition, "%s: client speaks wire version %d, server speaks %d", WireMismatchMessage, sub.GetWireVersion(), s.wireVersion)
	}
	if sub.GetNodeId() == "" {
		return s.reject(codes.InvalidArgument, "node_id is required")
	}
	scope, err := ScopeFromProto(sub.GetScope())
	if err != nil {
		return s.reject(codes.InvalidArgument, "%v", err)
	}
	if err := s.opts.Authorizer.Authorize(ns, sa, scope); err != nil {
		s.metrics.rejections.WithLabelValues(status.Code(err).String()).Inc()
		return err
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	c := &conn{nodeID: sub.GetNodeId(), identity: id.String(), scope: scope, notify: make(chan struct{}, 1), cancel: cancel}
	if err := s.register(c); err != nil {
		return err
	}
	defer s.unregister(c)
	log := s.log.WithValues("node", c.nodeID, "identity", c.identity, "scope", scope.String())
	log.V(1).Info("proxy subscribed")
	return s.serveConn(ctx, stream, c, log)
}

// subscribeTimeout bounds the wait for a stream's Subscribe.
const subscribeTimeout = 10 * time.Second

func recvFirst(stream grpc.BidiStreamingServer[discoveryv1.ClientMessage, discoveryv1.ServerMessage], timeout time.Duration) (*discoveryv1.ClientMessage, error) {
	type result struct {
		m   *discoveryv1.ClientMessage
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := stream.Recv()
		ch <- result{m, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-t.C:
		// Returning ends the stream, which unblocks the Recv.
		return nil, status.Errorf(codes.DeadlineExceeded, "no Subscribe within %s", timeout)
	}
}

func (s *Server) register(c *conn) error {
	s.mu.Lock()
	old := s.nodes[c.nodeID]
	if old != nil && old.identity != c.identity {
		s.mu.Unlock()
		return s.reject(codes.AlreadyExists, "node_id %q is held by another identity", c.nodeID)
	}
	if old != nil {
		// The same proxy reconnected before its old stream was noticed dead.
		old.cancel(status.Error(codes.Aborted, "replaced by a newer stream of the same node"))
		delete(s.conns, old)
	}
	s.nodes[c.nodeID] = c
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.signalDataPlane()
	return nil
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.nodes[c.nodeID] == c {
		delete(s.nodes, c.nodeID)
	}
	s.mu.Unlock()
	s.signalDataPlane()
}

// inflight is the one un-acked message of a stream.
type inflight struct {
	nonce string
	full  bool
	pub   *published
}

type streamState struct {
	baseline    *published // what the proxy holds (last acked); nil → next is full
	pending     *inflight
	nonce       uint64
	nackVersion string // a full snapshot of this version was nacked: wait for a new one
}

func (s *Server) serveConn(ctx context.Context, stream grpc.BidiStreamingServer[discoveryv1.ClientMessage, discoveryv1.ServerMessage], c *conn, log logr.Logger) error {
	in := make(chan *discoveryv1.ClientMessage)
	recvErr := make(chan error, 1)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case in <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	tick := time.NewTicker(s.opts.LeaderCheckInterval)
	defer tick.Stop()
	st := &streamState{}
	for {
		if st.pending == nil {
			if err := s.sendNext(stream, c, st); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); cause != nil && status.Code(cause) != codes.Unknown {
				return cause
			}
			return ctx.Err()
		case <-c.notify:
		case <-s.shutdown:
			return status.Error(codes.Unavailable, "the discovery server is shutting down")
		case <-tick.C:
			if !s.opts.IsLeader() {
				return s.reject(codes.FailedPrecondition, "%s: this controller replica lost the lease", NotLeaderMessage)
			}
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case m := <-in:
			if err := s.handleClientMessage(c, st, m, log); err != nil {
				return err
			}
		}
	}
}

func (s *Server) handleClientMessage(c *conn, st *streamState, m *discoveryv1.ClientMessage, log logr.Logger) error {
	switch msg := m.GetMsg().(type) {
	case *discoveryv1.ClientMessage_Ack:
		p := st.pending
		if p == nil || msg.Ack.GetNonce() != p.nonce || msg.Ack.GetVersion() != p.pub.version {
			s.metrics.staleAcks.Inc()
			return nil
		}
		st.pending, st.baseline, st.nackVersion = nil, p.pub, ""
		s.metrics.acks.Inc()
		s.mu.Lock()
		c.acked, c.rejected = p.pub, nil
		s.mu.Unlock()
		s.signalDataPlane()
	case *discoveryv1.ClientMessage_Nack:
		p := st.pending
		if p == nil || msg.Nack.GetNonce() != p.nonce {
			s.metrics.staleAcks.Inc()
			return nil
		}
		s.metrics.nacks.WithLabelValues(c.scope.String()).Inc()
		log.Info("proxy rejected a snapshot; its next snapshot is full", "version", p.pub.version, "full", p.full, "detail", msg.Nack.GetDetail())
		st.pending, st.baseline = nil, nil
		if p.full {
			// Final for this version (a rejected delta is retried at once
			// as a full snapshot, so only this one is reported).
			st.nackVersion = p.pub.version
			s.mu.Lock()
			c.rejected = &rejection{pub: p.pub, detail: msg.Nack.GetDetail()}
			s.mu.Unlock()
			s.signalDataPlane()
		}
	case *discoveryv1.ClientMessage_NodeStatus:
		bound := make(map[int32]bool, len(msg.NodeStatus.GetBoundPorts()))
		for _, p := range msg.NodeStatus.GetBoundPorts() {
			bound[p] = true
		}
		s.mu.Lock()
		c.bound, c.reported = bound, true
		s.mu.Unlock()
		s.signalDataPlane()
	case *discoveryv1.ClientMessage_Subscribe:
		return s.reject(codes.InvalidArgument, "Subscribe may only be sent once")
	default:
		return s.reject(codes.InvalidArgument, "unknown client message")
	}
	return nil
}

// sendNext sends the scope's current snapshot when the proxy does not hold
// it: full when there is no baseline, else a delta against the baseline.
func (s *Server) sendNext(stream grpc.BidiStreamingServer[discoveryv1.ClientMessage, discoveryv1.ServerMessage], c *conn, st *streamState) error {
	s.mu.Lock()
	cur := s.scopes[c.scope]
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	msg := &discoveryv1.Snapshot{Version: cur.version}
	if st.baseline == nil {
		if cur.version == st.nackVersion {
			return nil
		}
		msg.Full = true
		for _, k := range cur.keys {
			msg.Resources = append(msg.Resources, &discoveryv1.Resource{Key: k, Body: cur.bodies[k]})
		}
	} else {
		if cur.version == st.baseline.version {
			return nil
		}
		msg.Resources, msg.Removed = delta(st.baseline, cur)
	}
	st.nonce++
	msg.Nonce = strconv.FormatUint(st.nonce, 10)
	out := &discoveryv1.ServerMessage{Msg: &discoveryv1.ServerMessage_Snapshot{Snapshot: msg}}
	if size := proto.Size(out); size > s.maxSend {
		// Never send what the proxy must refuse: keep its current state and
		// wait for a smaller snapshot.
		s.metrics.oversize.Inc()
		s.log.Error(nil, "snapshot message exceeds the size cap; not sent", "scope", c.scope.String(), "bytes", size, "cap", s.maxSend, "full", msg.Full)
		if st.baseline == nil {
			st.nackVersion = cur.version
		} else {
			st.baseline, st.nackVersion = nil, cur.version
		}
		return nil
	}
	if err := stream.Send(out); err != nil {
		return err
	}
	kind := "delta"
	if msg.Full {
		kind = "full"
	}
	s.metrics.sent.WithLabelValues(kind).Inc()
	st.pending = &inflight{nonce: msg.Nonce, full: msg.Full, pub: cur}
	return nil
}

// delta lists the resources of cur that are new or changed since base, and
// the keys base has that cur lacks, both sorted.
func delta(base, cur *published) (upserts []*discoveryv1.Resource, removed []string) {
	for _, k := range cur.keys {
		if old, ok := base.bodies[k]; ok && bytes.Equal(old, cur.bodies[k]) {
			continue
		}
		upserts = append(upserts, &discoveryv1.Resource{Key: k, Body: cur.bodies[k]})
	}
	for _, k := range base.keys {
		if _, ok := cur.bodies[k]; !ok {
			removed = append(removed, k)
		}
	}
	sort.Strings(removed)
	return upserts, removed
}
