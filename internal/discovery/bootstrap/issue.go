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
	"crypto/x509"
	"encoding/pem"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/discovery"
	"github.com/coxswain-go/coxswain/internal/identity"
)

// ReasonRejected is the reason of the Event a refused bootstrap records.
const ReasonRejected = "BootstrapRejected"

// Bootstrap implements the unary RPC.
func (b *Server) Bootstrap(ctx context.Context, req *discoveryv1.BootstrapRequest) (*discoveryv1.BootstrapResponse, error) {
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

func (b *Server) bootstrap(ctx context.Context, req *discoveryv1.BootstrapRequest) (resp *discoveryv1.BootstrapResponse, ns, sa string, err error) {
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
		if errors.Is(err, identity.ErrUnauthenticated) {
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
		SvidCertPem:      string(identity.EncodeCerts(certs)),
		TrustBundlePem:   string(b.opts.CA.BundlePEM()),
		NotAfterUnix:     certs[0].NotAfter.Unix(),
		UpstreamEndpoint: b.opts.UpstreamEndpoint,
		ExpectedServerSa: b.opts.ServerServiceAccount,
	}, ns, sa, nil
}

func (b *Server) recordRejection(ns, sa string, err error) {
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
	b.opts.Recorder.Eventf(regarding, nil, corev1.EventTypeWarning, ReasonRejected, "Bootstrap",
		"discovery bootstrap refused: %s", status.Convert(err).Message())
}
