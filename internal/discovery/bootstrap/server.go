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

package bootstrap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/identity"
	"github.com/coxswain-go/coxswain/internal/names"
)

// Reviewer authenticates a ServiceAccount token (*identity.TokenReviewer).
// A token it does not accept yields an error wrapping
// identity.ErrUnauthenticated.
type Reviewer interface {
	Review(ctx context.Context, token string) (namespace, serviceAccount string, err error)
}

// Options configures the bootstrap server.
type Options struct {
	// Addr is where Start listens (":50052" by default).
	Addr string
	// CA signs the SVIDs.
	CA *identity.CA
	// SVID is the server certificate (the controller's ServingSVID).
	SVID x509svid.Source
	// Reviewer checks the token (an *identity.TokenReviewer with audience
	// names.TokenAudience).
	Reviewer Reviewer
	// Authorizer decides which ServiceAccounts are Coxswain-managed for
	// which scope; others get PERMISSION_DENIED.
	Authorizer *discovery.Authorizer
	// TTL of issued SVIDs (identity.DefaultSVIDTTL when zero).
	TTL time.Duration
	// UpstreamEndpoint and ServerServiceAccount are returned to the proxy
	// for information.
	UpstreamEndpoint     string
	ServerServiceAccount string
	// Recorder records BootstrapRejected Events (optional). They are about
	// the ServiceAccount when the token named one, else about Regarding.
	Recorder  events.EventRecorder
	Regarding *corev1.ObjectReference
	// Registerer receives coxswain_discovery_bootstrap_total (optional).
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Server issues SVIDs over server-authenticated TLS. Every replica runs it.
type Server struct {
	discoveryv1.UnimplementedDiscoveryServer
	opts    Options
	results *prometheus.CounterVec
}

// NewServer checks the options.
func NewServer(opts Options) (*Server, error) {
	if opts.CA == nil || opts.SVID == nil || opts.Reviewer == nil {
		return nil, errors.New("bootstrap server needs a CA, an SVID source and a token reviewer")
	}
	if opts.Addr == "" {
		opts.Addr = names.BindAddress(names.DiscoveryBootstrapPort)
	}
	b := &Server{opts: opts, results: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coxswain_discovery_bootstrap_total",
		Help: "SVID bootstrap requests, by result (issued or the gRPC code of the refusal).",
	}, []string{"result"})}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(b.results); err != nil {
			return nil, fmt.Errorf("registering the bootstrap metrics: %w", err)
		}
	}
	return b, nil
}

// TLSConfig presents the controller SVID; clients are not asked for a
// certificate (they have none yet).
func (b *Server) TLSConfig() *tls.Config {
	cfg := tlsconfig.TLSServerConfig(b.opts.SVID)
	cfg.MinVersion = tls.VersionTLS13
	return cfg
}

// GRPCServer builds the gRPC server with this service registered.
func (b *Server) GRPCServer() *grpc.Server {
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(b.TLSConfig())),
		grpc.MaxRecvMsgSize(discovery.MaxClientMessageBytes),
		grpc.MaxSendMsgSize(discovery.MaxClientMessageBytes),
	)
	discoveryv1.RegisterDiscoveryServer(g, b)
	return g
}

// Serve serves on lis until ctx ends.
func (b *Server) Serve(ctx context.Context, lis net.Listener) error {
	return discovery.ServeGRPC(ctx, b.GRPCServer(), lis)
}

// Start listens on Addr and serves until ctx ends.
func (b *Server) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", b.opts.Addr)
	if err != nil {
		return fmt.Errorf("discovery bootstrap listener: %w", err)
	}
	b.opts.Log.Info("serving discovery bootstrap", "addr", lis.Addr().String())
	return b.Serve(ctx, lis)
}

// NeedLeaderElection is false: every replica bootstraps proxies.
func (b *Server) NeedLeaderElection() bool { return false }
