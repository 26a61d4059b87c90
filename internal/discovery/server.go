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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

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
	richest     snapshot.Layout // the richest resource layout it serves
	maxSend     int

	shutdown     chan struct{}
	shutdownOnce sync.Once

	mu     sync.Mutex
	scopes map[snapshot.Scope]*published // the published snapshots (server_publish.go)
	conns  map[*conn]struct{}            // the subscribed streams (server_conn.go)
	nodes  map[string]*conn              // the same, by node id

	// codecs remember each scope's encoded virtual hosts and decoded
	// resources between publishes (toPublished); only Publish uses them.
	codecsMu sync.Mutex
	codecs   map[snapshot.Scope]*scopeCodec
	// changes feeds DataPlaneChanges (gatewaystate.go).
	changes chan struct{}
	// dataPlaneEpoch counts the changes signalled on changes
	// (DataPlaneEpoch).
	dataPlaneEpoch atomic.Uint64
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
		richest:     RichestLayout,
		maxSend:     MaxServerMessageBytes,
		scopes:      map[snapshot.Scope]*published{},
		conns:       map[*conn]struct{}{},
		nodes:       map[string]*conn{},
		codecs:      map[snapshot.Scope]*scopeCodec{},
		changes:     make(chan struct{}, 1),
		shutdown:    make(chan struct{}),
	}
	s.metrics = newServerMetrics(s)
	if opts.Registerer != nil {
		if err := s.metrics.register(opts.Registerer); err != nil {
			return nil, fmt.Errorf("registering the discovery server metrics: %w", err)
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

// signal does a non-blocking send on a one-slot channel: wake-ups coalesce.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
