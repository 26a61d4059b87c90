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

package identity

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/names"
)

// ReasonBootstrapRejected is the reason of the Event a refused bootstrap
// records.
const ReasonBootstrapRejected = "BootstrapRejected"

// Reviewer authenticates a ServiceAccount token (*TokenReviewer).
type Reviewer interface {
	Review(ctx context.Context, token string) (namespace, serviceAccount string, err error)
}

// BootstrapOptions configures the bootstrap server.
type BootstrapOptions struct {
	// Addr is where Start listens (":50052" by default).
	Addr string
	// CA signs the SVIDs.
	CA *CA
	// SVID is the server certificate (the controller's ServingSVID).
	SVID x509svid.Source
	// Reviewer checks the token (a *TokenReviewer with audience
	// names.TokenAudience).
	Reviewer Reviewer
	// Authorizer decides which ServiceAccounts are Coxswain-managed for
	// which scope; others get PERMISSION_DENIED.
	Authorizer *discovery.Authorizer
	// TTL of issued SVIDs (DefaultSVIDTTL when zero).
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

// BootstrapServer issues SVIDs over server-authenticated TLS. Every
// replica runs it.
type BootstrapServer struct {
	discoveryv1.UnimplementedDiscoveryServer
	opts    BootstrapOptions
	results *prometheus.CounterVec
}

// NewBootstrapServer checks the options.
func NewBootstrapServer(opts BootstrapOptions) (*BootstrapServer, error) {
	if opts.CA == nil || opts.SVID == nil || opts.Reviewer == nil {
		return nil, errors.New("bootstrap server needs a CA, an SVID source and a token reviewer")
	}
	if opts.Addr == "" {
		opts.Addr = names.BindAddress(names.DiscoveryBootstrapPort)
	}
	b := &BootstrapServer{opts: opts, results: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coxswain_discovery_bootstrap_total",
		Help: "SVID bootstrap requests, by result (issued or the gRPC code of the refusal).",
	}, []string{"result"})}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(b.results); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// TLSConfig presents the controller SVID; clients are not asked for a
// certificate (they have none yet).
func (b *BootstrapServer) TLSConfig() *tls.Config {
	cfg := tlsconfig.TLSServerConfig(b.opts.SVID)
	cfg.MinVersion = tls.VersionTLS13
	return cfg
}

// GRPCServer builds the gRPC server with this service registered.
func (b *BootstrapServer) GRPCServer() *grpc.Server {
	g := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(b.TLSConfig())),
		grpc.MaxRecvMsgSize(discovery.MaxClientMessageBytes),
		grpc.MaxSendMsgSize(discovery.MaxClientMessageBytes),
	)
	discoveryv1.RegisterDiscoveryServer(g, b)
	return g
}

// Serve serves on lis until ctx ends.
func (b *BootstrapServer) Serve(ctx context.Context, lis net.Listener) error {
	return discovery.ServeGRPC(ctx, b.GRPCServer(), lis)
}

// Start listens on Addr and serves until ctx ends.
func (b *BootstrapServer) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", b.opts.Addr)
	if err != nil {
		return fmt.Errorf("discovery bootstrap listener: %w", err)
	}
	b.opts.Log.Info("serving discovery bootstrap", "addr", lis.Addr().String())
	return b.Serve(ctx, lis)
}

// NeedLeaderElection is false: every replica bootstraps proxies.
func (b *BootstrapServer) NeedLeaderElection() bool { return false }

// Bootstrap implements the unary RPC.
func (b *BootstrapServer) Bootstrap(ctx context.Context, req *discoveryv1.BootstrapRequest) (*discoveryv1.BootstrapResponse, error) {
	resp, ns, sa, err := b.bootstrap(ctx, req)
	if err != nil {
		code := status.Code(err)
		b.results.WithLabelValues(code.String()).Inc()
		if code == codes.Unauthenticated || code == codes.PermissionDenied {
			b.recordRejection(ns, sa, err)
		}
		b.opts.Log.Info("refused a bootstrap", "serviceAccount", ns+"/"+sa, "err", err.Error())
		return nil, err
	}
	b.results.WithLabelValues("issued").Inc()
	return resp, nil
}

func (b *BootstrapServer) bootstrap(ctx context.Context, req *discoveryv1.BootstrapRequest) (resp *discoveryv1.BootstrapResponse, ns, sa string, err error) {
	if req.GetWireVersion() != discovery.WireVersion {
		return nil, "", "", status.Errorf(codes.FailedPrecondition, "%s: client speaks wire version %d, server speaks %d",
			discovery.WireMismatchMessage, req.GetWireVersion(), discovery.WireVersion)
	}
	scope, err := discovery.ScopeFromProto(req.GetScope())
	if err != nil {
		return nil, "", "", status.Errorf(codes.InvalidArgument, "%v", err)
	}
	ns, sa, err = b.opts.Reviewer.Review(ctx, req.GetSaToken())
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			return nil, "", "", status.Errorf(codes.Unauthenticated, "%v", err)
		}
		return nil, "", "", status.Errorf(codes.Unavailable, "checking the token: %v", err)
	}
	if err := b.opts.Authorizer.Authorize(ns, sa, scope); err != nil {
		return nil, ns, sa, err
	}
	block, _ := pem.Decode([]byte(req.GetCsrPem()))
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, ns, sa, status.Error(codes.InvalidArgument, "csr_pem holds no CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, ns, sa, status.Errorf(codes.InvalidArgument, "csr_pem: %v", err)
	}
	id, err := discovery.ServiceAccountID(b.opts.CA.TrustDomain(), ns, sa)
	if err != nil {
		return nil, ns, sa, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	certs, err := b.opts.CA.Sign(csr, id, b.opts.TTL)
	if err != nil {
		return nil, ns, sa, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	return &discoveryv1.BootstrapResponse{
		SvidCertPem:      string(EncodeCerts(certs)),
		TrustBundlePem:   string(b.opts.CA.BundlePEM()),
		NotAfterUnix:     certs[0].NotAfter.Unix(),
		UpstreamEndpoint: b.opts.UpstreamEndpoint,
		ExpectedServerSa: b.opts.ServerServiceAccount,
	}, ns, sa, nil
}

func (b *BootstrapServer) recordRejection(ns, sa string, err error) {
	if b.opts.Recorder == nil {
		return
	}
	regarding := b.opts.Regarding
	if ns != "" && sa != "" {
		regarding = &corev1.ObjectReference{APIVersion: "v1", Kind: "ServiceAccount", Namespace: ns, Name: sa}
	}
	if regarding == nil {
		return
	}
	b.opts.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, ReasonBootstrapRejected, "Bootstrap",
		"discovery bootstrap refused: %s", status.Convert(err).Message())
}
